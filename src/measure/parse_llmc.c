/* SPDX-License-Identifier: Apache-2.0 */
/* parse_llmc.c: karpathy/llm.c.  train_gpt2.cu prints, every step,
 *   step   61/74 | loss 3.208939 (+nanz)| norm 1.4800 (+nanz)| lr 3.00e-04 | 44.57 ms |
 *   -100.0% bf16 MFU | 91886 tok/s
 * where tok/s is a bias-corrected moving average that would lag behind a cap change, so the
 * step time is used with the "total batch size" (tokens) of the start-up table when known.
 * The CPU reference train_gpt2.c prints "step 1: train loss 4.677779 (took 1234.567 ms)". */
#include <limits.h>
#include <string.h>

#include "measure/parse_impl.h"
#include "util/num.h"

int pfi_parse_llmc(pfi_parser *p, const char *line, pfi_obs *o)
{
    const char *s = strstr(line, "step ");
    if (!s)
        return 0;
    double step, ms, tok;
    const char *e;
    s += 5;
    while (*s == ' ')
        s++;
    if (!pfi_num_at(s, &step, &e))
        return 0;
    if (*e == '/' && strstr(e, " ms |") && strstr(e, "tok/s")) {
        /* The "| 44.57 ms |" field: the number just before " ms |". */
        const char *m = strstr(e, " ms |");
        const char *q = m;
        while (q > e && q[-1] != '|' && q[-1] != ' ')
            q--;
        if (!pfi_num_at(q, &ms, NULL) || !(ms > 0))
            return 0;
        o->step = pfi_num_to_ll(step, LLONG_MAX);
        o->kind = PFI_OBS_RATE;
        o->period_s = ms / 1000.0;
        if (pfi_parser_tokens_per_step(p) > 0) {
            o->unit = PFI_OU_STEPS;
            o->value = 1000.0 / ms;
        } else {
            const char *t = strstr(e, "tok/s");
            while (t > e && t[-1] == ' ')
                t--;
            while (t > e && t[-1] != ' ')
                t--;
            if (!pfi_num_at(t, &tok, NULL) || !(tok > 0))
                return 0;
            o->unit = PFI_OU_TOKENS;
            o->value = tok;
            o->period_s = __builtin_nan("");
        }
        return 1;
    }
    if (*e == ':' && strstr(e, "train loss") && pfi_num_after(e, "(took ", &ms) && ms > 0)
        return pfi_obs_step_ms(o, pfi_num_to_ll(step, LLONG_MAX), ms);
    return 0;
}
