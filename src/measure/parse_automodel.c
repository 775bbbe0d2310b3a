/* SPDX-License-Identifier: Apache-2.0 */
/* parse_automodel.c: NeMo Automodel's training line (its recipes' logging.info), one per step:
 *   2026-08-10 16:00:44 | INFO | root | step 8 | epoch 0 | loss 0.7839 | grad_norm 1.7024 |
 *   lr 1.00e-05 | mem 24.06 GiB | tps 31346.32(3918.29/gpu) | num_label_tokens 45579
 * tps is the job's tokens per second over the step (the figure in parentheses is per GPU); the
 * job's figure is used, so no GPU count is needed. */
#include <limits.h>
#include <string.h>

#include "measure/parse_impl.h"
#include "util/num.h"

int pfi_parse_automodel(pfi_parser *p, const char *line, pfi_obs *o)
{
    const char *t = strstr(line, "| tps ");
    double v, step;
    const char *e;
    /* The number must be followed by its per-GPU figure: "31346.32(3918.29/gpu)". */
    if (!t || !pfi_num_at(t + 6, &v, &e) || *e != '(' || !strstr(e, "/gpu)"))
        return 0;
    const char *s = strstr(line, "| step ");
    if (s && s < t && pfi_num_after(s, "| step ", &step))
        o->step = pfi_num_to_ll(step, LLONG_MAX);
    o->kind = PFI_OBS_RATE;
    o->unit = PFI_OU_TOKENS;
    o->value = v;
    return 1;
}
