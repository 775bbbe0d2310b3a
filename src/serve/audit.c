/* SPDX-License-Identifier: Apache-2.0 */
/* audit.c: a decision as the daemon's audit log (store/audit.h) keeps it: the daemon's own types
 * (jobs, the apply report, the mode) become the log's plain rows. */
#include <stdlib.h>

#include "serve/serve_int.h"

long long pfi_srv_audit_decision(pfi_audit *a, double wall, const char *reason, double budget_w,
                                 int mode, const srv_job *jobs, int n_jobs,
                                 const pfi_apply_report *rep, double apply_ms)
{
    if (!a)
        return 0;
    pfi_audit_job *jr = malloc(sizeof *jr * (size_t)(n_jobs > 0 ? n_jobs : 1));
    pfi_audit_gpu *gr = malloc(sizeof *gr * (size_t)(rep->n > 0 ? rep->n : 1));
    long long id = 0;
    if (jr && gr) {
        for (int j = 0; j < n_jobs; j++) {
            const srv_job *jb = &jobs[j];
            jr[j] = (pfi_audit_job){.id = jb->id,
                                    .n_gpus = jb->n_gpus,
                                    .cap_w = jb->cap_w,
                                    .predicted_tps = jb->predicted_tps,
                                    .pfi30 = jb->pfi30,
                                    .sla = jb->sla,
                                    .weight = jb->weight,
                                    .curve = pfi_srv_curve_src_name(jb->curve_src)};
        }
        for (int i = 0; i < rep->n; i++) {
            const pfi_cap_change *c = &rep->gpu[i];
            gr[i] = (pfi_audit_gpu){.gpu = c->gpu,
                                    .before_w = c->before_w,
                                    .target_w = c->target_w,
                                    .limit_w = c->limit_w,
                                    .enforced_w = c->enforced_w,
                                    .held = c->held,
                                    .error = c->msg};
        }
        pfi_audit_decision d = {.wall = wall,
                                .reason = reason,
                                .budget_w = budget_w,
                                .mode = pfi_srv_mode_name(mode),
                                .sum_before_w = rep->sum_before_w,
                                .sum_after_w = rep->sum_after_w,
                                .peak_w = rep->peak_w,
                                .n_changed = rep->n_changed,
                                .n_failed = rep->n_failed,
                                .n_held = rep->n_held,
                                .n_mismatch = rep->n_mismatch,
                                .apply_ms = apply_ms,
                                .jobs = jr,
                                .n_jobs = n_jobs,
                                .gpus = gr,
                                .n_gpus = rep->n};
        id = pfi_audit_decision_add(a, &d);
    }
    free(jr);
    free(gr);
    return id;
}
