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
 * limit) gets the direct solver's own answer.
 *
 * A node's clock depends only on its phase's power law and the budget, and a fit simulates the
 * same chips (the same variation) under the same limits for several jobs: their memory-bound
 * and communication phases draw the same power in every job.  So a node is first looked up in
 * a memo of solved nodes keyed by (law, budget), compared bit for bit: a hit is the very
 * bracket the solver would compute again. */
#include <math.h>
#include <pthread.h>
#include <sys/mman.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/physics.h"

/* A page of nodes: the solved bracket of each phase at each of its budgets.  Only the bits of
 * `set` are cleared when it is allocated (a fit allocates pages for every node it builds). */
struct pfi_sim_oppage {
    uint64_t set; /* bit i: node i is solved */
    pfi_sim_bracket ph[PFI_SIM_OPTABLE_PAGE][PFI_PH_N];
};
_Static_assert(PFI_SIM_OPTABLE_PAGE <= 64, "a page's nodes are the bits of one uint64_t");

/* The memo: direct-mapped, per thread, the latest node wins its slot.  An empty slot's key is
 * all zero, a law no node solves (its powers are 0 at both ends of its zero clock range).  Its
 * ~96 KB are allocated by the first node a thread solves and freed when that thread ends: a
 * thread that never simulates (a server's, a client library's) carries a pointer, not the
 * table. */
#define MEMO_SLOTS 1024
typedef struct memo_key {
    pfi_sim_power_law law;
    double budget;
} memo_key;
_Static_assert(sizeof(memo_key) == 8 * sizeof(double), "a memo key has no padding");
typedef struct memo_slot {
    memo_key key;
    pfi_sim_bracket b;
} memo_slot;
static _Thread_local memo_slot *memo;
static _Thread_local long memo_hits;
static pthread_key_t memo_owner; /* unmaps a thread's table when it ends */
static pthread_once_t memo_once = PTHREAD_ONCE_INIT;
static int memo_keyed;

/* The table is mapped, not taken from malloc: a ~96 KB block placed in the main arena moved
 * the heap's top so that the fit's own short-lived blocks made glibc trim and regrow the heap
 * on every cost evaluation (184,597 brk calls, 3x the CPU of `pfi sim validate`). */
static void memo_unmap(void *m)
{
    munmap(m, MEMO_SLOTS * sizeof(memo_slot));
}

static void memo_make_key(void)
{
    memo_keyed = pthread_key_create(&memo_owner, memo_unmap) == 0;
}

/* This thread's table, mapped the first time (zero-filled: every slot empty); NULL (no memo:
 * every node solved) when it cannot be. */
static memo_slot *memo_table(void)
{
    if (memo)
        return memo;
    pthread_once(&memo_once, memo_make_key);
    if (!memo_keyed)
        return NULL;
    void *m = mmap(NULL, MEMO_SLOTS * sizeof(memo_slot), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    if (pthread_setspecific(memo_owner, m) != 0) {
        memo_unmap(m);
        return NULL;
    }
    return memo = m;
}

long pfi_sim_optable_memo_hits(void) { return memo_hits; }

/* The slot of a key: from the figures that tell one chip, phase and budget from another (the
 * whole key is compared). */
static unsigned memo_index(const memo_key *k)
{
    uint64_t w[3];
    memcpy(&w[0], &k->law.base, sizeof w[0]);
    memcpy(&w[1], &k->law.dyn, sizeof w[1]);
    memcpy(&w[2], &k->budget, sizeof w[2]);
    uint64_t h = w[0] ^ (w[1] * 0x9e3779b97f4a7c15ull) ^ (w[2] * 0xc2b2ae3d27d4eb4full);
    /* splitmix64's finalizer: every bit of the three reaches the slot's bits */
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    return (unsigned)((h ^ (h >> 31)) & (MEMO_SLOTS - 1));
}

/* The memo's slot for (law, e) in m, and whether it holds that very key. */
static memo_slot *memo_find(memo_slot *m, const pfi_sim_power_law *law, double e, int *hit)
{
    memo_key k = {*law, e};
    memo_slot *s = &m[memo_index(&k)];
    *hit = memcmp(&s->key, &k, sizeof k) == 0;
    return s;
}

/* b (the whole clock range of law's phase) narrowed to its clock under budget e. */
static void node_root(const pfi_sim_power_law *law, double e, pfi_sim_bracket *b)
{
    memo_slot *m = memo_table();
    if (!m) {
        pfi_sim_phase_root(law, e, b);
        return;
    }
    int hit;
    memo_slot *s = memo_find(m, law, e, &hit);
    if (hit) {
        *b = s->b;
        memo_hits++;
        return;
    }
    pfi_sim_phase_root(law, e, b);
    *s = (memo_slot){{*law, e}, *b};
}

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
            /* A compute phase's activity is its job's own: no other job shares its nodes. */
            if (e > t->pmin[q] && e < t->pmax[q] && q == PFI_PH_COMPUTE)
                pfi_sim_phase_root(&t->law[q], e, b);
            else if (e > t->pmin[q] && e < t->pmax[q])
                node_root(&t->law[q], e, b);
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
        pfi_sim_power_law_of(g, w, p, eff, &t->law[p]);
        t->timed[p] = pfi_sim_phase_duration(w, p) > 0;
    }
    pfi_sim_laws_power(t->law, PFI_PH_N, g->sm_clock_min_mhz, t->pmin);
    pfi_sim_laws_power(t->law, PFI_PH_N, g->sm_clock_max_mhz, t->pmax);
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

/* Phase p under budget e at an end of its clock range (at or above its top power: the top
 * clock; at or below its floor: the lowest): returns 1 with its clock and power set in op, else
 * 0 (its clock lies between and is solved).  The budget binds op where it is below the top power
 * of a phase that takes time, as pfi_sim_operating_point says. */
static int phase_at_end(const pfi_sim_optable *t, double e, int p, pfi_sim_op *op)
{
    if (e >= t->pmax[p]) {
        op->f[p] = t->g->sm_clock_max_mhz;
        op->p[p] = t->pmax[p];
        return 1;
    }
    if (t->timed[p])
        op->binds = 1;
    if (e <= t->pmin[p]) {
        op->f[p] = t->g->sm_clock_min_mhz;
        op->p[p] = t->pmin[p];
        return 1;
    }
    return 0;
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
        if (phase_at_end(t, e, p, op))
            continue;
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
        pfi_sim_phase_root(&t->law[p], e, &br);
        op->f[p] = br.lo;
        op->p[p] = br.plo;
    }
}

/* Whether pfi_sim_optable_op's answer at e is the direct solver's: on a node of the grid (its
 * node was solved from the whole clock range) or outside the grid (solved directly). */
static int direct_at(const pfi_sim_optable *t, double e)
{
    double x = e / PFI_SIM_OPTABLE_STEP_W - t->k0;
    int k = x >= 0 && x < t->n - 1 ? (int)x : -1;
    return k < 0 || e == (t->k0 + k) * PFI_SIM_OPTABLE_STEP_W;
}

/* Up to OPS_CHUNK operating points at a time, with their roots solved together. */
#define OPS_CHUNK 64

static void ops_chunk(pfi_sim_optable *const *t, const double *e, pfi_sim_op *op, int n)
{
    pfi_sim_root r[OPS_CHUNK * PFI_PH_N];
    short dst[OPS_CHUNK * PFI_PH_N]; /* request * PFI_PH_N + phase of each root */
    memo_slot *put[OPS_CHUNK * PFI_PH_N]; /* where a root's node goes in the memo, or NULL */
    int nr = 0;
    memo_slot *m = memo_table();
    for (int i = 0; i < n; i++) {
        const pfi_sim_optable *ti = t[i];
        if (!direct_at(ti, e[i])) {
            pfi_sim_optable_op(t[i], e[i], &op[i]);
            continue;
        }
        op[i].binds = 0;
        for (int p = 0; p < PFI_PH_N; p++) {
            if (phase_at_end(ti, e[i], p, &op[i]))
                continue;
            /* As node_at solves a node: a compute phase directly (its activity is its job's
             * own), the others through the memo. */
            memo_slot *slot = NULL;
            if (p != PFI_PH_COMPUTE && m) {
                int hit;
                slot = memo_find(m, &ti->law[p], e[i], &hit);
                if (hit) {
                    op[i].f[p] = slot->b.lo;
                    op[i].p[p] = slot->b.plo;
                    memo_hits++;
                    continue;
                }
            }
            r[nr] = (pfi_sim_root){&ti->law[p], e[i],
                                   {ti->g->sm_clock_min_mhz, ti->g->sm_clock_max_mhz,
                                    ti->pmin[p], ti->pmax[p]}};
            dst[nr] = (short)(i * PFI_PH_N + p);
            put[nr++] = slot;
        }
    }
    pfi_sim_phase_roots(r, nr);
    for (int q = 0; q < nr; q++) {
        pfi_sim_op *o = &op[dst[q] / PFI_PH_N];
        o->f[dst[q] % PFI_PH_N] = r[q].b.lo;
        o->p[dst[q] % PFI_PH_N] = r[q].b.plo;
        if (put[q])
            *put[q] = (memo_slot){{*r[q].law, r[q].limit_w}, r[q].b};
    }
}

void pfi_sim_optable_ops(pfi_sim_optable *const *t, const double *e, pfi_sim_op *op, int n)
{
    for (int i = 0; i < n; i += OPS_CHUNK)
        ops_chunk(t + i, e + i, op + i, n - i < OPS_CHUNK ? n - i : OPS_CHUNK);
}
