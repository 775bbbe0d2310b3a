/* SPDX-License-Identifier: Apache-2.0 */
/* parse_torchtitan.c: torchtitan's metrics line (torchtitan/components/metrics.py):
 *   [rank0]:[titan] 2025-05-18 16:04:46,338 - root - INFO - step: 14  loss:  3.24405  ...
 *   memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%
 * Older releases printed "wps:" for the same number.  tps is tokens per second PER GPU
 * (tokens since the last log / time / non-data-parallel size); pfi_parser_per_gpu says so.
 * torchtitan always logs step 1, and its interval runs from the metrics' start: model build,
 * compile and the first allocations (tps a fraction of the steady rate).  That line is no
 * rate of training but the run's warm-up (pfi_obs.warmup). */
#include <limits.h>
#include <string.h>

#include "measure/parse_impl.h"
#include "util/num.h"

int pfi_parse_torchtitan(pfi_parser *p, const char *line, pfi_obs *o)
{
    double v, step;
    if (!strstr(line, "step:"))
        return 0;
    if (!pfi_num_after(line, "tps:", &v) && !pfi_num_after(line, "wps:", &v))
        return 0;
    if (pfi_num_after(line, "step:", &step))
        o->step = pfi_num_to_ll(step, LLONG_MAX);
    o->kind = PFI_OBS_RATE;
    o->unit = PFI_OU_TOKENS;
    o->value = v;
    o->warmup = o->step == 1;
    return 1;
}
