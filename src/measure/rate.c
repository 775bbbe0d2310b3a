/* SPDX-License-Identifier: Apache-2.0 */
/* rate.c: observations -> rate samples (see meter.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "measure/meter.h"

void pfi_meter_init(pfi_meter *m)
{
    memset(m, 0, sizeof *m);
    m->scale = 1;
    m->last_arrival = NAN;
}

void pfi_meter_free(pfi_meter *m)
{
    free(m->s);
    m->s = NULL;
    m->n = m->cap = 0;
}

void pfi_meter_clear(pfi_meter *m)
{
    m->n = 0;
}

void pfi_meter_forget_before(pfi_meter *m, double t)
{
    int k = 0;
    while (k < m->n && m->s[k].t1 < t)
        k++;
    if (k > 0) {
        memmove(m->s, m->s + k, (size_t)(m->n - k) * sizeof *m->s);
        m->n -= k;
    }
}

double pfi_meter_recent_rate(const pfi_meter *m, double from)
{
    double sw = 0, swr = 0;
    for (int i = m->n - 1; i >= 0 && m->s[i].t0 >= from; i--) {
        double w = m->s[i].t1 - m->s[i].t0;
        sw += w;
        swr += w * m->s[i].rate;
    }
    return sw > 0 ? swr / sw : NAN;
}

static int push(pfi_meter *m, double t0, double t1, double rate, pfi_err *err)
{
    if (!(t1 > t0) || !isfinite(rate) || rate < 0)
        return PFI_OK;
    if (m->n == m->cap) {
        int cap = m->cap ? m->cap * 2 : 256;
        pfi_rate_sample *s = realloc(m->s, (size_t)cap * sizeof *s);
        if (!s)
            return pfi_err_set(err, PFI_ENOMEM, "out of memory for throughput samples");
        m->s = s;
        m->cap = cap;
    }
    m->s[m->n++] = (pfi_rate_sample){t0, t1, rate * m->scale};
    return PFI_OK;
}

int pfi_meter_add(pfi_meter *m, const pfi_obs *o, double t, pfi_err *err)
{
    if (o->restart) {
        /* The parser found the job's real format after a provisional one (parse.h): what
         * was measured before was another stream (a preprocessing bar) or another clock
         * (DeepSpeed's forward..step against Megatron's whole iteration), forgotten whole. */
        m->n = 0;
        m->unit_set = 0;
        m->have_count = 0;
        m->last_arrival = NAN;
    }
    if (!m->unit_set) {
        m->unit = o->unit;
        m->unit_set = 1;
    } else if (o->unit != m->unit) {
        m->dropped++;
        return PFI_OK;
    }
    double prev_arrival = m->last_arrival;
    m->last_arrival = t;
    if (o->kind == PFI_OBS_RATE) {
        double t0 = isfinite(o->period_s) && o->period_s > 0 ? t - o->period_s : prev_arrival;
        if (o->period_may_span && prev_arrival < t0)
            t0 = prev_arrival;
        if (!isfinite(t0))
            return PFI_OK; /* the first line: no interval to attribute it to */
        return push(m, t0, t, o->value, err);
    }
    /* A cumulative count. */
    if (!m->have_count) {
        m->have_count = 1;
        m->count = o->value;
        m->count_t = t;
        m->count_job_t = o->job_t_s;
        return PFI_OK;
    }
    double dc = o->value - m->count;
    if (dc < 0) {
        m->restarts++;
        m->count = o->value;
        m->count_t = t;
        m->count_job_t = o->job_t_s;
        return PFI_OK;
    }
    if (dc == 0)
        return PFI_OK; /* a redraw: the next change spans from the earlier time */
    double dt = t - m->count_t;
    /* The job's own clock, when it prints one, is free of pipe and scheduling delays. */
    if (isfinite(o->job_t_s) && isfinite(m->count_job_t) && o->job_t_s > m->count_job_t)
        dt = o->job_t_s - m->count_job_t;
    if (!(dt > 0))
        return PFI_OK; /* lines read together (one time for all): the next interval spans
                        * them; moving the count here lost all but one line's tokens a read */
    double t0 = m->count_t;
    m->count = o->value;
    m->count_t = t;
    m->count_job_t = o->job_t_s;
    return push(m, t0, t, dc / dt, err);
}
