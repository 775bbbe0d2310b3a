/* SPDX-License-Identifier: Apache-2.0 */
/* parse_pfi.c: pfi's own one-line protocol, for training loops that print nothing else usable:
 *     pfi: tokens=<cumulative tokens since the job started> [t=<seconds on the job's clock>]
 *     pfi: samples=<cumulative samples> [t=<seconds>]
 * Anything may precede "pfi:" (a rank prefix, a timestamp).  A count that goes down means the
 * job restarted its counter; the rate logic handles it. */
#include <limits.h>
#include <string.h>

#include "measure/parse_impl.h"
#include "util/num.h"

int pfi_parse_pfi(pfi_parser *p, const char *line, pfi_obs *o)
{
    const char *s = strstr(line, "pfi: ");
    if (!s)
        return 0;
    s += 5;
    double v, t;
    if (strncmp(s, "tokens=", 7) == 0 && pfi_num_at(s + 7, &v, NULL))
        o->unit = PFI_OU_TOKENS;
    else if (strncmp(s, "samples=", 8) == 0 && pfi_num_at(s + 8, &v, NULL))
        o->unit = PFI_OU_SAMPLES;
    else
        return 0;
    o->kind = PFI_OBS_COUNT;
    o->value = v;
    if (pfi_num_after(s, " t=", &t))
        o->job_t_s = t;
    double step;
    if (pfi_num_after(s, " step=", &step))
        o->step = pfi_num_to_ll(step, LLONG_MAX);
    return 1;
}
