/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of pfi log's reader (measure/logread.h) on the real fixture logs: every framework's
 * series and steady summary within 1% of the rates the log itself states (the numbers below
 * are copied from the fixture lines), the two Hugging Face shapes (no banner; Transformers v5
 * string values), untimed lines counted, bad input refused. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "measure/logread.h"
#include "support/files.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures/logs/"
#endif

static void read_ok(const char *name, const pfi_logread_cfg *c, pfi_logread *r)
{
    char path[512];
    snprintf(path, sizeof path, "%s%s", FIXTURES, name);
    pfi_err e = {0};
    int rc = pfi_logread_file(path, c, r, &e);
    if (rc != PFI_OK)
        fail_msg("%s: %s", name, e.msg);
}

static double median_of(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Every point and the median within 1% of the stated rates. */
static void assert_series(const pfi_logread *r, const double *want, int n)
{
    assert_int_equal(r->n, n);
    double v[64];
    for (int i = 0; i < n; i++) {
        if (!(fabs(r->pts[i].rate - want[i]) <= 0.01 * want[i]))
            fail_msg("point %d: %g, the log states %g", i, r->pts[i].rate, want[i]);
        v[i] = want[i];
    }
    assert_int_equal(r->win_first, 0); /* too few lines for MSER to cut anything */
    double m = median_of(v, n);
    if (!(fabs(r->median - m) <= 0.01 * m))
        fail_msg("median %g, the log's %g", r->median, m);
}

static void test_megatron(void **state)
{
    pfi_logread_cfg c = {.parse = {.seq_len = 2048}};
    pfi_logread r;
    read_ok("megatron.log", &c, &r);
    const double ms[] = {86545.2, 87871.6, 89474.8, 89075.2};
    double want[4];
    for (int i = 0; i < 4; i++)
        want[i] = 1024 * 2048 * 1000.0 / ms[i];
    assert_int_equal(r.format, PFI_LOG_MEGATRON);
    assert_true(r.in_tokens);
    assert_string_equal(r.unit, "tokens/s");
    assert_series(&r, want, 4);
    assert_true(r.lo <= r.mean && r.mean <= r.hi);
    pfi_logread_free(&r);
    /* Without a sequence length: samples/s, said. */
    pfi_logread_cfg c2 = {0};
    read_ok("megatron-core.log", &c2, &r);
    const double ms2[] = {5361.6, 5470.7, 5829.9};
    for (int i = 0; i < 3; i++)
        want[i] = 128 * 1000.0 / ms2[i];
    assert_false(r.in_tokens);
    assert_string_equal(r.unit, "samples/s");
    assert_series(&r, want, 3);
    pfi_logread_free(&r);
}

static void test_torchtitan(void **state)
{
    const double tps[] = {7282, 7334, 7313, 7282, 7322, 7309, 7272, 7304};
    double want[8];
    pfi_logread_cfg c = {0};
    pfi_logread r;
    read_ok("torchtitan.log", &c, &r);
    assert_string_equal(r.unit, "tokens/s per GPU");
    assert_series(&r, tps, 8);
    pfi_logread_free(&r);
    c.gpus = 8;
    read_ok("torchtitan.log", &c, &r);
    for (int i = 0; i < 8; i++)
        want[i] = 8 * tps[i];
    assert_string_equal(r.unit, "tokens/s");
    assert_series(&r, want, 8);
    pfi_logread_free(&r);
}

/* A run from its start: step 1 (595 tps, the warm-up in its interval) is counted warm-up,
 * not averaged in (the summary's mean of these lines was 5,170.2 with it, 6,314 without). */
static void test_torchtitan_start(void **state)
{
    const double tps[] = {6344, 6321, 6300, 6291};
    pfi_logread_cfg c = {0};
    pfi_logread r;
    read_ok("torchtitan-start.log", &c, &r);
    assert_series(&r, tps, 4);
    assert_int_equal(r.warmup, 1);
    assert_int_equal(r.untimed, 0);
    pfi_logread_free(&r);

    /* only step 1 yet: no throughput, and the error says the one line was warm-up */
    char path[] = "/tmp/pfi-logread-XXXXXX";
    FILE *f = pfi_test_mkstemp(path);
    assert_int_equal(pfi_test_copy_lines(f, FIXTURES "torchtitan-start.log", 1, NULL), 1);
    fclose(f);
    pfi_err e = {0};
    assert_int_equal(pfi_logread_file(path, &c, &r, &e), PFI_EINVAL);
    unlink(path);
    assert_non_null(strstr(e.msg, "1 lines read, 0 progress lines without a usable time, 1 warm-up (format torchtitan"));
}

/* Megatron-DeepSpeed from "[before the start of training step]": iteration 1 (4,220.8 ms)
 * warm-up; iteration 2 too, since at log interval 1 the line numbers cannot tell this loop,
 * which resets its timer at every line, from Megatron Core >= 0.16's, which does not after
 * the first (parse_megatron.c); iteration 3 read, in tokens/s from the line's actual seqlen. */
static void test_megatron_start(void **state)
{
    const double want[] = {32 * 2048 * 1000 / 1250.2};
    pfi_logread_cfg c = {0};
    pfi_logread r;
    read_ok("megatron-deepspeed-start.log", &c, &r);
    assert_string_equal(r.unit, "tokens/s");
    assert_series(&r, want, 1);
    assert_int_equal(r.warmup, 2);
    assert_int_equal(r.untimed, 0);
    pfi_logread_free(&r);
}

static void test_hf_banner(void **state)
{
    /* Batch 10 from the banner; the bars state 5.01 and 5.97 s/it (the third is cut). */
    pfi_logread_cfg c = {.parse = {.seq_len = 512}};
    pfi_logread r;
    read_ok("hf.log", &c, &r);
    const double want[] = {10 * 512 / 5.01, 10 * 512 / 5.97};
    assert_int_equal(r.format, PFI_LOG_HF);
    assert_series(&r, want, 2);
    assert_true(isnan(r.lo)); /* no CI from 2 points */
    pfi_logread_free(&r);
}

static void test_hf_no_banner(void **state)
{
    /* No "Running training" banner: detected from the bars (no description) and the dict.
     * The fork's per-step dict (56.162 samples/s over 0.641 s: a batch of 36) is a point too. */
    pfi_logread_cfg c = {.parse = {.samples_per_step = 36, .seq_len = 512}};
    pfi_logread r;
    read_ok("hf-steps.log", &c, &r);
    const double want[] = {1.49 * 36 * 512, 1.48 * 36 * 512, 56.162 * 512,
                           1.47 * 36 * 512, 1.45 * 36 * 512, 1.43 * 36 * 512};
    assert_int_equal(r.format, PFI_LOG_HF);
    assert_series(&r, want, 6);
    pfi_logread_free(&r);
    /* Without a batch size the bars stay in steps/s and the dict's samples/s are dropped,
     * counted. */
    pfi_logread_cfg c2 = {0};
    read_ok("hf-steps.log", &c2, &r);
    assert_string_equal(r.unit, "steps/s");
    assert_int_equal(r.n, 5);
    assert_int_equal(r.other_unit, 1);
    pfi_logread_free(&r);
}

static void test_hf_v5_strings(void **state)
{
    /* Transformers v5 quotes its metrics: the closing summary gives 6.486 samples/s at 0.203
     * steps/s, so a batch of 32; the bar's 4.92 s/it is 32 / 4.92 samples/s. */
    pfi_logread_cfg c = {0};
    pfi_logread r;
    read_ok("hf-v5.log", &c, &r);
    const double want[] = {32 / 4.92};
    assert_int_equal(r.format, PFI_LOG_HF);
    assert_string_equal(r.unit, "samples/s");
    assert_series(&r, want, 1);
    assert_true(fabs(r.summary_rate - 6.486) < 1e-9);
    assert_string_equal(r.summary_unit, "samples/s");
    assert_true(fabs(r.median - 6.486) <= 0.01 * 6.486); /* the bar agrees with the summary */
    pfi_logread_free(&r);
    c.parse.seq_len = 1024;
    read_ok("hf-v5.log", &c, &r);
    assert_true(r.in_tokens);
    assert_true(fabs(r.median - 32 * 1024 / 4.92) <= 0.01 * 32 * 1024 / 4.92);
    assert_true(fabs(r.summary_rate - 6.486 * 1024) < 1e-6);
    pfi_logread_free(&r);
}

/* trainer.train(); trainer.evaluate(): the evaluation bar drawn after the closing dict (67
 * batches at 31.00 it/s, forward only) is not training; before, it was a point of 31.00 x 16
 * x 128 = 63,488 tokens/s beside the training's ~57,900, and on a shorter fine-tune the whole
 * steady window.  The training bar's closing redraw (534/534 at 27.22 it/s) still counts. */
static void test_hf_final_eval(void **state)
{
    pfi_logread_cfg c = {.parse = {.seq_len = 128}};
    pfi_logread r;
    read_ok("hf-final-eval.log", &c, &r);
    const double want[] = {28.30 * 16 * 128, 28.21 * 16 * 128, 27.22 * 16 * 128};
    assert_int_equal(r.format, PFI_LOG_HF);
    assert_series(&r, want, 3);
    assert_int_equal(r.pts[2].line, 6);
    pfi_logread_free(&r);
}

static void test_deepspeed(void **state)
{
    const double want[] = {159.628891629629,   145.0889530760849,  157.80592669930536,
                           155.10475468488542, 155.01088859630886, 155.14401867030702};
    pfi_logread_cfg c = {0};
    pfi_logread r;
    read_ok("deepspeed.log", &c, &r);
    assert_int_equal(r.format, PFI_LOG_DEEPSPEED);
    assert_series(&r, want, 6);
    pfi_logread_free(&r);
    /* The older running average: 10 steps between the averages 83.486 (step 40) and 83.738
     * (step 50); the first line has nothing to difference with and is counted untimed. */
    read_ok("deepspeed-old.log", &c, &r);
    const double dt = 50 / 83.73838805358588 - 40 / 83.48609168106144;
    const double w2[] = {10 / dt};
    assert_series(&r, w2, 1);
    assert_int_equal(r.untimed, 1);
    pfi_logread_free(&r);
}

/* Megatron-DeepSpeed and GPT-NeoX print DeepSpeed's timer line beside Megatron's iteration
 * line; the timer line came first in both fixtures and was the series: 245,981 tokens/s
 * (CurrSamplesPerSec, the engine's forward..step only) for a job that ran at 218,251 (768
 * samples of 4096 tokens per 14.2875 and 14.5414 s, the stamps' 14.54 s apart agreeing). */
static void test_megatron_over_deepspeed(void **state)
{
    pfi_logread_cfg c = {0};
    pfi_logread r;
    read_ok("megatron-deepspeed.log", &c, &r);
    const double want[] = {768 * 4096 / 14.2875, 768 * 4096 / 14.5414};
    assert_int_equal(r.format, PFI_LOG_MEGATRON);
    assert_string_equal(r.unit, "tokens/s");
    assert_series(&r, want, 2);
    assert_int_equal(r.other_unit, 0);
    pfi_logread_free(&r);
    pfi_logread_cfg neox = {.parse = {.seq_len = 2048}};
    read_ok("gpt-neox.log", &neox, &r);
    const double w2[] = {7.799 * 2048};
    assert_int_equal(r.format, PFI_LOG_MEGATRON);
    assert_series(&r, w2, 1);
    pfi_logread_free(&r);
}

static void test_nanogpt(void **state)
{
    const double ms[] = {33785.52, 33798.82, 33770.99, 33695.61, 33648.24, 33637.29};
    double want[6];
    for (int i = 0; i < 6; i++)
        want[i] = 262144 * 1000.0 / ms[i];
    pfi_logread_cfg c = {0};
    pfi_logread r;
    read_ok("nanogpt.log", &c, &r);
    assert_int_equal(r.format, PFI_LOG_NANOGPT);
    assert_true(r.in_tokens);
    assert_series(&r, want, 6);
    pfi_logread_free(&r);
}

static void test_llmc(void **state)
{
    const double want[] = {91886, 91886, 91886, 91887, 91890};
    pfi_logread_cfg c = {0};
    pfi_logread r;
    read_ok("llmc.log", &c, &r);
    assert_int_equal(r.format, PFI_LOG_LLMC);
    assert_series(&r, want, 5);
    pfi_logread_free(&r);
}

static void test_lightning(void **state)
{
    const double its[] = {2.11, 2.11, 2.12, 2.12};
    double want[4];
    for (int i = 0; i < 4; i++)
        want[i] = its[i] * 4096;
    pfi_logread_cfg c = {.parse = {.tokens_per_step = 4096}};
    pfi_logread r;
    read_ok("lightning.log", &c, &r);
    assert_int_equal(r.format, PFI_LOG_LIGHTNING);
    assert_series(&r, want, 4);
    pfi_logread_free(&r);
    /* A bar before its first rate ("?it/s") is counted, not dropped silently. */
    read_ok("lightning-epochs.log", &c, &r);
    assert_int_equal(r.untimed, 1);
    pfi_logread_free(&r);
}

static void test_bad_input(void **state)
{
    pfi_logread_cfg c = {0};
    pfi_logread r;
    pfi_err e = {0};
    assert_int_equal(pfi_logread_file(FIXTURES "garbage.log", &c, &r, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "no throughput"));
    /* The way to read a format pfi does not know is named (it was not: nanotron, MaxText,
     * JSON-lines loggers all ended at "--log-format names one"). */
    assert_non_null(strstr(e.msg, "--throughput-regex RE --unit U reads a format pfi does not know"));
    assert_null(strstr(e.msg, "gzip"));
    assert_int_equal(pfi_logread_file(FIXTURES "no-such.log", &c, &r, &e), PFI_ENOENT);
    pfi_logread_cfg rc = {.parse = {.regex = "zz: ([0-9]+)", .regex_unit = PFI_RU_TOKENS_PER_S}};
    assert_int_equal(pfi_logread_file(FIXTURES "garbage.log", &rc, &r, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "(format regex; no line matched --throughput-regex"));
}

/* A compressed log is said to be one (it said only "no throughput ... 1 lines read"), with
 * how to read it: a file by name, a stream by piping it through zcat. */
static void test_gzip(void **state)
{
    /* gzip -n of a Megatron iteration line */
    static const unsigned char gz[] = {
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x45, 0xcc, 0xb1, 0x0a, 0x80,
        0x20, 0x14, 0x46, 0xe1, 0xbd, 0xa7, 0xf8, 0xc7, 0x5a, 0xca, 0x2e, 0x1a, 0xe1, 0xdb, 0x68,
        0x5d, 0x4a, 0xd0, 0x94, 0x74, 0x0a, 0x1f, 0x3e, 0x69, 0xe9, 0xcc, 0x1f, 0x07, 0xae, 0xf0,
        0x6d, 0x8a, 0x8b, 0x17, 0xbe, 0x66, 0xa2, 0x09, 0x20, 0x25, 0x5a, 0xa8, 0x60, 0x6f, 0x52,
        0xe6, 0x1d, 0xc5, 0x05, 0x46, 0xe2, 0x1b, 0x3f, 0xef, 0x43, 0x1e, 0x34, 0xd6, 0x45, 0x49,
        0x35, 0x52, 0xa3, 0x87, 0x8f, 0xd6, 0x78, 0x58, 0x53, 0xb6, 0x13, 0xd9, 0x3d, 0xac, 0xdb,
        0x4d, 0x90, 0x44, 0xed, 0x5e, 0x07, 0xc8, 0xd7, 0x6e, 0x65, 0x00, 0x00, 0x00};
    char path[] = "/tmp/pfi-logread-XXXXXX";
    fclose(pfi_test_mkstemp(path));
    pfi_test_put(path, gz, sizeof gz);
    pfi_logread_cfg c = {0};
    pfi_logread r;
    pfi_err e = {0};
    assert_int_equal(pfi_logread_file(path, &c, &r, &e), PFI_EINVAL);
    unlink(path);
    char want[128];
    snprintf(want, sizeof want, "looks gzip-compressed (it starts with gzip's magic bytes): "
                                "decompress it first, e.g. zcat %s | pfi log /dev/stdin", path);
    if (!strstr(e.msg, want))
        fail_msg("%s", e.msg);
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    assert_int_equal(write(fd[1], gz, sizeof gz), (ssize_t)sizeof gz);
    close(fd[1]);
    char dev[32];
    snprintf(dev, sizeof dev, "/dev/fd/%d", fd[0]);
    assert_int_equal(pfi_logread_file(dev, &c, &r, &e), PFI_EINVAL);
    close(fd[0]);
    if (!strstr(e.msg, "looks gzip-compressed (it starts with gzip's magic bytes): pipe it "
                       "through zcat first"))
        fail_msg("%s", e.msg);
}

/* A long steady series after a warm-up: MSER cuts the warm-up, the window is steady. */
static void test_steady_window(void **state)
{
    char path[] = "/tmp/pfi-logread-XXXXXX";
    FILE *f = pfi_test_mkstemp(path);
    fprintf(f, "tokens per iteration will be: 1,000\n");
    for (int i = 0; i < 40; i++)
        fprintf(f, "iter %d: loss 3.0, time %.2fms, mfu 10.00%%\n", i,
                i < 6 ? 400.0 - 40 * i : 100.0 + (i % 3) * 0.5);
    fprintf(f, "pfi: tokens=5\n"); /* another format, no clock: not a point */
    fclose(f);
    pfi_logread_cfg c = {.parse = {.format = PFI_LOG_NANOGPT}};
    pfi_logread r;
    pfi_err e = {0};
    assert_int_equal(pfi_logread_file(path, &c, &r, &e), PFI_OK);
    unlink(path);
    assert_int_equal(r.n, 40);
    assert_true(r.win_first >= 4 && r.win_first <= 8);
    assert_true(r.steady);
    assert_true(fabs(r.median - 1000 / 0.1005) <= 0.01 * 1000 / 0.1005);
    assert_true(r.lo <= r.mean && r.mean <= r.hi);
    pfi_logread_free(&r);
}

/* A bare progress bar before a Megatron job's lines (a preprocessing loop's): the series is
 * the Megatron lines', in their unit; before, the bar's 1.49 steps/s was the whole series
 * and the Megatron lines were counted as another unit. */
static void test_bar_then_megatron(void **state)
{
    char path[] = "/tmp/pfi-logread-XXXXXX";
    FILE *f = pfi_test_mkstemp(path);
    /* " 98%|...| 2086/2120 [26:01<00:22,  1.49it/s]" */
    assert_int_equal(pfi_test_copy_lines(f, FIXTURES "hf-steps.log", 1, NULL), 1);
    pfi_test_copy_lines(f, FIXTURES "megatron.log", -1, NULL);
    fclose(f);
    pfi_logread_cfg c = {.parse = {.format = PFI_LOG_AUTO, .seq_len = 2048}};
    pfi_logread r;
    pfi_err e = {0};
    assert_int_equal(pfi_logread_file(path, &c, &r, &e), PFI_OK);
    unlink(path);
    assert_int_equal(r.format, PFI_LOG_MEGATRON);
    assert_string_equal(r.unit, "tokens/s");
    assert_int_equal(r.other_unit, 0);
    double want[] = {1024 * 2048 / 86.5452, 1024 * 2048 / 87.8716, 1024 * 2048 / 89.4748,
                     1024 * 2048 / 89.0752};
    assert_series(&r, want, 4);
    assert_int_equal(r.pts[0].line, 2);
    pfi_logread_free(&r);
}

/* A log still being written ends mid-line: its last, unterminated line is not read (before,
 * " ... tps: 7,3" gave a point of 7 tokens/s per GPU beside 7282). */
static void test_cut_last_line(void **state)
{
    char path[] = "/tmp/pfi-logread-XXXXXX";
    FILE *f = pfi_test_mkstemp(path);
    FILE *in = fopen(FIXTURES "torchtitan.log", "rb");
    assert_non_null(in);
    char line[4096];
    for (int i = 0; i < 2; i++) {
        assert_non_null(fgets(line, sizeof line, in));
        if (i == 0)
            fputs(line, f);
        else /* the second line, cut after "tps: 7,3" */
            fwrite(line, 1, (size_t)(strstr(line, "tps: ") + 8 - line), f);
    }
    fclose(in);
    fclose(f);
    pfi_logread_cfg c = {.parse = {.format = PFI_LOG_AUTO}};
    pfi_logread r;
    pfi_err e = {0};
    assert_int_equal(pfi_logread_file(path, &c, &r, &e), PFI_OK);
    assert_int_equal(r.n, 1);
    assert_true(fabs(r.pts[0].rate - 7282) < 1e-9);
    assert_int_equal(r.lines, 1);
    assert_int_equal(r.cut_last, 1);
    pfi_logread_free(&r);
    /* With its end the same line is read (its own number, 7334). */
    pfi_test_append(path, "34  tflops: 0.53  mfu: 0.17%\n");
    assert_int_equal(pfi_logread_file(path, &c, &r, &e), PFI_OK);
    unlink(path);
    assert_int_equal(r.n, 2);
    assert_true(fabs(r.pts[1].rate - 7334) < 1e-9);
    assert_int_equal(r.cut_last, 0);
    pfi_logread_free(&r);
}

/* Composer's finished log: the rate it states, SpeedMonitor's "Train throughput/tokens_per_sec"
 * (before: no throughput at all), its time/token counts untimed (no clock in seconds).  Without
 * that line the read says there is none, and why, rather than inventing one. */
static void test_composer(void **state)
{
    pfi_logread_cfg c = {.parse = {.format = PFI_LOG_AUTO}};
    pfi_logread r;
    read_ok("composer.log", &c, &r);
    assert_int_equal(r.format, PFI_LOG_COMPOSER);
    assert_string_equal(r.unit, "tokens/s");
    double want[] = {20082.8418};
    assert_series(&r, want, 1);
    assert_true(fabs(r.pts[0].rate - 20082.8418) < 1e-9); /* not the per-device 1255.1776 */
    assert_int_equal(r.untimed, 1);
    pfi_logread_free(&r);

    char path[] = "/tmp/pfi-logread-XXXXXX";
    FILE *f = pfi_test_mkstemp(path);
    pfi_test_copy_lines(f, FIXTURES "composer.log", -1, "Train throughput/tokens_per_sec:");
    fclose(f);
    pfi_err e = {0};
    assert_int_equal(pfi_logread_file(path, &c, &r, &e), PFI_EINVAL);
    unlink(path);
    assert_non_null(strstr(e.msg, "1 progress lines without a usable time, 0 warm-up (format composer"));
    assert_non_null(strstr(e.msg, "time/train is in SpeedMonitor's time_unit"));
    assert_non_null(strstr(e.msg, "no \"Train throughput/tokens_per_sec\" line"));
}

/* A log that is not a regular file (a pipe: `cat log | pfi log /dev/stdin`, <(zcat log)) is
 * read as the file is; it read as empty on the second pass ("no throughput ... 0 lines"). */
static void test_pipe(void **state)
{
    (void)state;
    FILE *in = fopen(FIXTURES "megatron-deepspeed-start.log", "rb");
    assert_non_null(in);
    char text[8192];
    size_t n = fread(text, 1, sizeof text, in);
    fclose(in);
    assert_true(n > 0 && n < 4096); /* fits a pipe's buffer: written whole before the read */
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    assert_int_equal(write(fd[1], text, n), (ssize_t)n);
    close(fd[1]);
    char path[32];
    snprintf(path, sizeof path, "/dev/fd/%d", fd[0]);
    pfi_logread_cfg c = {0};
    pfi_logread r;
    pfi_err e = {0};
    assert_int_equal(pfi_logread_file(path, &c, &r, &e), PFI_OK);
    close(fd[0]);
    const double want[] = {32 * 2048 * 1000 / 1250.2};
    assert_series(&r, want, 1);
    assert_int_equal(r.warmup, 2);
    pfi_logread_free(&r);
}

/* Counts of the pfi protocol whose difference over their interval passes a double: no rate
 * (it printed "inf", and the JSON output lost its series); a finite one after them is. */
static void test_count_overflow(void **state)
{
    (void)state;
    static const char *const text[] = {
        "pfi: tokens=0 t=0\npfi: tokens=1e300 t=1e-10\npfi: tokens=2e300 t=2e-10\n"
        "pfi: tokens=3e300 t=3e-10\n",
        "pfi: tokens=0 t=0\npfi: tokens=1e300 t=1e-10\npfi: tokens=1.000001e300 t=1\n",
    };
    pfi_logread_cfg c = {0};
    pfi_logread r;
    for (int k = 0; k < 2; k++) {
        char path[] = "/tmp/pfi-logread-XXXXXX";
        FILE *f = pfi_test_mkstemp(path);
        fputs(text[k], f);
        fclose(f);
        pfi_err e = {0};
        int rc = pfi_logread_file(path, &c, &r, &e);
        unlink(path);
        if (k == 0) {
            assert_int_equal(rc, PFI_EINVAL);
            assert_non_null(strstr(e.msg, "4 progress lines without a usable time"));
        } else {
            assert_int_equal(rc, PFI_OK);
            assert_int_equal(r.n, 1);
            assert_int_equal(r.untimed, 2); /* the first count, the overflow */
            assert_true(fabs(r.pts[0].rate / 1e294 - 1) < 1e-6);
            pfi_logread_free(&r);
        }
    }
}

/* Lines are the file's: a tqdm bar redrawn with '\r' (as it is even into a file) is one line,
 * as wc -l, sed -n Np and an editor count it (its six redraws were lines 2-7 of a 2-line file). */
static void test_file_lines(void **state)
{
    (void)state;
    char path[] = "/tmp/pfi-logread-XXXXXX";
    FILE *f = pfi_test_mkstemp(path);
    fputs("***** Running training *****\r\n", f);
    for (int i = 1; i <= 6; i++)
        fprintf(f, "\r %d%%|#   | %d/100 [00:%02d<01:00,  2.00it/s]", i, i, i);
    fputs("\nafter\n", f);
    for (int i = 7; i <= 9; i++)
        fprintf(f, " %d%%|#   | %d/100 [00:%02d<01:00,  2.00it/s]\n", i, i, i);
    fclose(f);
    pfi_logread_cfg c = {0};
    pfi_logread r;
    pfi_err e = {0};
    assert_int_equal(pfi_logread_file(path, &c, &r, &e), PFI_OK);
    unlink(path);
    assert_int_equal(r.lines, 6);
    assert_int_equal(r.n, 9);
    for (int i = 0; i < 6; i++)
        assert_int_equal(r.pts[i].line, 2);
    for (int i = 6; i < 9; i++)
        assert_int_equal(r.pts[i].line, i - 2);
    pfi_logread_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_megatron),      cmocka_unit_test(test_torchtitan),
        cmocka_unit_test(test_torchtitan_start), cmocka_unit_test(test_megatron_start),
        cmocka_unit_test(test_hf_banner),     cmocka_unit_test(test_hf_no_banner),
        cmocka_unit_test(test_hf_v5_strings), cmocka_unit_test(test_hf_final_eval),
        cmocka_unit_test(test_deepspeed),     cmocka_unit_test(test_megatron_over_deepspeed),
        cmocka_unit_test(test_nanogpt),       cmocka_unit_test(test_llmc),
        cmocka_unit_test(test_lightning),     cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_gzip),
        cmocka_unit_test(test_steady_window), cmocka_unit_test(test_bar_then_megatron),
        cmocka_unit_test(test_cut_last_line),
        cmocka_unit_test(test_composer),
        cmocka_unit_test(test_pipe),
        cmocka_unit_test(test_count_overflow),
        cmocka_unit_test(test_file_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
