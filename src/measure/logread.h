/* SPDX-License-Identifier: Apache-2.0 */
/* logread.h: the throughput of a finished log file, from the rates and times the log states.
 *
 * `pfi log FILE` reads a whole file (no job, no clock): every line goes through the same
 * parsers as a sweep (parse.h), in offline mode, so each throughput line gives the rate the
 * log itself states: Megatron's elapsed time per iteration, torchtitan's tps, a tqdm bar's
 * it/s or s/it (the Hugging Face Trainer, Lightning), DeepSpeed's samples/sec, nanoGPT's and
 * llm.c's step time, pfi lines' own t= clock.  The file is read twice: facts printed anywhere
 * (Megatron's argument dump, the Trainer's closing summary) convert every line.
 *
 * The series is summarized like a sweep's level: the steady window is what remains after
 * MSER truncation of the start (meter.h), over which the median, the mean and its 95%
 * batch-means confidence interval are given; each line weighs the same.  Lines that report
 * progress without a usable time are counted (untimed), never silently dropped. */
#ifndef PFI_MEASURE_LOGREAD_H
#define PFI_MEASURE_LOGREAD_H

#include "core/err.h"
#include "measure/parse.h"

typedef struct pfi_log_point {
    long line;      /* 1-based line of the file ('\n'; a bar's '\r' redraws are in one line) */
    long long step; /* the step the line names; -1 when it names none */
    double rate;    /* in the read's unit */
} pfi_log_point;

typedef struct pfi_logread {
    pfi_log_point *pts;
    int n;
    char unit[24];           /* "tokens/s", "samples/s", "steps/s" or "tokens/s per GPU" */
    int in_tokens;           /* 1 when the unit is tokens/s */
    pfi_log_format format;   /* detected (or given) */
    long lines;              /* lines read, ended by '\n' (as wc -l counts them) */
    long untimed;            /* progress lines without a usable time or rate */
    long warmup;             /* lines the log marks as its run's warm-up (pfi_obs.warmup) */
    long other_unit;         /* throughput lines in another unit than the first (dropped) */
    int cut_last;            /* 1 when the last line has no end (a log still being written,
                              * cut inside a number perhaps): it is not read */
    /* The steady summary over pts[win_first .. n). */
    int win_first;
    double median, mean, lo, hi; /* lo/hi NAN below 3 points */
    int steady;              /* the CI half-width is within 1% of the mean (a sweep's rule) */
    /* The log's own whole-run figure (the Trainer's train_samples_per_second), 0 if none. */
    double summary_rate;
    char summary_unit[24];
    int gpus_unused;         /* cfg.gpus given, and the log's rate is already the job's */
} pfi_logread;

typedef struct pfi_logread_cfg {
    pfi_parse_cfg parse;
    int gpus; /* > 0: multiplies a per-GPU rate (torchtitan) into the job's */
} pfi_logread_cfg;

/* Reads path.  PFI_ENOENT / PFI_EIO when it cannot be read, PFI_EINVAL when no line gave
 * throughput (the message says how many lines were read and untimed).  *out is filled on
 * success and must then be freed. */
int pfi_logread_file(const char *path, const pfi_logread_cfg *c, pfi_logread *out, pfi_err *err);
void pfi_logread_free(pfi_logread *r);

#endif
