/* SPDX-License-Identifier: Apache-2.0 */
/* progress.h: step i of N of long work on stderr, with the time elapsed and an estimate of the
 * time left.  Work loops (study/, core/) take a plain callback (pfi_progress_cb fits it) and do
 * no I/O themselves; the command owns a pfi_progress.
 *
 * On a terminal one line is rewritten in place, at most 5 times a second (and when a step
 * starts or ends; a finished step keeps its line).  Elsewhere (a log, a pipe, CI) it stays
 * silent for the first 10 s, then writes a plain line at most every 10 s, so short commands
 * print nothing and long ones leave a bounded trace.  PFI_PROGRESS=0 turns it off, =lines
 * forces plain lines, =tty forces the rewritten line.  Never writes to stdout. */
#ifndef PFI_UTIL_PROGRESS_H
#define PFI_UTIL_PROGRESS_H

#include <pthread.h>
#include <stdio.h>

typedef enum { PFI_PROGRESS_OFF, PFI_PROGRESS_TTY, PFI_PROGRESS_LINES } pfi_progress_mode;

typedef struct pfi_progress {
    FILE *out;
    pfi_progress_mode mode;
    double (*now)(void); /* the clock (pfi_clock_mono; tests pass their own) */
    char prog[48], step[96];
    double t0, step_t0, last;
    int done, total, line_open, printed;
} pfi_progress;

/* The mode for stderr: PFI_PROGRESS if set, else TTY on a terminal, LINES elsewhere. */
pfi_progress_mode pfi_progress_auto(void);

/* prog prefixes every line ("pfi study"); out is stderr in commands. */
void pfi_progress_init(pfi_progress *p, const char *prog, pfi_progress_mode mode, FILE *out);

/* Step `step` is at done of total (total <= 0: unknown, no estimate). */
void pfi_progress_update(pfi_progress *p, const char *step, int done, int total);

/* The callback form: ctx is a pfi_progress. */
void pfi_progress_cb(void *ctx, const char *step, int done, int total);

/* Clears an open terminal line (call before printing results). */
void pfi_progress_end(pfi_progress *p);

/* Steps of one piece of work done by several threads, counted under a lock and reported
 * outside it: fn (which need not be thread-safe) is called by one thread at a time, with counts
 * that only grow, the last call with the final count.  A thread that ends a step while another
 * is reporting leaves its count to that one and goes on, so no worker waits for the terminal. */
typedef void (*pfi_progress_fn)(void *ctx, const char *step, int done, int total);
typedef struct pfi_progress_count {
    pfi_progress_fn fn; /* NULL: only counted */
    void *ctx;
    const char *step;
    int done, total;
    int reporting; /* a thread is in fn */
    pthread_mutex_t mu;
} pfi_progress_count;

void pfi_progress_count_init(pfi_progress_count *c, pfi_progress_fn fn, void *ctx,
                             const char *step, int total);
void pfi_progress_count_step(pfi_progress_count *c);
void pfi_progress_count_destroy(pfi_progress_count *c);

#endif
