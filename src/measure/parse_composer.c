/* SPDX-License-Identifier: Apache-2.0 */
/* parse_composer.c: MosaicML Composer's console logger (llm-foundry's train.py), a block per
 * logged batch:
 *   [epoch=1][batch=5/5]:
 *            Train time/batch: 4
 *            Train time/token: 29254495
 *            ...
 *            Train throughput/tokens_per_sec: 20082.8418
 *            Train time/train: 0.5249
 * "time/token" is the number of tokens trained so far: a cumulative count, timed when it
 * arrives.  SpeedMonitor's throughput/tokens_per_sec is an average over a window of batches
 * (window_size, 100 by default) that would blur a cap change into the levels before it, so a
 * live reading does not use it.
 *
 * A finished file (pfi log) has no arrival times, and the counts no clock: time/train is in
 * the time_unit SpeedMonitor was given (hours unless configured), which the line does not name,
 * printed to 4 decimals (0.36 s in hours); the older wall_clock/train (seconds) came from
 * Composer versions that printed no time/token.  So offline the rate is the one the log states,
 * throughput/tokens_per_sec (tokens/s of the whole job, not the .../device/... figure), and the
 * counts are untimed.  It is printed only once SpeedMonitor's window has filled: a log without
 * it gives no throughput, and pfi_parser_why_none says why. */
#include <string.h>

#include "measure/parse_impl.h"

int pfi_parse_composer(pfi_parser *p, const char *line, pfi_obs *o)
{
    static const char key[] = "Train time/token:";
    static const char rate[] = "Train throughput/tokens_per_sec:";
    const char *k;
    double v;
    if (p->cfg.offline && (k = strstr(line, rate)) && pfi_num_after(k, rate, &v)) {
        o->kind = PFI_OBS_RATE;
        o->unit = PFI_OU_TOKENS;
        o->value = v;
        return 1;
    }
    if (!(k = strstr(line, key)) || !pfi_num_after(k, key, &v))
        return 0;
    o->kind = PFI_OBS_COUNT;
    o->unit = PFI_OU_TOKENS;
    o->value = v;
    return 1;
}
