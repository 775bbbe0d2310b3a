/* SPDX-License-Identifier: Apache-2.0 */
/* optable.c: one GPU's operating points on a grid of firmware budgets, solved as they are
 * first needed.
 *
 * In a transient the firmware budget e(t) = L + (e0 - L) exp(-t/tau) takes a new value at every
 * instant the simulator evaluates (integration points, samples), so a cache keyed on the exact
 * budget misses throughout.  A phase's clock grows with the budget, so the solved clocks at the
 * two grid budgets around e bracket the clock at e, and regula falsi from that narrow bracket
 * (the powers at its ends are kept with the nodes) ends in a few power evaluations instead of a
 * dozen.  The answer is not an interpolation: every clock is found to PFI_SIM_CLOCK_TOL below
 * the exact root, as the direct solver finds it, and a budget on the grid (every whole-watt
 * limit) gets the direct solver's own answer. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "sim/physics.h"

/* A page of nodes: the solved bracket of each phase at each of its budgets.  Only the bits of
 * `set` are cleared when it is allocated (a fit allocates pages for every node it builds). */
struct pfi_sim_oppage {
    uint64_t set; /* bit i: node i is solved */
    pfi_sim_bracket ph[PFI_SIM_OPTABLE_PAGE][PFI_PH_N];
};
_Static_assert(PFI_SIM_OPTABLE_PAGE <= 64, "a page's nodes are the bits of one uint64_t");

/* The bracket of phase p at node k, solved the first time it is asked for (NULL: out of
 * memory).  Nodes live in pages allocated when first touched: a table that sees one budget
 * costs one page, not the whole range. */
static const pfi_sim_bracket *node_at(pfi_sim_optable *t, int k, int p)
{
    pfi_sim_oppage **pg = &t->page[k / PFI_SIM_OPTABLE_PAGE];
    if (!*pg) {
        if (!(*pg = malloc(sizeof **pg)))
            return NULL;
        (*pg)->set = 0;
        if (k / PFI_SIM_OPTABLE_PAGE >= t->pages)
            t->pages = k / PFI_SIM_OPTABLE_PAGE + 1;
    }
    int i = k % PFI_SIM_OPTABLE_PAGE;
    pfi_sim_bracket *ph = (*pg)->ph[i];
    if (!((*pg)->set >> i & 1)) {
        double e = (t->k0 + k) * PFI_SIM_OPTABLE_STEP_W;
        for (int q = 0; q < PFI_PH_N; q++) {
            pfi_sim_bracket *b = &ph[q];
            *b = (pfi_sim_bracket){t->g->sm_clock_min_mhz, t->g->sm_clock_max_mhz, t->pmin[q],
                                   t->pmax[q]};
            if (e > t->pmin[q] && e < t->pmax[q])
                pfi_sim_phase_root(t->g, t->w, q, e, t->eff, b);
        }
        (*pg)->set |= (uint64_t)1 << i;
    }
    return &ph[p];
}

void pfi_sim_optable_init(pfi_sim_optable *t, const pfi_gpu_model *g, const pfi_sim_work *w,
                         double eff)
{
    t->g = g;
    t->w = w;
    t->eff = eff;
    for (int p = 0; p < PFI_PH_N; p++) {
        t->pmin[p] = pfi_sim_phase_power(g, w, p, g->sm_clock_min_mhz, eff);
        t->pmax[p] = pfi_sim_phase_power(g, w, p, g->sm_clock_max_mhz, eff);
    }
    /* Budgets stay between the settable limits; anything outside is solved directly. */
    t->k0 = (int)floor(g->min_limit_w / PFI_SIM_OPTABLE_STEP_W);
    t->n = (int)ceil(g->max_limit_w / PFI_SIM_OPTABLE_STEP_W) - t->k0 + 1;
    if (t->n > PFI_SIM_OPTABLE_PAGE * PFI_SIM_OPTABLE_PAGES)
        t->n = PFI_SIM_OPTABLE_PAGE * PFI_SIM_OPTABLE_PAGES;
    for (int i = 0; i < PFI_SIM_OPTABLE_PAGES; i++)
        t->page[i] = NULL;
    t->pages = 0;
}

void pfi_sim_optable_free(pfi_sim_optable *t)
{
    for (int i = 0; i < t->pages; i++) {
        free(t->page[i]);
        t->page[i] = NULL;
    }
    t->pages = 0;
}

void pfi_sim_optable_op(pfi_sim_optable *t, double e, pfi_sim_op *op)
{
    double x = e / PFI_SIM_OPTABLE_STEP_W - t->k0;
    int k = x >= 0 && x < t->n - 1 ? (int)x : -1;
    if (k < 0) {
        pfi_sim_operating_point(t->g, t->w, e, t->eff, op);
        return;
    }
    int on_node = e == (t->k0 + k) * PFI_SIM_OPTABLE_STEP_W;
    op->binds = 0;
    for (int p = 0; p < PFI_PH_N; p++) {
        if (e >= t->pmax[p]) {
            op->f[p] = t->g->sm_clock_max_mhz;
            op->p[p] = t->pmax[p];
            continue;
        }
        if (pfi_sim_phase_duration(t->w, p) > 0)
            op->binds = 1;
        if (e <= t->pmin[p]) {
            op->f[p] = t->g->sm_clock_min_mhz;
            op->p[p] = t->pmin[p];
            continue;
        }
        const pfi_sim_bracket *a = node_at(t, k, p);
        const pfi_sim_bracket *b = on_node || !a ? NULL : node_at(t, k + 1, p);
        if (a && on_node) {
            op->f[p] = a->lo;
            op->p[p] = a->plo;
            continue;
        }
        /* power(a->lo) <= budget of node k < e, and power(b->hi) > budget of node k+1 > e
         * (or the ends of the clock range, whose powers pmin < e < pmax). */
        pfi_sim_bracket br = {t->g->sm_clock_min_mhz, t->g->sm_clock_max_mhz, t->pmin[p],
                              t->pmax[p]};
        if (a && b)
            br = (pfi_sim_bracket){a->lo, b->hi, a->plo, b->phi};
        pfi_sim_phase_root(t->g, t->w, p, e, t->eff, &br);
        op->f[p] = br.lo;
        op->p[p] = br.plo;
    }
}
