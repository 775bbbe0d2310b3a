/* SPDX-License-Identifier: Apache-2.0 */
/* parse_nanogpt.c: nanoGPT's train.py, every log_interval iterations:
 *   iter 2920: loss 3.9883, time 1099.34ms, mfu 15.34%
 * The time is that of the last iteration alone; tokens per iteration come from the banner
 * "tokens per iteration will be: 491,520" (or --tokens-per-step).
 * A process prints "mfu -100.00%" until its fifth iteration; the first line of such a run is
 * its iteration 0, which compiles the model (9,371.81 ms against 894 after it,
 * tests/fixtures/logs/nanogpt-eval.log), a resumed run's too.  That line is the run's warm-up
 * (pfi_obs.warmup), as torchtitan's step 1. */
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
    const char *m = strstr(e, ", mfu ");
    double mfu;
    int cold = m && pfi_num_at(m + 6, &mfu, &e) && mfu < 0, first = cold && !p->nano_cold;
    p->nano_cold = cold;
    int rc = pfi_obs_step_ms(o, pfi_num_to_ll(it, LLONG_MAX), ms);
    o->warmup = rc && first;
    return rc;
}
