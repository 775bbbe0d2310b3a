/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the throughput parsers against real log lines (tests/fixtures/logs, sources in
 * SOURCES.md there), garbage, and the line splitter. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "measure/parse.h"
#include "measure/parse_impl.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures/logs/"
#endif

#define MAXOBS 64
typedef struct run {
    pfi_parser *p;
    pfi_obs obs[MAXOBS];
    int n;
} run;

static void on_line(void *ctx, const char *line)
{
    run *r = ctx;
    pfi_obs o;
    if (pfi_parser_feed(r->p, line, &o) && r->n < MAXOBS)
        r->obs[r->n++] = o;
}

/* Feeds a whole fixture through the line splitter in odd-sized chunks, as a pipe would. */
static void parse_file(const char *name, const pfi_parse_cfg *cfg, run *r)
{
    char path[512];
    snprintf(path, sizeof path, "%s%s", FIXTURES, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    memset(r, 0, sizeof *r);
    pfi_err e = {0};
    assert_int_equal(pfi_parser_new(cfg, &r->p, &e), PFI_OK);
    pfi_linebuf lb = {0};
    char buf[37];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        pfi_linebuf_push(&lb, buf, k, on_line, r);
    pfi_linebuf_flush(&lb, on_line, r);
    fclose(f);
}

static void close_run(run *r)
{
    pfi_parser_free(r->p);
}

/* Feeds bytes (a terminal's stream: carriage returns, escape sequences) as a pipe would. */
static void parse_bytes(const char *data, const pfi_parse_cfg *cfg, run *r)
{
    memset(r, 0, sizeof *r);
    pfi_err e = {0};
    assert_int_equal(pfi_parser_new(cfg, &r->p, &e), PFI_OK);
    pfi_linebuf lb = {0};
    for (size_t at = 0, n = strlen(data); at < n; at += 37)
        pfi_linebuf_push(&lb, data + at, n - at < 37 ? n - at : 37, on_line, r);
    pfi_linebuf_flush(&lb, on_line, r);
}

/* line, the first a fresh parser of format fmt sees, offline and online: no observation, and
 * not counted as an untimed progress line either. */
static void assert_reads_nothing(pfi_log_format fmt, const char *line)
{
    for (int offline = 0; offline < 2; offline++) {
        pfi_parse_cfg c = {.format = fmt, .offline = offline};
        pfi_parser *p;
        pfi_err e = {0};
        assert_int_equal(pfi_parser_new(&c, &p, &e), PFI_OK);
        pfi_obs o;
        if (pfi_parser_feed(p, line, &o) || pfi_parser_untimed(p))
            fail_msg("read (%s): %s", offline ? "offline" : "online", line);
        pfi_parser_free(p);
    }
}

static void assert_near(double a, double b, double rel)
{
    if (!(fabs(a - b) <= rel * fabs(b)))
        fail_msg("%.9g is not within %g of %.9g", a, rel, b);
}

/* ---- a fixture parsed whole, and what is asserted of it ---- */

/* One assertion on a parsed fixture: the parser's detected format, its count of observations
 * or a learned figure, or a field of observation i.  Integer fields are compared exactly; the
 * others within rel (relative). */
typedef enum { K_END, K_FORMAT, K_N, K_PER_GPU, K_TOKENS_PER_STEP, K_SEQ_LEN, K_KIND, K_UNIT,
               K_VALUE, K_PERIOD, K_STEP } want_key;
typedef struct want {
    want_key key;
    int i;
    double v, rel;
} want;
#define W_FORMAT(f) {K_FORMAT, 0, f, 0}
#define W_N(n) {K_N, 0, n, 0}
#define W_PER_GPU(v) {K_PER_GPU, 0, v, 0}
#define W_TOKENS_PER_STEP(v) {K_TOKENS_PER_STEP, 0, v, 0}
#define W_SEQ_LEN(v) {K_SEQ_LEN, 0, v, 0}
#define W_KIND(i, k) {K_KIND, i, k, 0}
#define W_UNIT(i, u) {K_UNIT, i, u, 0}
#define W_VALUE(i, v, rel) {K_VALUE, i, v, rel}
#define W_PERIOD(i, v, rel) {K_PERIOD, i, v, rel}
#define W_STEP(i, s) {K_STEP, i, s, 0}

typedef struct fixture_case {
    const char *file;
    pfi_parse_cfg cfg;
    want w[12]; /* in the order asserted, up to the first K_END */
} fixture_case;

/* Parses c's fixture (parse_file) and asserts what c wants, in order; r stays open for more
 * lines. */
static void check_fixture(const fixture_case *c, run *r)
{
    parse_file(c->file, &c->cfg, r);
    static const char *const names[] = {"", "format", "observations", "per-GPU", "tokens per step",
                                        "sequence length", "kind", "unit", "value", "period",
                                        "step"};
    for (const want *w = c->w; w < c->w + sizeof c->w / sizeof *c->w && w->key != K_END; w++) {
        if (w->key >= K_KIND && w->i >= r->n)
            fail_msg("%s: no observation %d (%d)", c->file, w->i, r->n);
        const pfi_obs *o = &r->obs[w->key >= K_KIND ? w->i : 0];
        long long got = 0;
        double near = 0;
        switch (w->key) {
        case K_FORMAT: got = pfi_parser_format(r->p); break;
        case K_N: got = r->n; break;
        case K_PER_GPU: got = pfi_parser_per_gpu(r->p); break;
        case K_KIND: got = o->kind; break;
        case K_UNIT: got = o->unit; break;
        case K_STEP: got = o->step; break;
        case K_TOKENS_PER_STEP: near = pfi_parser_tokens_per_step(r->p); break;
        case K_SEQ_LEN: near = pfi_parser_seq_len(r->p); break;
        case K_VALUE: near = o->value; break;
        default: near = o->period_s; break;
        }
        int exact = w->key <= K_PER_GPU || (w->key >= K_KIND && w->key <= K_UNIT) ||
                    w->key == K_STEP;
        if (exact ? got != (long long)w->v : !(fabs(near - w->v) <= w->rel * fabs(w->v)))
            print_error("%s (format %d, seq_len %g): observation %d's %s\n", c->file,
                        (int)c->cfg.format, c->cfg.seq_len, w->i, names[w->key]);
        if (exact)
            assert_int_equal(got, (long long)w->v);
        else
            assert_near(near, w->v, w->rel);
    }
}

static void check_fixtures(const fixture_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        run r;
        check_fixture(&c[i], &r);
        close_run(&r);
    }
}
#define CHECK_FIXTURES(cases) check_fixtures(cases, sizeof cases / sizeof *cases)

static void test_megatron(void **state)
{
    static const fixture_case cases[] = {
        {"megatron.log", {.format = PFI_LOG_AUTO, .seq_len = 2048},
         {W_FORMAT(PFI_LOG_MEGATRON), W_N(4), W_KIND(0, PFI_OBS_RATE), W_UNIT(0, PFI_OU_TOKENS),
          W_VALUE(0, 1024 * 2048 / 86.5452, 1e-9), W_STEP(3, 125)}},
        /* Without a sequence length the rate stays in samples/s, and says so. */
        {"megatron-core.log", {.format = PFI_LOG_AUTO},
         {W_FORMAT(PFI_LOG_MEGATRON), W_N(3), W_UNIT(0, PFI_OU_SAMPLES),
          W_VALUE(0, 128 / 5.3616, 1e-9), W_STEP(2, 73)}},
    };
    CHECK_FIXTURES(cases);
}

/* Megatron's interval timer starts at "[before the start of training step]": the next
 * iteration line averages the warm-up in (Megatron-DeepSpeed, log interval 1: 4,220.8 ms, then
 * 1,346.3 and 1,250.2).  It is counted as the run's warm-up, not untimed.  So is the line
 * after it, iteration 2: at log interval 1 the line numbers cannot tell an older loop (timer
 * reset at every line) from Megatron Core >= 0.16's (not reset after the first, so iteration
 * 2's line would average 1 and 2).  Iteration 3 is read; without the banner nothing is
 * dropped. */
static void test_megatron_start(void **state)
{
    static const fixture_case cases[] = {
        {"megatron-deepspeed-start.log", {.format = PFI_LOG_AUTO},
         {W_FORMAT(PFI_LOG_MEGATRON), W_N(1), W_UNIT(0, PFI_OU_TOKENS), W_STEP(0, 3),
          W_VALUE(0, 32 * 2048 / 1.2502, 1e-9)}},
    };
    CHECK_FIXTURES(cases);
    run r;
    check_fixture(&cases[0], &r);
    assert_int_equal(pfi_parser_warmup(r.p), 2);
    assert_int_equal(pfi_parser_untimed(r.p), 0);
    close_run(&r);

    pfi_parse_cfg cfg = {.format = PFI_LOG_AUTO};
    pfi_parser *p;
    pfi_err e = {0};
    assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
    pfi_obs o;
    const char *it = " iteration      100/    5000 | consumed samples:          800 | elapsed time "
                     "per iteration (ms): 296.8 | learning rate: 3.937E-06 | global batch size:     8 |";
    assert_int_equal(pfi_parser_feed(p, it, &o), 1); /* no banner seen: read */
    assert_near(o.value, 8 * 1000 / 296.8, 1e-9);
    assert_int_equal(pfi_parser_feed(p, "[before the start of training step] datetime: 2023-07-16 11:34:57 ", &o), 0);
    assert_int_equal(pfi_parser_feed(p, "[Rank 0] (after 100 iterations) memory (MB) | allocated: 6816.9", &o), 0);
    assert_int_equal(pfi_parser_warmup(p), 0);
    assert_int_equal(pfi_parser_feed(p, it, &o), 0); /* the first after it */
    assert_int_equal(pfi_parser_warmup(p), 1);
    pfi_parser_free(p);
}

/* The line after Megatron's warm-up line, iteration k then N (log interval L).  Megatron Core
 * >= 0.16 logs the process's first iteration (k, the start's + 1) and does not reset its
 * timer or counters there, so the line at N averages k..N; older loops log at multiples of L
 * only and reset at every line (k a multiple of L, N = k + L).  k no multiple of N - k: the
 * counters ran on, and the line is corrected exactly, iterations k+1..N each taking
 * ((N-k+1) tN - tk) / (N-k) ms.  Otherwise the numbers cannot tell, and the line is warm-up
 * too.  (Before: the review's run, 20 s of warm-up at iteration 1 then 2,900 ms at 10, read
 * 361,578 tokens/s at iteration 10 beside 1.05e6.) */
static int mg_feed(pfi_parser *p, long long it, double ms, pfi_obs *o)
{
    char line[512];
    snprintf(line, sizeof line, " [2026-03-01 10:00:00.123456] iteration %8lld/    1000 | "
             "consumed samples: %12lld | elapsed time per iteration (ms): %.1f | global batch "
             "size:   256 | lm loss: 5.000000E+00 | loss scale: 1.0 | number of skipped "
             "iterations:   0 |", it, it * 256, ms);
    return pfi_parser_feed(p, line, o);
}

static void test_megatron_first_iteration(void **state)
{
    static const char start[] = "[before the start of training step] datetime: 2026-03-01 10:00:00";
    pfi_parse_cfg cfg = {.format = PFI_LOG_AUTO, .seq_len = 4096};
    pfi_parser *p;
    pfi_err e = {0};
    pfi_obs o;
    assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
    /* A fresh start, interval 10: 1 then 10 (= (20000 + 9 x 1000) / 10). */
    pfi_parser_feed(p, start, &o);
    assert_int_equal(mg_feed(p, 1, 20000, &o), 0);
    assert_int_equal(mg_feed(p, 10, 2900, &o), 1);
    assert_near(o.value, 256 * 4096 / 1.0, 1e-9);
    assert_int_equal(o.step, 10);
    assert_int_equal(mg_feed(p, 20, 1002, &o), 1); /* then as printed */
    assert_near(o.value, 256 * 4096 / 1.002, 1e-9);
    assert_int_equal(pfi_parser_warmup(p), 1);
    /* Resumed from 100: 101 then 110 (the counters over 10 iterations). */
    pfi_parser_feed(p, start, &o);
    assert_int_equal(mg_feed(p, 101, 5000, &o), 0);
    assert_int_equal(mg_feed(p, 110, 1400, &o), 1);
    assert_near(o.value, 256 * 4096 / 1.0, 1e-9);
    assert_int_equal(pfi_parser_warmup(p), 2);
    /* An older loop, interval 10: 10 then 20, as a Core >= 0.16 loop resumed from 9 would
     * print: warm-up both, 30 read. */
    pfi_parser_feed(p, start, &o);
    assert_int_equal(mg_feed(p, 10, 3000, &o), 0);
    assert_int_equal(mg_feed(p, 20, 1000, &o), 0);
    assert_int_equal(mg_feed(p, 30, 1000, &o), 1);
    assert_int_equal(pfi_parser_warmup(p), 4);
    /* Interval 1 (1 then 2) cannot tell either. */
    pfi_parser_feed(p, start, &o);
    assert_int_equal(mg_feed(p, 1, 4220.8, &o), 0);
    assert_int_equal(mg_feed(p, 2, 1346.3, &o), 0);
    assert_int_equal(mg_feed(p, 3, 1250.2, &o), 1);
    assert_int_equal(pfi_parser_warmup(p), 6);
    /* Numbers that do not fit (a line lost: no steady time left): warm-up, not a rate. */
    pfi_parser_feed(p, start, &o);
    assert_int_equal(mg_feed(p, 1, 20000, &o), 0);
    assert_int_equal(mg_feed(p, 10, 1500, &o), 0);
    assert_int_equal(pfi_parser_warmup(p), 8);
    assert_int_equal(pfi_parser_untimed(p), 0);
    pfi_parser_free(p);
}

static void test_megatron_banner_seq_len(void **state)
{
    pfi_parse_cfg cfg = {.format = PFI_LOG_MEGATRON};
    pfi_parser *p;
    pfi_err e = {0};
    assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
    pfi_obs o;
    assert_int_equal(pfi_parser_feed(p, "  seq_length ...................................... 4096", &o), 0);
    assert_near(pfi_parser_seq_len(p), 4096, 0);
    assert_int_equal(pfi_parser_feed(p, " iteration 5/ 10 | elapsed time per iteration (ms): 1000.0 | global batch size:    8 |", &o), 1);
    assert_int_equal(o.unit, PFI_OU_TOKENS);
    assert_near(o.value, 8 * 4096, 1e-12);
    /* GPT-NeoX's dump pads after the value ("  num_layers ...... 44.......updated", its
     * format): the value is read, not the padding (before: nothing was learned). */
    assert_int_equal(pfi_parser_feed(p, "  seq_length ...................... 2048........................updated", &o), 0);
    assert_near(pfi_parser_seq_len(p), 2048, 0);
    /* A value that is no number is not read ("None"), nor a number glued to text. */
    pfi_parser_feed(p, "  seq_length ...................................... None", &o);
    pfi_parser_feed(p, "  seq_length ...................................... 1024x", &o);
    assert_near(pfi_parser_seq_len(p), 2048, 0);
    pfi_parser_free(p);
}

/* Megatron-DeepSpeed states the sequence length on every iteration line ("actual seqlen:
 * 4096"): the log converts to tokens/s by itself, and the line's value replaces the argument
 * dump's (curriculum learning runs shorter sequences than seq_length); --seq-len still wins.
 * Its log carries DeepSpeed's timer line too: auto detection reads it as megatron, whichever
 * line comes first (it read the job 12.7% faster than it ran when the timer line did). */
static void test_megatron_deepspeed_seqlen(void **state)
{
    static const fixture_case cases[] = {
        {"megatron-deepspeed.log", {.format = PFI_LOG_MEGATRON},
         {W_N(2), W_UNIT(0, PFI_OU_TOKENS), W_VALUE(0, 768 * 4096 / 14.2875, 1e-9),
          W_VALUE(1, 768 * 4096 / 14.5414, 1e-9), W_STEP(1, 200)}},
        /* Auto: the DeepSpeed timer line comes first and is read, provisionally: its
         * CurrSamplesPerSec times only the engine's forward..step (58.755 samples/s, where
         * Megatron's 14.5414 s per iteration of 768 samples, the 14.54 s between the two
         * timer lines' stamps, is 52.8).  Megatron's iteration line takes over (restart: the
         * timer line's point is forgotten) and is read from then on, the timer lines not. */
        {"megatron-deepspeed.log", {.format = PFI_LOG_AUTO},
         {W_FORMAT(PFI_LOG_MEGATRON), W_N(3), W_UNIT(0, PFI_OU_SAMPLES),
          W_VALUE(0, 61.35304005128382, 1e-12), W_UNIT(1, PFI_OU_TOKENS),
          W_VALUE(1, 768 * 4096 / 14.2875, 1e-9), W_STEP(1, 199),
          W_VALUE(2, 768 * 4096 / 14.5414, 1e-9), W_STEP(2, 200)}},
        /* GPT-NeoX the same: its samples/sec (7.799) over DeepSpeed's 8.009. */
        {"gpt-neox.log", {.format = PFI_LOG_AUTO, .seq_len = 2048},
         {W_FORMAT(PFI_LOG_MEGATRON), W_N(2), W_VALUE(1, 7.799 * 2048, 1e-12), W_STEP(1, 34)}},
        /* Named, DeepSpeed is read as asked. */
        {"megatron-deepspeed.log", {.format = PFI_LOG_DEEPSPEED},
         {W_N(2), W_VALUE(1, 58.75503515561452 * 4096, 1e-12)}},
    };
    CHECK_FIXTURES(cases);
    run rr;
    check_fixture(&cases[1], &rr);
    for (int i = 0; i < rr.n; i++)
        assert_int_equal(rr.obs[i].restart, i == 1);
    close_run(&rr);

    /* A dump's seq_length (the curriculum's maximum) gives way to the line's own. */
    pfi_parse_cfg cfg = {.format = PFI_LOG_MEGATRON};
    pfi_parser *p;
    pfi_err e = {0};
    assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
    pfi_obs o;
    pfi_parser_feed(p, "  seq_length ...................................... 8192", &o);
    assert_near(pfi_parser_seq_len(p), 8192, 0);
    const char *it = "        iteration      199/  317892 | consumed samples:       152832 | "
                     "consumed tokens:    625999872 | elapsed time per iteration (ms): 14287.5 "
                     "| learning rate: 2.407E-04 | global batch size:   768 | lm loss: "
                     "5.905366E+00 | loss scale: 8192.0 | actual seqlen:  4096 | number of "
                     "skipped iterations:   0 |";
    assert_int_equal(pfi_parser_feed(p, it, &o), 1);
    assert_near(o.value, 768 * 4096 / 14.2875, 1e-9);
    pfi_parser_free(p);
    pfi_parse_cfg cs = {.format = PFI_LOG_MEGATRON, .seq_len = 2048};
    assert_int_equal(pfi_parser_new(&cs, &p, &e), PFI_OK);
    assert_int_equal(pfi_parser_feed(p, it, &o), 1);
    assert_near(o.value, 768 * 2048 / 14.2875, 1e-9);
    pfi_parser_free(p);
}

/* GPT-NeoX prints Megatron's iteration line without the batch size but with "samples/sec:"
 * (the global batch over the same time per iteration): samples/s, not steps/s. */
static void test_gpt_neox(void **state)
{
    static const fixture_case cases[] = {
        {"gpt-neox.log", {.format = PFI_LOG_MEGATRON, .seq_len = 2048},
         {W_N(1), W_UNIT(0, PFI_OU_TOKENS), W_VALUE(0, 7.799 * 2048, 1e-12), W_STEP(0, 34),
          /* the same rate as the line's batch over its time: 32 samples / 4.1031 s */
          W_VALUE(0, 32 * 2048 / 4.1031, 1e-3)}},
    };
    CHECK_FIXTURES(cases);
}

/* Feeds the first max lines of a fixture (all: -1) to p, keeping the observations in r (r->p
 * is not set). */
static void feed_file(pfi_parser *p, const char *name, int max, run *r)
{
    char path[512], line[PFI_LINE_MAX];
    snprintf(path, sizeof path, "%s%s", FIXTURES, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    while (max-- != 0 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        pfi_obs o;
        if (pfi_parser_feed(p, line, &o) && r->n < MAXOBS)
            r->obs[r->n++] = o;
    }
    fclose(f);
}

/* A bare progress bar (no description) is taken for the Trainer's only provisionally: the
 * job's own lines of another format that follow take over, and their first observation says
 * the earlier ones were something else.  Before, auto detection settled on hf for good and
 * a Megatron job preceded by one such bar was measured by that bar alone. */
static void test_bare_bar_gives_way(void **state)
{
    pfi_parse_cfg cfg = {.format = PFI_LOG_AUTO, .seq_len = 2048};
    pfi_parser *p;
    pfi_err e = {0};
    run r;
    memset(&r, 0, sizeof r);
    assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
    feed_file(p, "hf-steps.log", 2, &r); /* two real bars, before the Trainer's dict */
    assert_int_equal(r.n, 2);
    assert_int_equal(pfi_parser_format(p), PFI_LOG_HF);
    feed_file(p, "megatron.log", -1, &r);
    assert_int_equal(pfi_parser_format(p), PFI_LOG_MEGATRON);
    assert_int_equal(r.n, 6);
    for (int i = 0; i < r.n; i++)
        assert_int_equal(r.obs[i].restart, i == 2);
    assert_int_equal(r.obs[2].unit, PFI_OU_TOKENS);
    assert_near(r.obs[2].value, 1024 * 2048 / 86.5452, 1e-9);
    assert_int_equal(pfi_parser_per_gpu(p), 0);
    pfi_parser_free(p);

    /* torchtitan after such a bar: per GPU from then on. */
    memset(&r, 0, sizeof r);
    assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
    feed_file(p, "hf-steps.log", 2, &r);
    feed_file(p, "torchtitan.log", -1, &r);
    assert_int_equal(pfi_parser_format(p), PFI_LOG_TORCHTITAN);
    assert_int_equal(pfi_parser_per_gpu(p), 1);
    assert_int_equal(r.obs[2].restart, 1);
    assert_int_equal(r.obs[3].restart, 0);
    assert_near(r.obs[2].value, 7282, 0);
    pfi_parser_free(p);

    /* Once the Trainer is known (its banner, hf.log), hf is kept: a later line of another
     * format is not read, and nothing restarts. */
    memset(&r, 0, sizeof r);
    assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
    feed_file(p, "hf.log", -1, &r);
    int n_hf = r.n;
    assert_true(n_hf > 0);
    feed_file(p, "megatron.log", -1, &r);
    assert_int_equal(pfi_parser_format(p), PFI_LOG_HF);
    assert_int_equal(r.n, n_hf);
    for (int i = 0; i < r.n; i++)
        assert_int_equal(r.obs[i].restart, 0);
    pfi_parser_free(p);
}

static void test_torchtitan(void **state)
{
    static const fixture_case cases[] = {
        {"torchtitan.log", {.format = PFI_LOG_AUTO},
         {W_FORMAT(PFI_LOG_TORCHTITAN), W_N(8), W_VALUE(0, 7282, 0), W_VALUE(1, 7334, 0),
          W_STEP(7, 21), W_PER_GPU(1)}},
    };
    CHECK_FIXTURES(cases);

    /* Colour codes as torchtitan prints them on a terminal. */
    pfi_parse_cfg cfg = {.format = PFI_LOG_AUTO};
    pfi_parser *p;
    pfi_err e = {0};
    assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
    pfi_obs o;
    assert_int_equal(pfi_parser_feed(p, "\033[31mstep: 3  \033[32mloss:  7.1  \033[34mtps: 10,050\033[39m  \033[36mtflops: 314.71", &o), 1);
    assert_near(o.value, 10050, 0);
    pfi_parser_free(p);

    /* step 1's interval holds the warm-up (tps a fraction of the steady rate): a line of the
     * format, counted as the run's warm-up (not untimed), no rate; step 2 on is read; a run
     * resumed past step 1 has no such line. */
    assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
    assert_int_equal(pfi_parser_feed(p, "[rank0]:[titan] step:  1  loss: 12.2654  tps: 1,704  tflops: 0.12", &o), 0);
    assert_int_equal(pfi_parser_warmup(p), 1);
    assert_int_equal(pfi_parser_untimed(p), 0);
    assert_int_equal(pfi_parser_format(p), PFI_LOG_TORCHTITAN);
    assert_int_equal(pfi_parser_feed(p, "[rank0]:[titan] step:  2  loss: 11.7209  tps: 7,291  tflops: 0.52", &o), 1);
    assert_near(o.value, 7291, 0);
    assert_int_equal(pfi_parser_feed(p, "[rank0]:[titan] step: 11  loss: 9.1  tps: 7,305  tflops: 0.52", &o), 1);
    assert_near(o.value, 7305, 0);
    pfi_parser_free(p);
}

static void test_hf(void **state)
{
    static const fixture_case cases[] = {
        /* The last bar was cut mid-unit ("9.33s/i") when pasted: not a measurement. */
        {"hf.log", {.format = PFI_LOG_AUTO, .seq_len = 512},
         {W_FORMAT(PFI_LOG_HF), W_N(2), W_KIND(0, PFI_OBS_COUNT), W_UNIT(0, PFI_OU_TOKENS),
          W_VALUE(0, 2 * 10 * 512, 0), W_VALUE(1, 3 * 10 * 512, 0)}},
        /* Without the banner (hidden at the Trainer's default verbosity), its bars are known
         * by having no description; the fork's per-step dict gives samples/s (tokens with
         * seq_len). */
        {"hf-steps.log", {.format = PFI_LOG_AUTO, .seq_len = 512},
         {W_FORMAT(PFI_LOG_HF), W_N(6), W_KIND(0, PFI_OBS_COUNT), W_VALUE(0, 2086, 0),
          W_KIND(2, PFI_OBS_RATE), W_UNIT(2, PFI_OU_TOKENS), W_VALUE(2, 56.162 * 512, 1e-12),
          W_PERIOD(2, 0.641, 1e-12)}},
    };
    CHECK_FIXTURES(cases);
    pfi_parse_cfg cfg = {.format = PFI_LOG_AUTO, .seq_len = 512};
    /* A bar with a description (a loader, a tokenizer) is not training without the banner. */
    pfi_parser *q;
    pfi_err qe = {0};
    pfi_obs qo;
    assert_int_equal(pfi_parser_new(&cfg, &q, &qe), PFI_OK);
    assert_int_equal(pfi_parser_feed(q, "Loading checkpoint shards: 100%|##########| 2/2 "
                                        "[00:05<00:00,  2.50s/it]", &qo), 0);
    /* Transformers v5's metrics dict (quoted values) says the Trainer is training. */
    assert_int_equal(pfi_parser_feed(q, "{'loss': '1.363', 'grad_norm': '1.094', "
                                        "'learning_rate': '5e-05', 'epoch': '1'}", &qo), 0);
    assert_int_equal(pfi_parser_feed(q, "Loading checkpoint shards: 100%|##########| 2/2 "
                                        "[00:05<00:00,  2.50s/it]", &qo), 1);
    pfi_parser_free(q);
    /* The Trainer's evaluation bar has no description either: it is known by its other
     * total (the eval batches, not max_steps), and its counter is not taken for steps; a
     * larger total too (a short fine-tune evaluated on more batches than it has steps). */
    assert_int_equal(pfi_parser_new(&cfg, &q, &qe), PFI_OK);
    assert_int_equal(pfi_parser_feed(q, "  1%|          | 10/1000 [00:10<16:30,  1.00it/s]", &qo), 1);
    assert_near(qo.value, 10, 0); /* steps: no batch size known */
    assert_int_equal(pfi_parser_feed(q, " 40%|####      | 20/50 [00:02<00:03, 10.00it/s]", &qo), 0);
    assert_int_equal(pfi_parser_feed(q, "  2%|2         | 20/1000 [00:20<16:20,  1.00it/s]", &qo), 1);
    assert_near(qo.value, 20, 0);
    assert_int_equal(pfi_parser_feed(q, " 10%|#         | 200/2000 [00:10<01:30, 20.00it/s]", &qo), 0);
    assert_int_equal(pfi_parser_feed(q, "100%|##########| 2000/2000 [01:40<00:00, 20.00it/s]", &qo), 0);
    assert_int_equal(pfi_parser_feed(q, "  3%|3         | 30/1000 [00:30<16:10,  1.00it/s]", &qo), 1);
    assert_near(qo.value, 30, 0);
    pfi_parser_free(q);
    /* A launcher's prefix (srun -l's "0: ", torchrun's "[default0]:" or "[rank1]:", or both)
     * is no description: the bar is the Trainer's (it was dropped: "no throughput"); a word
     * is. */
    static const char *const prefixed[] = {
        "0:  1%|          | 10/1000 [00:10<16:30,  1.00it/s]",
        "[default0]:  1%|          | 10/1000 [00:10<16:30,  1.00it/s]",
        "[rank1]:  1%|          | 10/1000 [00:10<16:30,  1.00it/s]",
        "12: [default3]:  1%|          | 10/1000 [00:10<16:30,  1.00it/s]",
    };
    for (int k = 0; k < 4; k++) {
        assert_int_equal(pfi_parser_new(&cfg, &q, &qe), PFI_OK);
        assert_int_equal(pfi_parser_feed(q, prefixed[k], &qo), 1);
        pfi_parser_free(q);
    }
    assert_int_equal(pfi_parser_new(&cfg, &q, &qe), PFI_OK);
    assert_int_equal(pfi_parser_feed(q, "0: Map:  1%|          | 10/1000 [00:10<16:30,  1.00it/s]", &qo), 0);
    assert_int_equal(pfi_parser_feed(q, "[rank]:  1%|          | 10/1000 [00:10<16:30,  1.00it/s]", &qo), 0);
    pfi_parser_free(q);
    /* A finished bar (the job's own preprocessing) gives way to training whatever its total. */
    assert_int_equal(pfi_parser_new(&cfg, &q, &qe), PFI_OK);
    assert_int_equal(pfi_parser_feed(q, "100%|##########| 5000/5000 [00:10<00:00, 500.00it/s]", &qo), 1);
    assert_int_equal(pfi_parser_feed(q, "  1%|          | 10/1000 [00:10<16:30,  1.00it/s]", &qo), 1);
    assert_near(qo.value, 10, 0);
    pfi_parser_free(q);
    /* After the Trainer's closing dict ('train_runtime') training is over: the evaluation
     * bar that follows (trainer.evaluate(), another total) is not read, nor a bar of the
     * training's total that is not its closing redraw; the closing redraw is; a bar at 0 of
     * the training's total (a second train()) reads again, as does any bar after a new
     * banner.  A bar the dict was written after, on the same line, is still the training's. */
    static const char dict[] = "{'train_runtime': 19.6195, 'train_samples_per_second': 434.772, "
                               "'train_steps_per_second': 27.218, 'train_loss': 0.69, 'epoch': 1.0}";
    assert_int_equal(pfi_parser_new(&cfg, &q, &qe), PFI_OK);
    assert_int_equal(pfi_parser_feed(q, " 94%|#########3| 500/534 [00:17<00:01, 28.30it/s]", &qo), 1);
    char same_line[256];
    snprintf(same_line, sizeof same_line, "100%%|#########9| 533/534 [00:19<00:00, 28.21it/s]%s", dict);
    assert_int_equal(pfi_parser_feed(q, same_line, &qo), 1);
    assert_near(qo.value, 533 * 16 * 512, 0); /* the batch from the dict on its own line */
    assert_int_equal(pfi_parser_feed(q, "100%|##########| 534/534 [00:19<00:00, 27.22it/s]", &qo), 1);
    assert_int_equal(pfi_parser_feed(q, "100%|##########| 67/67 [00:02<00:00, 31.00it/s]", &qo), 0);
    assert_int_equal(pfi_parser_feed(q, " 50%|#####     | 267/534 [00:09<00:09, 28.00it/s]", &qo), 0);
    assert_int_equal(pfi_parser_feed(q, "  0%|          | 0/534 [00:00<?, ?it/s]", &qo), 1);
    assert_int_equal(pfi_parser_feed(q, " 10%|#         | 53/534 [00:02<00:17, 28.00it/s]", &qo), 1);
    assert_near(qo.value, 53 * 16 * 512, 0);
    assert_int_equal(pfi_parser_feed(q, dict, &qo), 0);
    assert_int_equal(pfi_parser_feed(q, "100%|##########| 67/67 [00:02<00:00, 31.00it/s]", &qo), 0);
    assert_int_equal(pfi_parser_feed(q, "***** Running training *****", &qo), 0);
    assert_int_equal(pfi_parser_feed(q, "  1%|          | 10/1000 [00:10<16:30,  1.00it/s]", &qo), 1);
    pfi_parser_free(q);
    static const fixture_case final_eval[] = {
        {"hf-final-eval.log", {.format = PFI_LOG_AUTO, .seq_len = 128, .offline = 1},
         {W_FORMAT(PFI_LOG_HF), W_N(3), W_STEP(0, 500), W_VALUE(0, 28.30, 0), W_STEP(2, 534),
          W_VALUE(2, 27.22 * 16 * 128, 1e-12)}},
    };
    CHECK_FIXTURES(final_eval);
    /* ...but it is when the format is named; without a batch size it stays in steps. */
    static const fixture_case named[] = {
        {"hf-steps.log", {.format = PFI_LOG_HF},
         {W_N(6), W_UNIT(0, PFI_OU_STEPS), W_VALUE(5, 2090, 0)}},
    };
    CHECK_FIXTURES(named);
}

static void test_deepspeed(void **state)
{
    static const fixture_case cases[] = {
        {"deepspeed.log", {.format = PFI_LOG_AUTO},
         {W_FORMAT(PFI_LOG_DEEPSPEED), W_N(6), W_UNIT(0, PFI_OU_SAMPLES),
          W_VALUE(1, 145.0889530760849, 1e-12), W_STEP(1, 18)}},
        /* The older running average is differenced: one rate from two lines. */
        {"deepspeed-old.log", {.format = PFI_LOG_AUTO},
         {W_FORMAT(PFI_LOG_DEEPSPEED), W_N(1),
          W_VALUE(0, 10.0 / (50 / 83.73838805358588 - 40 / 83.48609168106144), 1e-9)}},
    };
    CHECK_FIXTURES(cases);
    /* Detected provisionally (Megatron's line would take over), a DeepSpeed log without one
     * loses nothing: no observation says to forget the ones before it. */
    run r;
    check_fixture(&cases[0], &r);
    for (int i = 0; i < r.n; i++)
        assert_int_equal(r.obs[i].restart, 0);
    close_run(&r);
}

/* DeepSpeed's newer ThroughputTimer prints "epoch=0/micro_step=80/global_step=20, "
 * before its rates: the step is the global step (it was lost: "E/S" only was read). */
static void test_deepspeed_global_step(void **state)
{
    pfi_parse_cfg cfg = {.format = PFI_LOG_AUTO};
    pfi_parser *p;
    pfi_err e = {0};
    assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
    pfi_obs o;
    assert_int_equal(
        pfi_parser_feed(p,
                        "[2023-07-01 12:00:00,000] [INFO] [timer.py:260:stop] "
                        "epoch=0/micro_step=80/global_step=20, RunningAvgSamplesPerSec=15.0, "
                        "CurrSamplesPerSec=30.5, MemAllocated=1.23GB, MaxMemAllocated=4.56GB",
                        &o),
        1);
    assert_int_equal(pfi_parser_format(p), PFI_LOG_DEEPSPEED);
    assert_near(o.value, 30.5, 0);
    assert_int_equal(o.step, 20);
    pfi_parser_free(p);
}

/* The Trainer's bar with DeepSpeed under it (its INFO banner hidden, the default verbosity):
 * a bar still counting keeps the job's wall-clock steps; DeepSpeed's timer (forward..step
 * only) took over at its first line.  A finished bar (a preprocessing loop), or one not drawn
 * again between two timer lines, gives way. */
static void test_hf_bar_beside_deepspeed(void **state)
{
    static const char *ds = "[2024-05-01 10:00:00,000] [INFO] [timer.py:260:stop] "
                            "epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=18.1, "
                            "CurrSamplesPerSec=18.0, MemAllocated=10.2GB, MaxMemAllocated=20.1GB";
    for (int finished = 0; finished <= 1; finished++) {
        pfi_parse_cfg cfg = {.format = PFI_LOG_AUTO};
        pfi_parser *p;
        pfi_err e = {0};
        assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
        pfi_obs o;
        pfi_parser_feed(p, finished ? " 100%|##########| 1000/1000 [00:05<00:00, 200.00it/s]"
                                    : "  1%|          | 10/1000 [00:05<08:15,  2.00it/s]",
                        &o);
        assert_int_equal(pfi_parser_format(p), PFI_LOG_HF);
        int hit = pfi_parser_feed(p, ds, &o);
        if (finished) {
            assert_int_equal(hit, 1);
            assert_int_equal(pfi_parser_format(p), PFI_LOG_DEEPSPEED);
        } else {
            assert_int_equal(hit, 0);
            assert_int_equal(pfi_parser_format(p), PFI_LOG_HF);
            assert_int_equal(pfi_parser_feed(p, "  2%|          | 20/1000 [00:10<08:10,  2.00it/s]",
                                             &o),
                             1);
            assert_int_equal(o.step, 20);
            /* A bar that stops short (a loop killed, a bar left behind) keeps nothing: the
             * second timer line with no bar drawn between them takes over. */
            assert_int_equal(pfi_parser_feed(p, ds, &o), 0);
            assert_int_equal(pfi_parser_format(p), PFI_LOG_HF);
            assert_int_equal(pfi_parser_feed(p, ds, &o), 1);
            assert_int_equal(pfi_parser_format(p), PFI_LOG_DEEPSPEED);
        }
        pfi_parser_free(p);
    }
}

static void test_nanogpt(void **state)
{
    static const fixture_case cases[] = {
        {"nanogpt.log", {.format = PFI_LOG_AUTO},
         {W_FORMAT(PFI_LOG_NANOGPT), W_N(6), W_UNIT(0, PFI_OU_TOKENS),
          W_VALUE(0, 262144 / 33.78552, 1e-9), W_PERIOD(0, 33.78552, 1e-9)}},
        /* The eval line ("step 250: train loss ...") is not an iteration; iter 0 (9,371.81
         * ms, "mfu -100.00%": the compile) is counted as the run's warm-up. */
        {"nanogpt-eval.log", {.format = PFI_LOG_AUTO},
         {W_FORMAT(PFI_LOG_NANOGPT), W_N(3), W_UNIT(0, PFI_OU_STEPS), W_STEP(0, 10),
          W_VALUE(0, 1000 / 893.76, 1e-9), W_STEP(2, 240)}},
    };
    CHECK_FIXTURES(cases);

    /* At log_interval 1 a process prints "mfu -100.00%" for its first five iterations: only
     * the first of them (its iteration 0) is warm-up; a resumed process starts another run. */
    pfi_parse_cfg cfg = {.format = PFI_LOG_NANOGPT};
    pfi_parser *p;
    pfi_err e = {0};
    assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
    pfi_obs o;
    char line[128];
    int fed = 0;
    for (int k = 0; k < 8; k++) {
        snprintf(line, sizeof line, "iter %d: loss 4.2, time %.2fms, mfu %.2f%%", k,
                 k ? 900.0 : 9000.0, k < 5 ? -100.0 : 16.7);
        fed += pfi_parser_feed(p, line, &o);
    }
    assert_int_equal(fed, 7);
    assert_int_equal(pfi_parser_warmup(p), 1);
    for (int k = 2000; k < 2003; k++) { /* resumed at 2000 */
        snprintf(line, sizeof line, "iter %d: loss 3.1, time %.2fms, mfu -100.00%%", k,
                 k == 2000 ? 7000.0 : 900.0);
        fed += pfi_parser_feed(p, line, &o);
    }
    assert_int_equal(fed, 9);
    assert_int_equal(pfi_parser_warmup(p), 2);
    assert_int_equal(pfi_parser_untimed(p), 0);
    assert_near(o.value, 1000 / 900.0, 1e-12);
    /* a fork without the mfu field: nothing dropped */
    assert_int_equal(pfi_parser_feed(p, "iter 0: loss 4.2, time 9000.00ms", &o), 1);
    pfi_parser_free(p);
}

static void test_llmc(void **state)
{
    static const fixture_case cases[] = {
        {"llmc.log", {.format = PFI_LOG_AUTO},
         {W_FORMAT(PFI_LOG_LLMC), W_N(5), W_VALUE(0, 91886, 0)}},
        /* With the start-up table, the step time and the batch in tokens are used instead. */
        {"llmc-table.log", {.format = PFI_LOG_AUTO},
         {W_N(1), W_TOKENS_PER_STEP(4096), W_SEQ_LEN(1024), W_VALUE(0, 4096 / 0.04457, 1e-9)}},
        {"llmc-cpu.log", {.format = PFI_LOG_AUTO},
         {W_FORMAT(PFI_LOG_LLMC), W_N(3), W_UNIT(0, PFI_OU_STEPS), W_VALUE(1, 1 / 2.453, 1e-9)}},
    };
    CHECK_FIXTURES(cases);
}

static void test_lightning(void **state)
{
    static const fixture_case cases[] = {
        {"lightning.log", {.format = PFI_LOG_AUTO, .tokens_per_step = 1000},
         {W_FORMAT(PFI_LOG_LIGHTNING), W_N(4), W_KIND(0, PFI_OBS_COUNT),
          W_VALUE(0, 1651000, 0)}},
        /* "Training:" bars are not epochs */
        {"lightning-epochs.log", {.format = PFI_LOG_AUTO, .tokens_per_step = 1000},
         {W_FORMAT(PFI_LOG_LIGHTNING), W_N(5), W_VALUE(0, 0, 0), W_VALUE(4, 4000, 0)}},
    };
    CHECK_FIXTURES(cases);
}

/* Lightning's RichProgressBar (before: not read at all).  The fixture is a console that is no
 * terminal: one row per epoch, metrics wrapped onto further lines. */
static void test_lightning_rich(void **state)
{
    static const double rate[10] = {2.41, 2.55, 2.55, 2.55, 2.56, 2.56, 2.56, 2.40, 2.56, 2.56};
    run r;
    for (int offline = 0; offline < 2; offline++) {
        pfi_parse_cfg cfg = {.format = PFI_LOG_AUTO, .tokens_per_step = 1000, .offline = offline};
        parse_file("lightning-rich.log", &cfg, &r);
        assert_int_equal(pfi_parser_format(r.p), PFI_LOG_LIGHTNING);
        assert_int_equal(r.n, 10);
        for (int i = 0; i < 10; i++) {
            assert_int_equal(r.obs[i].kind, offline ? PFI_OBS_RATE : PFI_OBS_COUNT);
            assert_int_equal(r.obs[i].unit, PFI_OU_TOKENS);
            assert_int_equal(r.obs[i].step, 910);
            assert_near(r.obs[i].value, offline ? rate[i] * 1000 : 910000, 1e-12);
        }
        close_run(&r);
    }

    /* To a terminal: each redraw is "\r\033[2K" (a cursor-up and erase per further row) and
     * the row in colour, no newline; during validation the training row is drawn again,
     * unchanged, above the validation bar (not the epoch's).  Rich has no speed before its
     * second sample ("0.00it/s"); a customized column may state seconds per step. */
#define ROW(n, t, r)                                                                        \
    "\r\033[2K\033[37mEpoch 3/9 \033[0m \033[38;2;98;6;224m\xe2\x94\x81\xe2\x94\x81"             \
    "\033[0m\033[38;5;237m\xe2\x95\xba\xe2\x94\x81\033[0m " n "/910 \033[2m" t " \xe2\x80\xa2 "     \
    "0:04:15\033[0m \033[2;4m" r "\033[0m \033[3mv_num: mcyz train/loss: 1.943\033[0m"
    static const char term[] =
        "\033[?25l" ROW("0", "0:00:00", "0.00it/s") ROW("1", "0:00:00", "0.00it/s")
            ROW("2", "0:00:01", "2.55it/s") ROW("3", "0:00:01", "2.50it/s")
            ROW("3", "0:00:01", "2.50it/s") "\n\033[1mValidation\033[0m \xe2\x94\x81 5/50 "
            "0:00:01 \xe2\x80\xa2 0:00:09 5.12it/s"
            "\r\033[2K\033[1A\033[2K" ROW("3", "0:00:01", "2.50it/s") "\n\033[1mValidation\033[0m "
            "\xe2\x94\x81 6/50 0:00:01 \xe2\x80\xa2 0:00:08 5.13it/s"
            "\r\033[2K\033[1A\033[2K" ROW("4", "1 day, 0:00:02", "2.51s/it")
            "\033[?25h\n";
#undef ROW
    for (int offline = 0; offline < 2; offline++) {
        pfi_parse_cfg cfg = {.format = PFI_LOG_AUTO, .tokens_per_step = 1000, .offline = offline};
        parse_bytes(term, &cfg, &r);
        assert_int_equal(pfi_parser_format(r.p), PFI_LOG_LIGHTNING);
        if (!offline) { /* counts 0 to 4, the unchanged row 3 once */
            assert_int_equal(r.n, 5);
            for (int i = 0; i < 5; i++)
                assert_near(r.obs[i].value, i * 1000, 0);
        } else { /* 0 and 1 untimed; 2 at 2.55, 3 at 2.50 once, 4 at 1/2.51 steps/s */
            assert_int_equal(r.n, 3);
            assert_int_equal(pfi_parser_untimed(r.p), 2);
            assert_near(r.obs[0].value, 2550, 1e-12);
            assert_near(r.obs[1].value, 2500, 1e-12);
            assert_near(r.obs[2].value, 1000 / 2.51, 1e-12);
            assert_int_equal(r.obs[2].step, 4);
        }
        close_run(&r);
    }

    /* A row a narrow console cut before its speed, or one whose columns are not Rich's, gives
     * nothing. */
    static const char *const not_rows[] = {
        "Epoch 1/9  \xe2\x94\x81\xe2\x94\x81 910/910 0:05:58 \xe2\x80\xa2",
        "Epoch 1/9  \xe2\x94\x81\xe2\x94\x81 910/910 0:05:58 \xe2\x80\xa2 0:00:00",
        "Epoch 1/9  \xe2\x94\x81\xe2\x94\x81 910/910 0:05:58 0:00:00 2.55it/s",
        "Epoch 1/9 910/910 0:05:58 \xe2\x80\xa2 0:00:00 2.55it/s",
        "Epoch 1/9  \xe2\x94\x81 910/910 0:05 \xe2\x80\xa2 0:00:00 2.55it/s",
        "Epoch 1/9  \xe2\x94\x81 910/910 0:05:58 \xe2\x80\xa2 0:00:00 2.55",
        "Epoch 12 loss 5.3933 | train 2.2s",
    };
    for (size_t i = 0; i < sizeof not_rows / sizeof *not_rows; i++)
        assert_reads_nothing(PFI_LOG_LIGHTNING, not_rows[i]);
}

/* NeMo's Lightning bar states its step time ("train_step_timing in s=1.900") and no rate, and
 * its validation bar is drawn onto the same line ("...]dation DataLoader 0: : 51it [00:20,
 * 2.53it/s]").  Before, that validation bar was read as the epoch's: 51 steps at 2.53 steps/s
 * (offline) instead of 1/1.9. */
static void test_lightning_nemo(void **state)
{
    static const fixture_case cases[] = {
        {"nemo.log", {.format = PFI_LOG_AUTO, .tokens_per_step = 1048576},
         {W_FORMAT(PFI_LOG_LIGHTNING), W_N(1), W_KIND(0, PFI_OBS_RATE), W_UNIT(0, PFI_OU_TOKENS),
          W_VALUE(0, 1048576 / 1.9, 1e-12), W_PERIOD(0, 1.9, 1e-12), W_STEP(0, 2000)}},
    };
    CHECK_FIXTURES(cases);

    /* Without the timing, the same line has no rate of the epoch's bar: nothing is read (the
     * validation bar after it is not the epoch's), offline and online alike. */
    const char *noval = "Epoch 0: :   0%|          | 2000/603000 [1:03:17<317:00:58, v_num=, "
                        "reduced_train_loss=2.600, global_step=2e+3, consumed_samples=1.28e+6, "
                        "val_loss=2.800]dation DataLoader 0: : 51it [00:20,  2.53it/s]";
    assert_reads_nothing(PFI_LOG_LIGHTNING, noval);
}

/* NeMo 2 prints a line per step, no bar: its train_step_timing and global_batch_size give
 * samples/s (before: no line of it was read). */
static void test_nemo2_printer(void **state)
{
    static const fixture_case cases[] = {
        {"nemo2.log", {.format = PFI_LOG_AUTO, .seq_len = 1000},
         {W_FORMAT(PFI_LOG_LIGHTNING), W_N(6), W_KIND(0, PFI_OBS_RATE), W_UNIT(0, PFI_OU_TOKENS),
          W_VALUE(0, 1 * 1000 / 0.03146, 1e-12), W_PERIOD(0, 0.03146, 1e-12), W_STEP(0, 120),
          W_VALUE(4, 1000 / 0.0317, 1e-12)}},
        /* Without a sequence length: samples/s. */
        {"nemo2.log", {.format = PFI_LOG_AUTO},
         {W_UNIT(5, PFI_OU_SAMPLES), W_VALUE(5, 1 / 0.03147, 1e-12)}},
    };
    CHECK_FIXTURES(cases);
}

/* llm.c's start-up table behind a launcher's prefix ("0: " of srun -l): its total batch size
 * is still learned, so the step time converts (before: the row had to start the line, and the
 * lagging tok/s average, 91886, was read instead of 4096 / 44.57 ms). */
static void test_llmc_table_prefixed(void **state)
{
    pfi_parse_cfg cfg = {.format = PFI_LOG_AUTO};
    pfi_parser *p;
    pfi_err e = {0};
    assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
    FILE *f = fopen(FIXTURES "llmc-table.log", "rb");
    assert_non_null(f);
    char line[PFI_LINE_MAX], pre[PFI_LINE_MAX + 8];
    pfi_obs o, last = {0};
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        snprintf(pre, sizeof pre, "0: %s", line);
        if (pfi_parser_feed(p, pre, &o)) {
            last = o;
            n++;
        }
    }
    fclose(f);
    assert_int_equal(n, 1);
    assert_near(pfi_parser_tokens_per_step(p), 4096, 0);
    assert_near(pfi_parser_seq_len(p), 1024, 0);
    assert_int_equal(last.unit, PFI_OU_TOKENS);
    assert_near(last.value, 4096 / 0.04457, 1e-12);
    assert_near(last.period_s, 0.04457, 1e-12);
    pfi_parser_free(p);
}

/* nanoGPT's step time is read only with its "ms": "time 1.52s" (a fork's seconds) was read as
 * 1.52 ms, a thousand times too fast. */
static void test_nanogpt_unit(void **state)
{
    pfi_parse_cfg cfg = {.format = PFI_LOG_NANOGPT, .tokens_per_step = 1000};
    pfi_parser *p;
    pfi_err e = {0};
    assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
    pfi_obs o;
    assert_int_equal(pfi_parser_feed(p, "iter 2920: loss 3.9883, time 1099.34ms, mfu 15.34%", &o), 1);
    assert_near(o.value, 1000 / 1.09934, 1e-12);
    assert_int_equal(pfi_parser_feed(p, "iter 2921: loss 3.9883, time 1.52s, mfu 15.34%", &o), 0);
    assert_int_equal(pfi_parser_feed(p, "iter 2922: loss 3.9883, time 1099", &o), 0);
    pfi_parser_free(p);
}

/* Composer's console logger: "Train time/token: N" is read as a cumulative token count; no
 * other line of its block (throughput/tokens_per_sec, a window average; time/token_in_epoch)
 * gives an observation live.  Offline the counts have no clock and the window average is the
 * rate the log states: its throughput/tokens_per_sec, not the per-device one. */
static void test_composer(void **state)
{
    static const fixture_case c = {
        "composer.log", {.format = PFI_LOG_AUTO},
        {W_FORMAT(PFI_LOG_COMPOSER), W_N(1), W_KIND(0, PFI_OBS_COUNT), W_UNIT(0, PFI_OU_TOKENS),
         W_VALUE(0, 29254495, 0)}};
    run r;
    check_fixture(&c, &r);
    pfi_obs o;
    assert_int_equal(pfi_parser_feed(r.p, "\t Train time/token: 29,354,495", &o), 1);
    assert_near(o.value, 29354495, 0);
    assert_int_equal(pfi_parser_feed(r.p, "\t Train time/token_in_epoch: 29354495", &o), 0);
    assert_null(pfi_parser_why_none(r.p));
    close_run(&r);

    static const fixture_case offline = {
        "composer.log", {.format = PFI_LOG_AUTO, .offline = 1},
        {W_FORMAT(PFI_LOG_COMPOSER), W_N(2), W_KIND(0, PFI_OBS_COUNT), W_KIND(1, PFI_OBS_RATE),
         W_UNIT(1, PFI_OU_TOKENS), W_VALUE(1, 20082.8418, 0)}};
    check_fixture(&offline, &r);
    assert_non_null(pfi_parser_why_none(r.p));
    close_run(&r);
}

/* NeMo Automodel's step line: its tps is the job's tokens/s (before: no parser read it). */
static void test_automodel(void **state)
{
    static const fixture_case c = {
        "automodel.log", {.format = PFI_LOG_AUTO},
        {W_FORMAT(PFI_LOG_AUTOMODEL), W_PER_GPU(0), W_N(7), W_KIND(0, PFI_OBS_RATE),
         W_UNIT(0, PFI_OU_TOKENS), W_VALUE(0, 31346.32, 0), W_STEP(0, 8),
         W_VALUE(6, 32772.58, 0), W_STEP(6, 14)}};
    run r;
    check_fixture(&c, &r);
    pfi_obs o;
    /* Without its per-GPU figure the number is not taken for this format's tps. */
    assert_int_equal(pfi_parser_feed(r.p, "step 15 | epoch 0 | loss 0.6 | tps 32000.00 | x", &o), 0);
    close_run(&r);
}

static void test_pfi_protocol(void **state)
{
    pfi_parse_cfg cfg = {.format = PFI_LOG_AUTO};
    pfi_parser *p;
    pfi_err e = {0};
    assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
    pfi_obs o;
    assert_int_equal(pfi_parser_feed(p, "[rank0]: pfi: tokens=1,048,576 t=12.5 step=4", &o), 1);
    assert_int_equal(pfi_parser_format(p), PFI_LOG_PFI);
    assert_int_equal(o.kind, PFI_OBS_COUNT);
    assert_near(o.value, 1048576, 0);
    assert_near(o.job_t_s, 12.5, 0);
    assert_int_equal(o.step, 4);
    assert_int_equal(pfi_parser_feed(p, "pfi: tokens=", &o), 0);
    assert_int_equal(pfi_parser_feed(p, "pfi: tokens=abc", &o), 0);
    assert_int_equal(pfi_parser_feed(p, "pfi: tokens=-5", &o), 0);
    assert_int_equal(pfi_parser_feed(p, "pfi: tokens=7e6", &o), 1);
    assert_near(o.value, 7e6, 0);
    assert_true(isnan(o.job_t_s));
    pfi_parser_free(p);
}

static void test_regex(void **state)
{
    pfi_parse_cfg cfg = {.format = PFI_LOG_REGEX, .regex = "speed: ([0-9.,]+) ms/step",
                         .regex_unit = PFI_RU_MS_PER_STEP, .tokens_per_step = 2000};
    pfi_parser *p;
    pfi_err e = {0};
    assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
    pfi_obs o;
    assert_int_equal(pfi_parser_feed(p, "epoch 1 speed: 250.0 ms/step loss 2", &o), 1);
    assert_near(o.value, 8000, 1e-12);
    assert_near(o.period_s, 0.25, 1e-12);
    assert_int_equal(o.period_may_span, 1); /* may be a mean since the previous line */
    assert_int_equal(pfi_parser_feed(p, "epoch 1 speed: n/a ms/step", &o), 0);
    pfi_parser_free(p);

    /* A scale after the number in the group is the number's ("1.2k" was read as 1.2). */
    pfi_parse_cfg k = {.format = PFI_LOG_REGEX, .regex = "throughput: ([^ ]+) tokens/s",
                       .regex_unit = PFI_RU_TOKENS_PER_S};
    assert_int_equal(pfi_parser_new(&k, &p, &e), PFI_OK);
    assert_int_equal(pfi_parser_feed(p, "step 1 throughput: 1.2k tokens/s", &o), 1);
    assert_near(o.value, 1200, 1e-12);
    assert_int_equal(pfi_parser_feed(p, "step 2 throughput: 3.5M tokens/s", &o), 1);
    assert_near(o.value, 3.5e6, 1e-12);
    assert_int_equal(pfi_parser_feed(p, "step 3 throughput: 2B tokens/s", &o), 1);
    assert_near(o.value, 2e9, 1e-12);
    assert_int_equal(pfi_parser_feed(p, "step 4 throughput: 1,234 tokens/s", &o), 1);
    assert_near(o.value, 1234, 0);
    pfi_parser_free(p);
    /* The scale just past the group counts too: nanotron prints "tokens_per_sec: 22.8K" and
     * "elapsed_time_per_iteration_ms: 11.5K", and the natural regex leaves the K outside
     * (read as 22.8 tokens/s and 11.5 ms, silently).  Plain numbers stay plain in the same
     * run ("elapsed_time_per_iteration_ms: 45 | tokens_per_sec: 14.2K", nanotron PR #23). */
    static const fixture_case nanotron[] = {
        {"nanotron.log", {.regex = "tokens_per_sec: ([0-9.]+)", .regex_unit = PFI_RU_TOKENS_PER_S},
         {W_FORMAT(PFI_LOG_REGEX), W_N(3), W_UNIT(0, PFI_OU_TOKENS), W_VALUE(0, 22800, 1e-12),
          W_VALUE(2, 22800, 1e-12)}},
        {"nanotron.log", {.regex = "elapsed_time_per_iteration_ms: ([0-9.]+)",
                          .regex_unit = PFI_RU_MS_PER_STEP, .tokens_per_step = 262144},
         {W_N(3), W_PERIOD(0, 11.5, 1e-12), W_VALUE(1, 262144 / 11.5, 1e-12)}},
    };
    CHECK_FIXTURES(nanotron);
    pfi_parse_cfg after = {.regex = "per_iteration_ms: ([0-9.]+)", .regex_unit = PFI_RU_MS_PER_STEP};
    assert_int_equal(pfi_parser_new(&after, &p, &e), PFI_OK);
    assert_int_equal(pfi_parser_feed(p, "iteration: 991 / 1000 | consumed_tokens: 634K | elapsed_"
                                        "time_per_iteration_ms: 45 | tokens_per_sec: 14.2K |", &o), 1);
    assert_near(o.period_s, 0.045, 1e-12);
    pfi_parser_free(p);
    /* A letter after the scale makes a word or another unit of it: "2GB" is not 2e9, nor
     * "5Kelvin" 5000; but before the word of what is counted it scales: "5Ksamples/s" and
     * "52.4ktok/s" were read 1000 times too small (a review's log lines). */
    pfi_parse_cfg word = {.regex = "x: ([0-9.]+)", .regex_unit = PFI_RU_SAMPLES_PER_S};
    assert_int_equal(pfi_parser_new(&word, &p, &e), PFI_OK);
    assert_int_equal(pfi_parser_feed(p, "x: 2GB", &o), 1);
    assert_near(o.value, 2, 0);
    assert_int_equal(pfi_parser_feed(p, "x: 5Kelvin", &o), 1);
    assert_near(o.value, 5, 0);
    assert_int_equal(pfi_parser_feed(p, "x: 5Ksamples/s", &o), 1);
    assert_near(o.value, 5000, 0);
    assert_int_equal(pfi_parser_feed(p, "x: 52.4 ktok/s", &o), 1);
    assert_near(o.value, 52400, 1e-12);
    assert_int_equal(pfi_parser_feed(p, "x: 2 T x", &o), 1);
    assert_near(o.value, 2, 0);
    assert_int_equal(pfi_parser_feed(p, "x: 5K", &o), 1);
    assert_near(o.value, 5000, 0);
    pfi_parser_free(p);
    /* "44.57ms" with --unit ms/it: the m is the unit, not a scale. */
    pfi_parse_cfg ms = {.format = PFI_LOG_REGEX, .regex = "step time ([^ ]+)",
                        .regex_unit = PFI_RU_MS_PER_STEP};
    assert_int_equal(pfi_parser_new(&ms, &p, &e), PFI_OK);
    assert_int_equal(pfi_parser_feed(p, "step time 250ms", &o), 1);
    assert_near(o.value, 4, 1e-12);
    pfi_parser_free(p);

    pfi_parse_cfg bad = {.format = PFI_LOG_REGEX, .regex = "speed: [0-9"};
    assert_int_not_equal(pfi_parser_new(&bad, &p, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "throughput-regex"));
    pfi_parse_cfg nogroup = {.format = PFI_LOG_REGEX, .regex = "speed: [0-9]+"};
    assert_int_equal(pfi_parser_new(&nogroup, &p, &e), PFI_EINVAL);
    pfi_parse_cfg none = {.format = PFI_LOG_REGEX};
    assert_int_equal(pfi_parser_new(&none, &p, &e), PFI_EINVAL);
    pfi_regex_unit u;
    assert_int_equal(pfi_regex_unit_parse("furlongs/s", &u, &e), PFI_EINVAL);
    assert_int_equal(pfi_regex_unit_parse("s/it", &u, &e), PFI_OK);
    assert_int_equal(u, PFI_RU_S_PER_STEP);
}

static void test_garbage(void **state)
{
    static const fixture_case g = {"garbage.log", {.format = PFI_LOG_AUTO, .seq_len = 1024},
                                   {W_N(0), W_FORMAT(PFI_LOG_AUTO)}};
    run r;
    check_fixture(&g, &r);
    long lines, matched;
    pfi_parser_stats(r.p, &lines, &matched);
    assert_true(lines >= 8);
    assert_int_equal(matched, 0);
    close_run(&r);
    /* Every fixture, in every explicit format, parses without crashing (ASan watches). */
    const char *files[] = {"megatron.log", "torchtitan.log", "hf.log", "deepspeed.log",
                           "deepspeed-old.log", "nanogpt.log", "llmc.log", "lightning.log",
                           "lightning-rich.log", "garbage.log"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        for (int f = PFI_LOG_PFI; f < PFI_LOG_REGEX; f++) {
            pfi_parse_cfg c = {.format = (pfi_log_format)f};
            parse_file(files[i], &c, &r);
            close_run(&r);
        }
}

/* Hostile lines any job can print: a 62-digit number with an exponent (it wrote one byte past
 * pfi_num_at's buffer) and step counters too large for an integer (converting them was
 * undefined behaviour).  The step is then unknown (-1), never a wrapped number. */
static void test_hostile_numbers(void **state)
{
    char line[256];
    snprintf(line, sizeof line, "tokens per iteration will be: %s%se5",
             "12345678901234567890123456789012345678901234567890", "123456789012");
    double v = 0;
    assert_int_equal(pfi_num_after(line, "tokens per iteration will be:", &v), 0);
    pfi_parse_cfg nano = {.format = PFI_LOG_NANOGPT};
    pfi_parser *p;
    pfi_err e = {0};
    pfi_obs o;
    assert_int_equal(pfi_parser_new(&nano, &p, &e), PFI_OK);
    pfi_parser_feed(p, line, &o);
    assert_true(!(pfi_parser_tokens_per_step(p) > 0));
    pfi_parser_free(p);
    assert_int_equal(pfi_num_after("x: 1,234e5 ", "x:", &v), 1);
    assert_near(v, 1234e5, 0);

    static const struct {
        pfi_log_format f;
        const char *line;
    } big[] = {
        {PFI_LOG_PFI, "pfi: tokens=100 step=1e300"},
        {PFI_LOG_MEGATRON, " iteration 1e300/ 250000 | elapsed time per iteration (ms): 86545.2 |"
                           " global batch size:  1024 |"},
        {PFI_LOG_TORCHTITAN, "step: 1e300  loss:  3.24405  tps: 7,282"},
        {PFI_LOG_NANOGPT, "iter 1e300: loss 5.4983, time 33785.52ms, mfu 0.96%"},
        {PFI_LOG_LLMC, "step 1e300/74 | loss 3.2 | lr 3.00e-04 | 44.57 ms | 1% MFU | 91886 tok/s"},
        {PFI_LOG_LLMC, "step 1e300: train loss 3.2 (took 44.5 ms)"},
        {PFI_LOG_DEEPSPEED, "[timer.py:197:stop] 0/1e300, RunningAvgSamplesPerSec=158.3, "
                            "CurrSamplesPerSec=159.6, MemAllocated=1.75GB"},
    };
    for (size_t i = 0; i < sizeof big / sizeof *big; i++) {
        pfi_parse_cfg cfg = {.format = big[i].f};
        assert_int_equal(pfi_parser_new(&cfg, &p, &e), PFI_OK);
        memset(&o, 0, sizeof o);
        assert_int_equal(pfi_parser_feed(p, big[i].line, &o), 1);
        assert_int_equal(o.step, -1);
        pfi_parser_free(p);
    }
    /* The older DeepSpeed lines: a rate from two counters, the second beyond any integer. */
    pfi_parse_cfg ds = {.format = PFI_LOG_DEEPSPEED};
    assert_int_equal(pfi_parser_new(&ds, &p, &e), PFI_OK);
    assert_int_equal(pfi_parser_feed(p, "[timer.py:189:stop] 0/40, SamplesPerSec=83.5, x", &o), 0);
    assert_int_equal(pfi_parser_feed(p, "[timer.py:189:stop] 0/1e300, SamplesPerSec=83.7, x", &o),
                     1);
    assert_int_equal(o.step, -1);
    pfi_parser_free(p);
}

static void count_line(void *ctx, const char *line)
{
    (*(int *)ctx)++;
    assert_true(strlen(line) < PFI_LINE_MAX);
}

static void test_linebuf(void **state)
{
    pfi_linebuf lb = {0};
    int n = 0;
    const char *s = "a\r\nb\rc\n\n\nd";
    pfi_linebuf_push(&lb, s, strlen(s), count_line, &n);
    assert_int_equal(n, 3);
    pfi_linebuf_flush(&lb, count_line, &n);
    assert_int_equal(n, 4);
    char *big = malloc(3 * PFI_LINE_MAX);
    memset(big, 'x', 3 * PFI_LINE_MAX);
    big[3 * PFI_LINE_MAX - 1] = '\n';
    n = 0;
    pfi_linebuf_push(&lb, big, 3 * PFI_LINE_MAX, count_line, &n);
    assert_int_equal(n, 1);
    free(big);
    pfi_log_format f;
    pfi_err e = {0};
    assert_int_equal(pfi_log_format_parse("torchtitan", &f, &e), PFI_OK);
    assert_int_equal(f, PFI_LOG_TORCHTITAN);
    assert_int_equal(pfi_log_format_parse("keras", &f, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "megatron"));
}

/* A line longer than PFI_LINE_MAX is cut; a number straddling the cut must not be read as
 * its first digits (torchtitan's "tps: 1234567" was read as 123).  A number that ends right
 * at the cut, before a blank, is whole and kept. */
static int cut_feed(const char *tail, double *got)
{
    static const char head[] = "[rank0]:[titan] step: 5  loss: 1.0  tps: ";
    size_t pad = PFI_LINE_MAX - 1 - (sizeof head - 1) - 3; /* the cut falls after "123" */
    size_t n = pad + sizeof head - 1 + strlen(tail) + 1;
    char *s = malloc(n + 1);
    assert_non_null(s);
    memset(s, 'A', pad);
    memcpy(s + pad, head, sizeof head - 1);
    memcpy(s + pad + sizeof head - 1, tail, strlen(tail));
    s[n - 1] = '\n';
    s[n] = '\0';
    pfi_parse_cfg cfg = {.format = PFI_LOG_TORCHTITAN};
    run r;
    memset(&r, 0, sizeof r);
    pfi_err e = {0};
    assert_int_equal(pfi_parser_new(&cfg, &r.p, &e), PFI_OK);
    pfi_linebuf lb = {0};
    pfi_linebuf_push(&lb, s, n, on_line, &r);
    pfi_linebuf_flush(&lb, on_line, &r);
    free(s);
    int k = r.n;
    if (k > 0)
        *got = r.obs[0].value;
    close_run(&r);
    return k;
}

static void test_linebuf_cut_number(void **state)
{
    double v = 0;
    assert_int_equal(cut_feed("1234567  tflops: 1", &v), 0);
    assert_int_equal(cut_feed("123  tflops: 1", &v), 1);
    assert_near(v, 123, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_megatron),   cmocka_unit_test(test_megatron_banner_seq_len),
        cmocka_unit_test(test_megatron_start), cmocka_unit_test(test_megatron_first_iteration),
        cmocka_unit_test(test_torchtitan), cmocka_unit_test(test_hf),
        cmocka_unit_test(test_deepspeed),  cmocka_unit_test(test_nanogpt),
        cmocka_unit_test(test_llmc),       cmocka_unit_test(test_lightning),
        cmocka_unit_test(test_pfi_protocol), cmocka_unit_test(test_regex),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_hostile_numbers),
        cmocka_unit_test(test_linebuf),
        cmocka_unit_test(test_linebuf_cut_number),
        cmocka_unit_test(test_deepspeed_global_step),
        cmocka_unit_test(test_hf_bar_beside_deepspeed),
        cmocka_unit_test(test_megatron_deepspeed_seqlen),
        cmocka_unit_test(test_gpt_neox),
        cmocka_unit_test(test_bare_bar_gives_way),
        cmocka_unit_test(test_lightning_nemo),  cmocka_unit_test(test_lightning_rich),
        cmocka_unit_test(test_nemo2_printer),
        cmocka_unit_test(test_llmc_table_prefixed),
        cmocka_unit_test(test_nanogpt_unit),
        cmocka_unit_test(test_composer),
        cmocka_unit_test(test_automodel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
