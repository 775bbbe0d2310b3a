/* SPDX-License-Identifier: Apache-2.0 */
/* pfi log: the throughput of a finished training log, from the rates and times it states. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "measure/logread.h"
#include "report/report.h"
#include "util/json.h"

typedef struct log_opts {
    const char *format, *regex, *unit;
    double seq_len, tokens_per_step, batch_size;
    int gpus, as_json, quiet;
} log_opts;

static int log_cfg(const log_opts *o, pfi_logread_cfg *c, pfi_err *err)
{
    memset(c, 0, sizeof *c);
    int rc;
    if (o->format && (rc = pfi_log_format_parse(o->format, &c->parse.format, err)) != PFI_OK)
        return rc;
    if (o->regex && !o->unit)
        return pfi_err_set(err, PFI_EINVAL, "--throughput-regex needs --unit (tokens/s, "
                                            "samples/s, it/s, s/it, ms/it, tokens or samples)");
    if (o->unit && !o->regex)
        return pfi_err_set(err, PFI_EINVAL, "--unit goes with --throughput-regex");
    if (o->unit && (rc = pfi_regex_unit_parse(o->unit, &c->parse.regex_unit, err)) != PFI_OK)
        return rc;
    /* A count has no time of its own, and a finished log none to give it (pfi sweep times
     * each line as it arrives): these units could only end in "no throughput". */
    if (o->unit && (c->parse.regex_unit == PFI_RU_TOKENS || c->parse.regex_unit == PFI_RU_SAMPLES))
        return pfi_err_set(err, PFI_EINVAL, "--unit %s: a cumulative count has no time in a "
                                            "finished log; pfi log needs a rate or a time per "
                                            "step (tokens/s, samples/s, it/s, s/it, ms/it); "
                                            "pfi sweep times counts as they arrive",
                           o->unit);
    c->parse.regex = o->regex;
    const struct {
        const char *name;
        double v;
        double *dst;
    } given[] = {{"seq-len", o->seq_len, &c->parse.seq_len},
                 {"tokens-per-step", o->tokens_per_step, &c->parse.tokens_per_step},
                 {"batch-size", o->batch_size, &c->parse.samples_per_step}};
    for (size_t i = 0; i < sizeof given / sizeof *given; i++) {
        if (isnan(given[i].v))
            continue;
        if (!(given[i].v > 0 && isfinite(given[i].v)))
            return pfi_err_set(err, PFI_ERANGE, "--%s %g must be a positive number",
                               given[i].name, given[i].v);
        *given[i].dst = given[i].v;
    }
    if (o->gpus != INT_MIN && o->gpus < 1) /* 0 was taken as not given */
        return pfi_err_set(err, PFI_ERANGE, "--gpu-count %d must be positive", o->gpus);
    c->gpus = o->gpus == INT_MIN ? 0 : o->gpus;
    return PFI_OK;
}

/* Why the figures are not in tokens/s, and what would make them so. */
static const char *unit_note(const pfi_logread *r, const log_opts *o)
{
    if (r->in_tokens)
        return NULL;
    if (strcmp(r->unit, "tokens/s per GPU") == 0)
        return "the log gives tokens/s per GPU; --gpu-count N gives the job's";
    if (strcmp(r->unit, "samples/s") == 0 && !isnan(o->tokens_per_step))
        return "the log gives samples and no sequence length; --tokens-per-step does not "
               "convert samples (a step's samples vary with the log's batch size): --seq-len N "
               "gives tokens/s";
    if (strcmp(r->unit, "samples/s") == 0)
        return "the log gives samples and no sequence length; --seq-len N gives tokens/s";
    return "the log gives steps and no batch size or sequence length; --tokens-per-step N "
           "(or --batch-size N with --seq-len N) gives tokens/s";
}

static int print_json(const char *path, const pfi_logread *r, const log_opts *o)
{
    json_t *series = json_array();
    for (int i = 0; i < r->n; i++) {
        json_t *p = json_pack("{s:I, s:f}", "line", (json_int_t)r->pts[i].line, "rate",
                              r->pts[i].rate);
        json_object_set_new(p, "step", r->pts[i].step >= 0 ? json_integer(r->pts[i].step)
                                                           : json_null());
        json_array_append_new(series, p);
    }
    const char *note = unit_note(r, o);
    /* The name through pfi_json_text: a file named in Latin-1 bytes made jansson refuse the
     * document, and nothing was printed. */
    json_t *doc = json_pack(
        "{s:o, s:s, s:s, s:b, s:I, s:i, s:I, s:I, s:I, s:o}", "file", pfi_json_text(path), "format",
        pfi_log_format_name(r->format), "unit", r->unit, "tokens", r->in_tokens, "lines",
        (json_int_t)r->lines, "points", r->n, "untimed", (json_int_t)r->untimed, "warmup",
        (json_int_t)r->warmup, "other_unit", (json_int_t)r->other_unit, "series", series);
    json_t *st = json_pack("{s:f, s:f, s:b, s:i, s:i}", "median", r->median, "mean", r->mean,
                           "steady", r->steady, "window_first", r->win_first, "window_points",
                           r->n - r->win_first);
    /* A rate is never negative: a t-interval on a few scattered points can reach below 0,
     * and is cut there (the text says so). */
    json_object_set_new(st, "ci_lo", pfi_json_num(r->lo < 0 ? 0 : r->lo));
    json_object_set_new(st, "ci_hi", pfi_json_num(r->hi));
    json_object_set_new(st, "window_first_line", json_integer(r->pts[r->win_first].line));
    json_object_set_new(doc, "summary", st);
    json_object_set_new(doc, "last_line_cut", json_boolean(r->cut_last));
    json_object_set_new(doc, "note", note ? json_string(note) : json_null());
    if (r->summary_rate > 0)
        json_object_set_new(doc, "log_summary",
                            json_pack("{s:f, s:s}", "rate", r->summary_rate, "unit",
                                      r->summary_unit));
    return pfi_cli_print_json(doc);
}

static void print_text(const char *path, const pfi_logread *r, const log_opts *o)
{
    if (!o->quiet) {
        printf("%8s %10s %14s\n", "line", "step", r->unit);
        for (int i = 0; i < r->n; i++) {
            char step[24] = "-";
            if (r->pts[i].step >= 0)
                snprintf(step, sizeof step, "%lld", r->pts[i].step);
            char rate[40];
            printf("%8ld %10s %14s%s\n", r->pts[i].line, step,
                   pfi_fmt_fixed(rate, sizeof rate, r->pts[i].rate, 6),
                   i == r->win_first && i > 0 ? "   <- steady window starts" : "");
        }
    }
    printf("%s: format %s, %ld lines, %d throughput points, %ld progress lines without a "
           "usable time, %ld warm-up (a run's first interval: build, compile, allocations), "
           "%ld in another unit (dropped)\n",
           path, pfi_log_format_name(r->format), r->lines, r->n, r->untimed, r->warmup,
           r->other_unit);
    if (r->cut_last)
        printf("the last line has no end yet (a log still being written): not read\n");
    printf("steady window: lines %ld-%ld (%d points)%s\n", r->pts[r->win_first].line,
           r->pts[r->n - 1].line, r->n - r->win_first,
           r->steady ? "" : "; not steady by a sweep's rule (95% CI within 1% of the mean)");
    /* Fixed notation, as the sweep's table: an 8-GPU node's 1048576 tokens/s printed as
     * 1.04858e+06 lost its last digits. */
    char a[40], b[40];
    printf("median %s %s, ", pfi_fmt_fixed(a, sizeof a, r->median, 6), r->unit);
    printf("mean %s", pfi_fmt_fixed(a, sizeof a, r->mean, 6));
    if (isfinite(r->lo) && r->lo < 0)
        printf(" (95%% CI 0 to %s: the interval reaches below 0, too few or too scattered "
               "points to bound the mean)", pfi_fmt_fixed(b, sizeof b, r->hi, 6));
    else if (isfinite(r->lo))
        printf(" (95%% CI %s to %s)", pfi_fmt_fixed(a, sizeof a, r->lo, 6),
               pfi_fmt_fixed(b, sizeof b, r->hi, 6));
    else
        printf(" (no CI: fewer than 3 points)");
    printf("\n");
    if (r->summary_rate > 0)
        printf("the log's own whole-run figure: %s %s\n",
               pfi_fmt_fixed(a, sizeof a, r->summary_rate, 6), r->summary_unit);
    const char *note = unit_note(r, o);
    if (note)
        printf("unit: %s: %s\n", r->unit, note);
}

int pfi_cmd_log(int argc, char **argv)
{
    log_opts o = {.seq_len = NAN, .tokens_per_step = NAN, .batch_size = NAN, .gpus = INT_MIN};
    const pfi_opt opts[] = {
        {"log-format", PFI_OPT_STR, &o.format, "NAME", "log format (auto, pfi, megatron, torchtitan, "
                                                   "hf, deepspeed, nanogpt, llmc, lightning, composer, automodel, regex)"},
        PFI_OPT_ALIAS("format", PFI_OPT_STR, &o.format, "log-format"),
        {"seq-len", PFI_OPT_DOUBLE, &o.seq_len, "N", "tokens per sample"},
        {"tokens-per-step", PFI_OPT_DOUBLE, &o.tokens_per_step, "N", "tokens per iteration"},
        {"batch-size", PFI_OPT_DOUBLE, &o.batch_size, "N", "global batch size (samples/step)"},
        {"gpu-count", PFI_OPT_INT, &o.gpus, "N",
         "GPUs of the job: a per-GPU rate times N (--gpus N, its former name, still works; "
         "elsewhere --gpus is a list of GPUs)"},
        PFI_OPT_ALIAS("gpus", PFI_OPT_INT, &o.gpus, "gpu-count"),
        {"throughput-regex", PFI_OPT_STR, &o.regex, "RE",
         "ERE whose first group is the number (a k, M, G, B or T right after it, in the group or "
         "past it, scales it: 22.8K is 22800)"},
        {"unit", PFI_OPT_STR, &o.unit, "UNIT", "of the regex: tokens/s, samples/s, it/s, s/it, "
                                               "ms/it"},
        {"json", PFI_OPT_FLAG, &o.as_json, NULL, "one JSON document on stdout"},
        {"quiet", PFI_OPT_FLAG, &o.quiet, NULL, "the summary without the series"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi log FILE [--log-format F] [--seq-len N] [--tokens-per-step N] [--batch-size N] "
        "[--gpu-count N] [--json]",
        "Read a whole training log and print its throughput series and steady summary (median, "
        "mean with 95% CI, steady window), from the rates and times the log itself states.  In "
        "tokens/s when the log (or an option) gives what converts, else in the log's own unit, "
        "said.  Progress lines without a usable time are counted.  docs/log-formats.md lists "
        "the formats.",
        opts,
        "pfi log train.log --seq-len 4096\n"
        "pfi log megatron.log --log-format megatron --quiet --json"};
    char **pos;
    int npos;
    int rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    pfi_err err = {0};
    if (npos != 1) {
        pfi_err_set(&err, PFI_EINVAL, npos ? "one FILE only (got %d)" : "which FILE? (pfi log FILE)",
                    npos);
        return pfi_cli_fail("log", &err);
    }
    pfi_logread_cfg c;
    pfi_logread r;
    if (log_cfg(&o, &c, &err) != PFI_OK || pfi_logread_file(pos[0], &c, &r, &err) != PFI_OK)
        return pfi_cli_fail("log", &err);
    if (r.gpus_unused) /* taken and then doing nothing would let a wrong count pass unseen */
        fprintf(stderr, "pfi log: --gpu-count %d not used: a %s log gives the whole job's rate, "
                "not one GPU's\n", c.gpus, pfi_log_format_name(r.format));
    if (o.as_json)
        rc = print_json(pos[0], &r, &o);
    else
        print_text(pos[0], &r, &o);
    pfi_logread_free(&r);
    return o.as_json ? rc : PFI_EXIT_OK;
}
