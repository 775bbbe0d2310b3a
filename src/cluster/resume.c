/* SPDX-License-Identifier: Apache-2.0 */
/* resume.c: the site budget taken back after a restart of `pfi cluster serve`, from the
 * controller's store (grid.c keeps it) through the same path as any budget change
 * (controller.c), retried while nodes are not answering yet. */
#include <math.h>
#include <stdio.h>

#include "cluster/cl_int.h"

int pfi_cl_budget_resume(pfi_cl *c, int first, char *msg, size_t n)
{
    pfi_err err = {0};
    double w;
    pfi_cl_budget b = {.set = 1, .ramp_s = 0, .only_if_none = 1};
    msg[0] = '\0';
    int rc = pfi_cl_budget_saved(c, &w, &err);
    if (rc == PFI_OK && !isfinite(w))
        return 0; /* none saved */
    if (rc == PFI_OK) {
        b.watts = w;
        rc = pfi_cl_set_budget(c, &b, &err);
    }
    if (rc == PFI_EBUSY)
        return 0; /* the operator's budget stands */
    pthread_mutex_lock(&c->mu);
    int taken = rc != PFI_OK && isfinite(w) && c->budget.set && c->budget.watts == w;
    pthread_mutex_unlock(&c->mu);
    if (taken) { /* in force, not met yet: the loop applies it as nodes answer */
        snprintf(msg, n, "the site budget saved before the restart, %.0f W, is in force again, "
                 "not met yet: %s", w, err.msg);
        return 0;
    }
    if (rc != PFI_OK) {
        if (first)
            snprintf(msg, n, "the site budget saved before the restart is not in force yet "
                     "(tried again every %d s): %s", PFI_CL_RESUME_EVERY_S, err.msg);
        return isfinite(w); /* a damaged record is said once, not retried */
    }
    snprintf(msg, n, "the site budget saved before the restart, %.0f W, is in force again", w);
    return 0;
}
