/* SPDX-License-Identifier: Apache-2.0 */
/* parse_nanogpt.c: nanoGPT's train.py, every log_interval iterations:
 *   iter 2920: loss 3.9883, time 1099.34ms, mfu 15.34%
 * The time is that of the last iteration alone; tokens per iteration come from the banner
 * "tokens per iteration will be: 491,520" (or --tokens-per-step). */
#include <limits.h>
#include <string.h>

#include "measure/parse_impl.h"
#include "util/num.h"

int pfi_parse_nanogpt(pfi_parser *p, const char *line, pfi_obs *o)
{
    const char *s = strstr(line, "iter ");
    double it, ms;
    const char *e;
    if (!s || !pfi_num_at(s + 5, &it, &e) || *e != ':')
        return 0;
    /* The unit must be there: a fork printing "time 1.52s" (or a line cut after the number)
     * read as milliseconds would be a thousand times too fast. */
    const char *t = strstr(e, ", time ");
    if (!t || !pfi_num_at(t + 7, &ms, &e) || strncmp(e, "ms", 2) != 0 || !(ms > 0))
        return 0;
    return pfi_obs_step_ms(o, pfi_num_to_ll(it, LLONG_MAX), ms);
}
