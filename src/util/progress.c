/* SPDX-License-Identifier: Apache-2.0 */
/* progress.c: see progress.h. */
#include "util/progress.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/clock.h"

enum { TTY_PERIOD_MS = 200, LINES_PERIOD_S = 10 };

pfi_progress_mode pfi_progress_auto(void)
{
    const char *e = getenv("PFI_PROGRESS");
    if (e && *e) {
        if (strcmp(e, "0") == 0 || strcmp(e, "off") == 0)
            return PFI_PROGRESS_OFF;
        if (strcmp(e, "lines") == 0)
            return PFI_PROGRESS_LINES;
        if (strcmp(e, "tty") == 0)
            return PFI_PROGRESS_TTY;
    }
    return isatty(2) ? PFI_PROGRESS_TTY : PFI_PROGRESS_LINES;
}

void pfi_progress_init(pfi_progress *p, const char *prog, pfi_progress_mode mode, FILE *out)
{
    memset(p, 0, sizeof *p);
    p->out = out;
    p->mode = mode;
    p->now = pfi_clock_mono;
    snprintf(p->prog, sizeof p->prog, "%s", prog);
    p->t0 = p->step_t0 = p->last = p->now();
}

/* "42 s", "3 min 04 s", "1 h 02 min" */
static void fmt_dur(char *buf, size_t cap, double s)
{
    long t = s > 0 ? (long)(s + 0.5) : 0;
    if (t < 60)
        snprintf(buf, cap, "%ld s", t);
    else if (t < 3600)
        snprintf(buf, cap, "%ld min %02ld s", t / 60, t % 60);
    else
        snprintf(buf, cap, "%ld h %02ld min", t / 3600, t / 60 % 60);
}

static void emit(pfi_progress *p, double now)
{
    char el[32], left[32] = "";
    fmt_dur(el, sizeof el, now - p->t0);
    if (p->total > 0 && p->done > 0 && p->done < p->total) {
        char d[24];
        double per = (now - p->step_t0) / p->done;
        fmt_dur(d, sizeof d, per * (p->total - p->done));
        snprintf(left, sizeof left, ", ~%s left", d);
    }
    char count[32] = "";
    if (p->total > 0)
        snprintf(count, sizeof count, " %d/%d", p->done, p->total);
    int last = p->total > 0 && p->done >= p->total;
    if (p->mode == PFI_PROGRESS_TTY)
        fprintf(p->out, "\r\033[K%s: %s%s (%s elapsed%s)%s", p->prog, p->step, count, el, left,
                last ? "\n" : "");
    else
        fprintf(p->out, "%s: %s%s (%s elapsed%s)\n", p->prog, p->step, count, el, left);
    p->line_open = p->mode == PFI_PROGRESS_TTY && !last;
    p->printed = 1;
    p->last = now;
    fflush(p->out);
}

void pfi_progress_update(pfi_progress *p, const char *step, int done, int total)
{
    if (!p || p->mode == PFI_PROGRESS_OFF)
        return;
    double now = p->now();
    int new_step = strncmp(p->step, step, sizeof p->step - 1) != 0;
    int finished_before = p->total > 0 && p->done >= p->total;
    if (new_step) {
        snprintf(p->step, sizeof p->step, "%s", step);
        p->step_t0 = now;
    }
    int finished = total > 0 && done >= total;
    if (!new_step && finished && finished_before)
        return; /* the same end twice */
    p->done = done;
    p->total = total;
    if (p->mode == PFI_PROGRESS_TTY) {
        if (new_step || finished || now - p->last >= TTY_PERIOD_MS / 1000.0)
            emit(p, now);
    } else if (now - p->last >= LINES_PERIOD_S) {
        emit(p, now);
    }
}

void pfi_progress_cb(void *ctx, const char *step, int done, int total)
{
    pfi_progress_update(ctx, step, done, total);
}

void pfi_progress_end(pfi_progress *p)
{
    if (p && p->line_open) {
        fputs("\r\033[K", p->out);
        fflush(p->out);
        p->line_open = 0;
    }
}

void pfi_progress_count_init(pfi_progress_count *c, pfi_progress_fn fn, void *ctx,
                             const char *step, int total)
{
    c->fn = fn;
    c->ctx = ctx;
    c->step = step;
    c->done = 0;
    c->total = total;
    c->reporting = 0;
    pthread_mutex_init(&c->mu, NULL);
}

void pfi_progress_count_step(pfi_progress_count *c)
{
    pthread_mutex_lock(&c->mu);
    c->done++;
    if (c->fn && !c->reporting) {
        c->reporting = 1;
        for (int shown = 0; shown != c->done;) {
            shown = c->done;
            pthread_mutex_unlock(&c->mu);
            c->fn(c->ctx, c->step, shown, c->total);
            pthread_mutex_lock(&c->mu);
        }
        c->reporting = 0;
    }
    pthread_mutex_unlock(&c->mu);
}

void pfi_progress_count_destroy(pfi_progress_count *c)
{
    pthread_mutex_destroy(&c->mu);
}
