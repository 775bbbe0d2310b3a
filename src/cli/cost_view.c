/* SPDX-License-Identifier: Apache-2.0 */
/* cost_view.c: how the cost of a characterization (core/cost.h) is printed, in one place for
 * pfi sweep, pfi runs show and pfi runs. */
#include <math.h>

#include "cli/cli.h"
#include "core/cost.h"
#include "core/run.h"
#include "store/store.h"
#include "util/json.h"

const char *pfi_cli_work_unit(int tput_unit)
{
    return tput_unit == PFI_SAMPLES_PER_S ? "samples" : "tokens";
}

json_t *pfi_cli_cost_json(const pfi_cost *c, const char *unit)
{
    json_t *o = json_object();
    json_object_set_new(o, "seconds", pfi_json_num(c->seconds));
    json_object_set_new(o, "gpu_s", pfi_json_num(c->gpu_s_total));
    json_object_set_new(o, "lost", pfi_json_num(c->lost_total));
    json_object_set_new(o, "lost_frac", pfi_json_num(c->lost_frac));
    json_object_set_new(o, "baseline_rate", pfi_json_num(c->t0));
    json_object_set_new(o, "unit", json_string(unit));
    return o;
}

void pfi_cli_cost_line(FILE *f, const pfi_cost *c, const char *unit)
{
    if (!isfinite(c->gpu_s_total)) {
        fprintf(f, "cost: unknown (no level durations)\n");
        return;
    }
    fprintf(f,
            "cost: %.0f s on %d GPUs = %.0f GPU-s; %.0f %s lost against %.1f %s/s (%.1f%% of the "
            "work in that time)\n",
            c->seconds, c->n_gpus, c->gpu_s_total, c->lost_total, unit, c->t0, unit,
            100 * c->lost_frac);
}

int pfi_cli_stored_cost(pfi_store *st, const pfi_run *run, pfi_cost *out, pfi_err *err)
{
    double dur[PFI_MAX_LEVELS];
    int n = run->n_levels < PFI_MAX_LEVELS ? run->n_levels : PFI_MAX_LEVELS;
    int rc = pfi_store_level_durations(st, run->id, dur, n, err);
    if (rc != PFI_OK)
        return rc;
    return pfi_cost_run(run, dur, out, err);
}
