/* SPDX-License-Identifier: Apache-2.0 */
/* merak.c: the pipeline partitions of Merak, the framework behind the Perseus measurements
 * (zeus_baseline CSVs: "uniform_transformer" or "custom:0,6,10,..."), as transformer layers
 * per stage for pfi_job_config.stage_layers. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "sim/physics.h"

/* The Perseus jobs ran on Merak, which cuts a model into units and a pipeline stage holds a
 * range of them ("custom:0,6,10,...": the first unit of each stage, then the unit count):
 * the embedding units first (GPT-2 style models have two: tokens and positions, the others
 * one), one unit per transformer layer, the output head last.  T5 cuts each decoder block in
 * two (attention units, FFN unit); with T5-3B's widths an encoder block holds 6/7 of a mean
 * layer's weights and each decoder half 4/7.  "uniform_transformer" spreads the layers evenly
 * (T5: encoder blocks over the first half of the stages, decoder halves over the second),
 * the embeddings on the first stage, the head on the last.  Gives transformer layers per
 * stage, in mean layers. */
#define MERAK_MAX_UNITS 256
int pfi_sim_merak_stage_layers(const char *method, const pfi_job_config *j, double *out,
                                pfi_err *err)
{
    double unit[MERAK_MAX_UNITS];
    int emb = strcmp(j->family, "gpt") == 0 ? 2 : 1, t5 = j->encdec != 0;
    int enc = t5 ? j->layers / 2 : j->layers, dec_units = t5 ? 2 * (j->layers - enc) : 0;
    int nu = emb + enc + dec_units + 1;
    if (nu > MERAK_MAX_UNITS)
        return pfi_err_set(err, PFI_EINVAL, "%s: too many layers", j->model);
    for (int u = 0; u < nu; u++)
        unit[u] = u < emb || u == nu - 1 ? 0 : !t5 ? 1 : u < emb + enc ? 6.0 / 7 : 4.0 / 7;
    int pp = j->pp, bound[PFI_SIM_MAX_STAGES + 1];
    if (pp > PFI_SIM_MAX_STAGES)
        return pfi_err_set(err, PFI_EINVAL, "%s: pp=%d", j->model, pp);
    if (strcmp(method, "uniform_transformer") == 0) {
        for (int s = 0; s <= pp; s++) {
            if (!t5)
                bound[s] = emb + (j->layers * s + pp - 1) / pp;
            else if (s <= pp / 2)
                bound[s] = emb + enc * s / (pp / 2);
            else
                bound[s] = emb + enc + dec_units * (s - pp / 2) / (pp - pp / 2);
        }
        bound[0] = 0;
        bound[pp] = nu;
    } else if (strncmp(method, "custom:", 7) == 0) {
        const char *p = method + 7;
        int k = 0;
        while (*p && k <= pp) {
            char *end;
            errno = 0;
            long v = strtol(p, &end, 10);
            if (end == p || errno || v < 0 || v > INT_MAX)
                break;
            bound[k++] = (int)v;
            p = *end == ',' ? end + 1 : end;
        }
        int ok = k == pp + 1 && !*p && bound[0] == 0 && bound[pp] == nu;
        for (int s = 0; ok && s < pp; s++)
            ok = bound[s] <= bound[s + 1];
        if (!ok)
            return pfi_err_set(err, PFI_EINVAL,
                               "%s: partition '%s' is not %d stages over its %d Merak units",
                               j->model, method, pp, nu);
    } else {
        return pfi_err_set(err, PFI_EINVAL, "%s: unknown partition method '%s'", j->model,
                           method);
    }
    for (int s = 0; s < pp; s++) {
        out[s] = 0;
        for (int u = bound[s]; u < bound[s + 1]; u++)
            out[s] += unit[u];
    }
    /* In exact arithmetic they add up to the layer count; make the sum exact for the check. */
    double sum = 0;
    for (int s = 0; s < pp; s++)
        sum += out[s];
    for (int s = 0; s < pp && sum > 0; s++)
        out[s] *= j->layers / sum;
    return PFI_OK;
}
