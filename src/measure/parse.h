/* SPDX-License-Identifier: Apache-2.0 */
/* parse.h: throughput from a training job's own log lines.
 *
 * A parser is fed the job's output one line at a time (pfi_linebuf splits a byte stream on
 * '\n' and '\r', since progress bars redraw with '\r') and turns the lines that report progress
 * into observations: either a cumulative count (the pfi protocol, tqdm step counters) or a rate
 * over the last logging interval (tokens/s, samples/s, seconds per iteration).  It also learns,
 * from the job's start-up banner, what it needs to turn steps or samples into tokens (global
 * batch size, sequence length, tokens per iteration).
 *
 * Formats (docs/log-formats.md has real lines of each, with their source):
 *   pfi        "pfi: tokens=<cumulative tokens> [t=<seconds>]"   the one-line protocol
 *   megatron   "iteration N/ M | ... elapsed time per iteration (ms): X | ... global batch size: B"
 *   torchtitan "step: N  loss: ...  tps: X ..."            (tokens/s per GPU)
 *   hf         tqdm bar "N/M [mm:ss<mm:ss, X it/s]" once training is known (the
 *              "***** Running training *****" banner, a metrics dict such as {'loss': ...,
 *              'epoch': ...}, or a bar without a description); metrics dicts with quoted
 *              values (Transformers v5: {'train_samples_per_second': '42.64'}) too
 *   deepspeed  "CurrSamplesPerSec=X" (or the older running "SamplesPerSec=X")
 *   nanogpt    "iter N: loss X, time Tms, mfu M%"
 *   llmc       "step N/M | ... | T ms | ... | X tok/s"  or  "step N: train loss X (took T ms)"
 *   lightning  tqdm bar "Epoch E:  P%|...| N/M [mm:ss<mm:ss, X it/s, ...]" (NeMo's: "...,
 *              train_step_timing in s=X]", one step's time; NeMo 2: "Training epoch E,
 *              iteration N/M | ... global_batch_size: B | ... train_step_timing in s: X");
 *              Rich's row "Epoch E/M  ━━━ N/T 0:05:58 • 0:00:00 X.XXit/s ..."
 *   composer   "Train time/token: N" (Composer's console logger): cumulative tokens; offline
 *              "Train throughput/tokens_per_sec: X" (SpeedMonitor's window average)
 *   automodel  "step N | ... | tps X(Y/gpu) | ..." (NeMo Automodel): the job's tokens/s
 *   regex      --throughput-regex RE (first group is the number) with --unit
 * PFI_LOG_AUTO tries every format and keeps the first that reports throughput (provisionally
 * a bare progress bar, which any other format replaces, and DeepSpeed's timer line, which
 * Megatron's iteration line replaces). */
#ifndef PFI_MEASURE_PARSE_H
#define PFI_MEASURE_PARSE_H

#include <stddef.h>

#include "core/err.h"

typedef enum pfi_log_format {
    PFI_LOG_AUTO = 0,
    PFI_LOG_PFI,
    PFI_LOG_MEGATRON,
    PFI_LOG_TORCHTITAN,
    PFI_LOG_HF,
    PFI_LOG_DEEPSPEED,
    PFI_LOG_NANOGPT,
    PFI_LOG_LLMC,
    PFI_LOG_LIGHTNING,
    PFI_LOG_COMPOSER,
    PFI_LOG_AUTOMODEL,
    PFI_LOG_REGEX,
    PFI_LOG_NFORMATS
} pfi_log_format;

/* "auto", "pfi", "megatron", ... -> format; PFI_EINVAL lists the names. */
int pfi_log_format_parse(const char *name, pfi_log_format *out, pfi_err *err);
const char *pfi_log_format_name(pfi_log_format f);

typedef enum pfi_obs_kind {
    PFI_OBS_COUNT, /* value is a cumulative count since the job started (may restart at 0) */
    PFI_OBS_RATE,  /* value is a rate per second over the job's last logging interval */
} pfi_obs_kind;

typedef enum pfi_obs_unit { PFI_OU_TOKENS = 0, PFI_OU_SAMPLES, PFI_OU_STEPS } pfi_obs_unit;

typedef struct pfi_obs {
    pfi_obs_kind kind;
    pfi_obs_unit unit; /* tokens when the parser could convert, else what the log gave */
    double value;
    /* Seconds the rate was measured over when the log says so (one iteration's time); else
     * NAN and the interval since the previous observation is used. */
    double period_s;
    /* 1 when period_s may be a mean over the steps since the previous line (a --throughput-regex
     * time per step: many loops print the mean over their log interval, as Megatron does): the
     * rate is then timed from the previous line when that is longer ago.  Timed over period_s
     * alone, a line just after a cap change carried the old cap's steps into the new level
     * (+11% at 350 W). */
    int period_may_span;
    /* The job's own clock for counts (the pfi protocol's t=); NAN when absent. */
    double job_t_s;
    long long step; /* iteration number printed on the line; -1 unknown */
    /* 1 on the first observation after auto detection replaced a provisional format (a bare
     * progress bar taken for the Trainer's, or DeepSpeed's timer line once Megatron's iteration
     * line shows) by another: what came before was not the job's throughput, so the reader
     * forgets it (its unit, counts and rates). */
    int restart;
    /* 1 when the log marks the line as the run's warm-up (torchtitan's step 1, Megatron's first
     * iteration after its start banner and the next one when its share of that warm-up cannot
     * be taken out, nanoGPT's iteration 0): a real interval, but one that
     * holds the model build, compile and first allocations, not the job's rate.  The parser
     * counts it (pfi_parser_warmup) and gives no observation. */
    int warmup;
} pfi_obs;

/* Units a --throughput-regex capture can be in. */
typedef enum pfi_regex_unit {
    PFI_RU_TOKENS_PER_S = 0, /* "tokens/s" */
    PFI_RU_SAMPLES_PER_S,    /* "samples/s" (times the sequence length) */
    PFI_RU_STEPS_PER_S,      /* "it/s" (times tokens per step) */
    PFI_RU_S_PER_STEP,       /* "s/it" */
    PFI_RU_MS_PER_STEP,      /* "ms/it" */
    PFI_RU_TOKENS,           /* "tokens": a cumulative count */
    PFI_RU_SAMPLES,          /* "samples": a cumulative count */
} pfi_regex_unit;
int pfi_regex_unit_parse(const char *name, pfi_regex_unit *out, pfi_err *err);

typedef struct pfi_parse_cfg {
    pfi_log_format format;    /* PFI_LOG_AUTO to detect */
    const char *regex;        /* with PFI_LOG_REGEX (or any format: then regex wins) */
    pfi_regex_unit regex_unit;
    /* What the user told us; 0 = learn it from the log.  A value given here always wins. */
    double seq_len;           /* tokens per sample */
    double tokens_per_step;   /* tokens per iteration (global) */
    double samples_per_step;  /* global batch size */
    /* 1 when reading a finished file (pfi log): a progress bar gives the rate it states
     * (it/s, s/it) instead of its counter, since there is no arrival time to difference. */
    int offline;
} pfi_parse_cfg;

typedef struct pfi_parser pfi_parser;

int pfi_parser_new(const pfi_parse_cfg *cfg, pfi_parser **out, pfi_err *err);
void pfi_parser_free(pfi_parser *p);
/* Feeds one line (no trailing newline needed; ANSI colour codes are ignored).  Returns 1 and
 * fills *o when the line reports throughput, else 0.  Never fails: a garbage line is counted
 * and skipped. */
int pfi_parser_feed(pfi_parser *p, const char *line, pfi_obs *o);
/* The format in use (PFI_LOG_AUTO until one was detected). */
pfi_log_format pfi_parser_format(const pfi_parser *p);
/* Conversion factors known so far (0 when unknown). */
double pfi_parser_seq_len(const pfi_parser *p);
double pfi_parser_tokens_per_step(const pfi_parser *p);
/* 1 when the format reports throughput per GPU (torchtitan's tps): the job's throughput is
 * that times the number of data-parallel ranks. */
int pfi_parser_per_gpu(const pfi_parser *p);
/* Lines seen and lines that gave an observation. */
void pfi_parser_stats(const pfi_parser *p, long *lines, long *matched);
/* Progress lines the parser recognized that carry no usable time or rate (a bar's "?it/s", a
 * pfi line without t= when offline, a running average's first line). */
long pfi_parser_untimed(const pfi_parser *p);
/* Progress lines the log marks as its run's warm-up (pfi_obs.warmup), not read as rates. */
long pfi_parser_warmup(const pfi_parser *p);
/* Why a log of the format detected so far gives no rate to a finished-file read (offline),
 * when the format has a reason of its own (Composer's counts carry no clock); else NULL. */
const char *pfi_parser_why_none(const pfi_parser *p);
/* The whole-run rate the log states in its closing summary (the Hugging Face Trainer's
 * train_samples_per_second), converted like any observation; 0 when none was seen.
 * *unit gets its unit. */
double pfi_parser_summary(const pfi_parser *p, pfi_obs_unit *unit);
/* Copies what src learned from its log (batch size, sequence length, tokens per step, that
 * the Trainer is training) into dst: a finished file is read twice so that facts printed late
 * (a closing summary) convert every line. */
void pfi_parser_learn_from(pfi_parser *dst, const pfi_parser *src);

/* ---- splitting a byte stream into lines ---- */

#define PFI_LINE_MAX 4096
typedef struct pfi_linebuf {
    char buf[PFI_LINE_MAX];
    size_t len;
    int overflow; /* the current line was longer than PFI_LINE_MAX: its tail is dropped */
    /* '\n' pushed so far: within fn, the file line of the piece delivered is nl + 1 (a '\r'
     * redraw of a progress bar is a piece of the same file line). */
    long nl;
} pfi_linebuf;

/* Appends bytes; calls fn(ctx, line) for each complete line (split on '\n' or '\r', empty
 * lines skipped).  Over-long lines are cut at PFI_LINE_MAX-1 bytes, less the word (number)
 * that runs past the cut. */
void pfi_linebuf_push(pfi_linebuf *lb, const char *data, size_t n,
                      void (*fn)(void *ctx, const char *line), void *ctx);
/* Delivers a last unterminated line (at end of stream). */
void pfi_linebuf_flush(pfi_linebuf *lb, void (*fn)(void *ctx, const char *line), void *ctx);
/* Drops the line in progress, and the state of one cut at PFI_LINE_MAX (whose tail would be
 * dropped too): for a stream that starts again, such as a truncated log. */
void pfi_linebuf_reset(pfi_linebuf *lb);

#endif
