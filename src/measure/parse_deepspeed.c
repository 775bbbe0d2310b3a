/* SPDX-License-Identifier: Apache-2.0 */
/* parse_deepspeed.c: DeepSpeed's ThroughputTimer (deepspeed/utils/timer.py), printed every
 * steps_per_print steps:
 *   [timer.py:197:stop] 0/17, RunningAvgSamplesPerSec=158.31, CurrSamplesPerSec=159.62, ...
 * (newer releases: "epoch=0/micro_step=80/global_step=20, RunningAvgSamplesPerSec=...")
 * CurrSamplesPerSec is the last step's rate and is used as is.  Older releases printed only
 *   [timer.py:189:stop] 0/40, SamplesPerSec=83.48, MemAllocated=0.26GB
 * a running average since the start, which would blur every level into the previous ones:
 * the rate between two lines is recovered from the step counter k and the averages A
 * (elapsed = k*B/A, so rate = (k2-k1) / (k2/A2 - k1/A1) samples/s, B cancelling). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "measure/parse_impl.h"
#include "util/num.h"

/* The "E/S, " before the key: returns S or -1. */
static double step_before(const char *line, const char *key)
{
    const char *k = strstr(line, key);
    if (!k)
        return -1;
    const char *s = k;
    while (s > line && (s[-1] == ' ' || s[-1] == ','))
        s--;
    while (s > line && s[-1] != ' ' && s[-1] != ']')
        s--;
    const char *slash = strchr(s, '/');
    if (!slash || slash > k)
        return -1;
    double v;
    if (!pfi_num_at(slash + 1, &v, NULL))
        return -1;
    return v;
}

int pfi_parse_deepspeed(pfi_parser *p, const char *line, pfi_obs *o)
{
    double v;
    if (pfi_num_after(line, "CurrSamplesPerSec=", &v)) {
        /* Newer releases: "epoch=0/micro_step=80/global_step=20, RunningAvg...": the global step;
         * before: "0/17, RunningAvg..." (epoch/step). */
        double st;
        if (!pfi_num_after(line, "global_step=", &st))
            st = step_before(line, "RunningAvgSamplesPerSec=");
        o->step = pfi_num_to_ll(st, LLONG_MAX);
        o->kind = PFI_OBS_RATE;
        o->unit = PFI_OU_SAMPLES;
        o->value = v;
        return 1;
    }
    if (!strstr(line, ", SamplesPerSec=") || !pfi_num_after(line, ", SamplesPerSec=", &v) ||
        !(v > 0))
        return 0;
    double k = step_before(line, ", SamplesPerSec=");
    if (k < 0)
        return 0;
    int have = p->ds_have_prev;
    double k1 = p->ds_prev_step, a1 = p->ds_prev_avg;
    p->ds_prev_step = k;
    p->ds_prev_avg = v;
    p->ds_have_prev = 1;
    o->step = pfi_num_to_ll(k, LLONG_MAX);
    o->kind = PFI_OBS_RATE;
    o->unit = PFI_OU_SAMPLES;
    double dt = have && k > k1 ? k / v - k1 / a1 : NAN;
    /* The first line, a restarted counter or a non-increasing time: a DeepSpeed line, but no
     * interval to difference (NAN: counted untimed). */
    o->value = dt > 0 ? (k - k1) / dt : NAN;
    return 1;
}
