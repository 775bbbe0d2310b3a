/* SPDX-License-Identifier: Apache-2.0 */
/* parse_composer.c: MosaicML Composer's console logger (llm-foundry's train.py), a block per
 * logged batch:
 *   [epoch=1][batch=5/5]:
 *            Train time/batch: 4
 *            Train time/token: 29254495
 *            ...
 *            Train throughput/tokens_per_sec: 20082.8418
 * "time/token" is the number of tokens trained so far: a cumulative count, timed when it
 * arrives.  SpeedMonitor's throughput/tokens_per_sec is an average over a window of batches
 * (100 by default) that would blur a cap change into the levels before it, so it is not used.
 * A finished file has no clock for the counts (time/train is in the unit SpeedMonitor was
 * given, hours unless configured otherwise): pfi log counts them untimed. */
#include <string.h>

#include "measure/parse_impl.h"

int pfi_parse_composer(pfi_parser *p, const char *line, pfi_obs *o)
{
    static const char key[] = "Train time/token:";
    const char *k = strstr(line, key);
    double v;
    if (!k || !pfi_num_after(k, key, &v))
        return 0;
    o->kind = PFI_OBS_COUNT;
    o->unit = PFI_OU_TOKENS;
    o->value = v;
    return 1;
}
