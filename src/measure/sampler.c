/* SPDX-License-Identifier: Apache-2.0 */
/* sampler.c: telemetry sampling thread (see sampler.h). */
#include "measure/sampler.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pfi_sampler {
    pfi_backend *b;
    int gpus[PFI_MAX_GPUS];
    int n;
    double period;
    int threaded;
    pthread_t thread;
    pthread_mutex_t mu;
    int stop;
    pfi_sample *buf;
    int ticks, cap;
    long errors;
    char last_err[PFI_ERR_MSG_MAX];
};

static void take(pfi_sampler *s)
{
    pfi_sample row[PFI_MAX_GPUS];
    pfi_err err = {0};
    long errs = 0;
    for (int i = 0; i < s->n; i++) {
        if (pfi_hw_sample(s->b, s->gpus[i], &row[i], &err) != PFI_OK) {
            pfi_sample_clear(&row[i]);
            row[i].t_s = pfi_hw_now(s->b);
            errs++;
        }
    }
    pthread_mutex_lock(&s->mu);
    if (errs) {
        s->errors += errs;
        snprintf(s->last_err, sizeof s->last_err, "%s", err.msg);
    }
    if (s->ticks == s->cap) {
        int cap = s->cap ? s->cap * 2 : 1024;
        pfi_sample *nb = realloc(s->buf, (size_t)cap * (size_t)s->n * sizeof *nb);
        if (!nb) {
            s->errors++;
            snprintf(s->last_err, sizeof s->last_err, "out of memory for telemetry");
            pthread_mutex_unlock(&s->mu);
            return;
        }
        s->buf = nb;
        s->cap = cap;
    }
    memcpy(s->buf + (size_t)s->ticks * (size_t)s->n, row, (size_t)s->n * sizeof *row);
    s->ticks++;
    pthread_mutex_unlock(&s->mu);
}

static void *loop(void *arg)
{
    pfi_sampler *s = arg;
    double next = pfi_hw_now(s->b);
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop)
            break;
        take(s);
        /* Keep the period on average even when a read is slow. */
        next += s->period;
        double now = pfi_hw_now(s->b);
        if (next < now)
            next = now;
        pfi_hw_sleep(s->b, next - now);
    }
    return NULL;
}

int pfi_sampler_new(pfi_backend *b, const int *gpus, int n, double period_s, int threaded,
                    pfi_sampler **out, pfi_err *err)
{
    *out = NULL;
    if (n < 1 || n > PFI_MAX_GPUS)
        return pfi_err_set(err, PFI_EINVAL, "bad number of GPUs to sample: %d", n);
    pfi_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    s->b = b;
    s->n = n;
    memcpy(s->gpus, gpus, (size_t)n * sizeof *gpus);
    s->period = period_s > 0 ? period_s : 0.1;
    s->threaded = threaded;
    pthread_mutex_init(&s->mu, NULL);
    if (threaded && pthread_create(&s->thread, NULL, loop, s) != 0) {
        pthread_mutex_destroy(&s->mu);
        free(s);
        return pfi_err_set(err, PFI_EIO, "cannot start the telemetry thread");
    }
    *out = s;
    return PFI_OK;
}

void pfi_sampler_free(pfi_sampler *s)
{
    if (!s)
        return;
    if (s->threaded) {
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
    }
    pthread_mutex_destroy(&s->mu);
    free(s->buf);
    free(s);
}

void pfi_sampler_tick(pfi_sampler *s)
{
    if (!s->threaded)
        take(s);
}

void pfi_sampler_reset(pfi_sampler *s)
{
    pthread_mutex_lock(&s->mu);
    s->ticks = 0;
    pthread_mutex_unlock(&s->mu);
}

int pfi_sampler_snapshot(pfi_sampler *s, pfi_sample **out, int *nticks, pfi_err *err)
{
    pthread_mutex_lock(&s->mu);
    size_t sz = (size_t)s->ticks * (size_t)s->n * sizeof **out;
    *out = malloc(sz ? sz : 1);
    if (!*out) {
        pthread_mutex_unlock(&s->mu);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    if (sz)
        memcpy(*out, s->buf, sz);
    *nticks = s->ticks;
    pthread_mutex_unlock(&s->mu);
    return PFI_OK;
}

double pfi_sampler_last_power(pfi_sampler *s)
{
    pthread_mutex_lock(&s->mu);
    double sum = 0;
    int n = 0;
    if (s->ticks > 0) {
        const pfi_sample *row = s->buf + (size_t)(s->ticks - 1) * (size_t)s->n;
        for (int i = 0; i < s->n; i++)
            if (row[i].have & PFI_F_POWER) {
                sum += row[i].power_w;
                n++;
            }
    }
    pthread_mutex_unlock(&s->mu);
    return n ? sum / n : NAN;
}

long pfi_sampler_errors(pfi_sampler *s, char *msg, int n)
{
    pthread_mutex_lock(&s->mu);
    long e = s->errors;
    if (msg && n > 0)
        snprintf(msg, (size_t)n, "%s", s->last_err);
    pthread_mutex_unlock(&s->mu);
    return e;
}
