/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_solve.c: the optimal allocator (see alloc.h for the problem).
 *
 * The grid problem is a multiple-choice knapsack: one grid cap per job, cost n_j * k (grid units),
 * value w_j T_j(k * step).  Its linear relaxation replaces each job's points by their upper
 * concave hull; the relaxation's optimum takes hull segments in decreasing order of value per
 * unit of cost until the budget runs out, and leaves at most one job between two hull vertices.
 * We find the last segment taken by a weighted selection on slopes that moves no segment: one
 * pass sums the cost of the slopes in each of up to 4096 buckets of their bit patterns, and
 * only the bucket where the budget runs out is gathered and sorted (linear time; a sort of a
 * million segments would alone cost the whole time budget of 100k jobs).  At the root of a
 * fresh solve of a long list that histogram (fixed buckets of the slopes' bits) is made while
 * the hulls are built, and the one bucket gathered is narrowed by a second one.  A workspace
 * (pfi_alloc_ws) solved again at the same hulls sorts them once instead (a radix sort), and
 * finds the last segment taken by a binary search on their costs' prefix sums.
 *
 * Hulls are stored packed, job after job, each in as many slots as it has candidate points.
 *
 * A job's hull is computed from its range ends and the grid points on either side of each of its
 * curve's breakpoints: between those the curve is linear, so every other grid point lies on a
 * chord and cannot be a hull vertex.  Hulls therefore cost O(points), not O(grid).
 *
 * Branch and bound: if the fractional job sits at a non-grid point, or inside a segment that
 * bridges a dip of a non-concave curve, its range is split there, [a, s] and [s+1, b], and both
 * halves are solved again (depth first).  A node is pruned when its relaxation cannot beat the
 * best allocation found; each node also rounds its relaxation down and fills what is left of the
 * budget greedily, one grid step at a time, which is what makes the first incumbent good. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/alloc.h"
#include "core/alloc_heap.h"
#include "core/alloc_ids.h"
#include "core/alloc_vec.h"

/* A hull segment named by its job and first vertex, with its slope and cost: the selection's
 * candidates (one bucket of slopes at a time, never every segment). */
typedef struct cand {
    double slope; /* value per grid unit of cost */
    long long cost;
    int j, i;
} cand;

#define SEL_BUCKETS 4096
/* The root's histogram, made while the hulls are built: a positive slope's bucket is the top
 * 15 bits of its pattern (exponent and 4 bits of mantissa, a sixteenth of an octave), fixed, so
 * no pass over the segments has to find their range first.  Made for lists of at least
 * FIX_MIN_JOBS jobs (below that, clearing it would cost more than the pass it saves). */
#define FIX_SHIFT 48
#define FIX_BUCKETS (1 << 15)
#define FIX_MIN_JOBS 4096

typedef struct solver {
    const pfi_alloc_job *jobs;
    int n;
    double step;
    double inv_step;  /* 1 / step when step is a power of two (products exact), else 0 */
    long long bu;     /* budget in grid units (watts / step) */
    int *a, *b;       /* current range of each job, grid indices */
    int *ng;          /* each job's GPUs (read by every pass; the job structs are wide) */
    /* Hull of each job's current range: hn[j] vertices (grid index hk, value hv) from hoff[j];
     * hs[hoff[j] + i] is the slope of segment i (vertex i to i + 1, made non-increasing) and
     * hm[j] how many of them are positive (the only ones a relaxation takes). */
    int *hoff, *hn, *hm;
    int *hk;
    double *hv, *hs;
    cand *cd;         /* the selection's bucket of candidates */
    size_t cd_cap;
    long long hist[SEL_BUCKETS]; /* the selection's cost per slope bucket */
    int cnt[SEL_BUCKETS];        /*   and segments per bucket */
    int nomem;        /* a buffer could not be had: the solve fails with PFI_ENOMEM */
    long long *fhist; /* the root hulls' cost per fixed slope bucket (FIX_BUCKETS), */
    int *fcnt;        /*   their segments per bucket, */
    long long fh_ns, fh_base; /* how many segments, and the ranges' minimum cost */
    int fh_on;        /*   added to by build_hull while set, */
    int fh_ok;        /*   and valid while the hulls are the ones built with them */
    int *pos;         /* indexed relaxation: hull vertex each job reached (while pos_ok), */
    int *rk;          /*   its grid index */
    double *rv;       /*   and its value */
    int pos_ok, tfull; /*  the prefix of the index taken whole */
    int *k, *best_k;  /* rounded allocation, best allocation found */
    double *kv, *best_kv; /* value of each job at k (at best_k) */
    unsigned char *kx, *best_kx; /* 1: kv is the job's weighted throughput at k computed as
                                  * pfi_alloc_tput_at does (not summed up by the fill) */
    double *hmax;     /* largest |hull value| of each job (the tolerance's scale) */
    double *wt;       /* each job's weight (1 for NaN or 0) */
    int *nk;          /* the fill's gains: nv[j] is job j's value at grid index nk[j] (-1: */
    double *nv;       /*   none yet), the one above its rounded cap last time, kept */
    double best;
    int have_best;
    int *heap;        /* greedy fill: jobs ordered by next step's gain per GPU */
    double *gain;
    pfi_topheap top;  /* the fill's heap, its top alone (fill_top) */
    double *tsc;      /*   the threshold's scratch (tsc_cap doubles) */
    struct fill_undo *ulog; /* what fill_top changed, to put back when it gives up */
    int tsc_cap, ulog_cap;
    int fill_whole;   /* opts->fill_whole */
    int vec;          /* the vector level of the per-job tests (opts->vec resolved) */
    /* A fresh build's last on-grid test (hull_on_grid), for the next job when its caps are the
     * same bits (same_caps): its answer, and the breakpoints inside its range (ga, gb). */
    int same_caps, g_ok, ga, gb, glo, ghi;
    double work, max_work, tol, rel_gap, root_ub;
    long long nodes;
    /* The root's segments sorted once (slope down, then job, then vertex), for re-solves of
     * the same hulls at other budgets: cum[t] is the cost of the first t, sj/si name them.
     * Used at the root node only, while idx_ok. */
    long long *cum;
    int *sj, *si;
    int nidx, idx_ok;
    double *ss;       /* the slope of each sorted segment */
    long long *cum2;  /* a second index of idx_cap + 1 entries: a patch writes it, then swaps */
    double *ss2;
    int *sj2, *si2, idx_cap, nidx_cap;
    unsigned (*rcnt)[1 << 11]; /* the index's sort, made in parts (index_stage): the counts of */
    int idx_next, idx_pos;     /*   each radix pass, the step to do next and where in it, */
    int idx_flip;              /*   and which half of the spare holds the keys */
} solver;

#define HUGE_PAGE ((size_t)2 << 20)

/* Buffers of several MiB (a fresh solve of 100k jobs writes ~30 MB once) are asked for on huge
 * page boundaries with the kernel's advice to back them with huge pages where it can: on 4 KiB
 * pages their first-touch faults cost as much as the solve itself.  Freed with free().  A
 * result's arrays too: the C library hands freed ones back to the system, so each solve of a
 * million jobs would fault its ~36 MB in again, 4 KiB at a time. */
static void *big_alloc(size_t bytes)
{
    if (bytes < 2 * HUGE_PAGE)
        return malloc(bytes);
    size_t sz = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    void *p = aligned_alloc(HUGE_PAGE, sz);
#ifdef MADV_HUGEPAGE
    if (p)
        madvise(p, sz, MADV_HUGEPAGE);
#endif
    return p;
}

/* pfi_alloc_tput_at (core/alloc.c), the same arithmetic on the same two points; the points are
 * found by a forward scan, which on short curves costs less than a binary search's branches. */
static double tput_at(const pfi_alloc_job *J, double c)
{
    const double *x = J->cap_w, *y = J->tput;
    int n = J->n_points;
    if (c <= x[0])
        return y[0];
    if (c >= x[n - 1])
        return y[n - 1];
    int lo = 0;
    if (n > 16) {
        int hi = n - 1;
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2;
            if (x[mid] <= c)
                lo = mid;
            else
                hi = mid;
        }
    } else {
        while (x[lo + 1] <= c)
            lo++;
    }
    return y[lo] + (y[lo + 1] - y[lo]) * (c - x[lo]) / (x[lo + 1] - x[lo]);
}

/* Loads ahead of a pass over the jobs in order: the structs 8 places ahead, and the start of
 * the curves (and the id) of the job 4 places ahead, whose struct came in by then.  Large
 * lists are read from memory; this overlaps the waits. */
static inline void prefetch_ahead(const pfi_alloc_job *jobs, int n, int j, int id)
{
    if (j + 8 < n) {
        __builtin_prefetch(&jobs[j + 8]);
        __builtin_prefetch((const char *)&jobs[j + 8] + 64);
    }
    if (j + 4 < n) {
        const pfi_alloc_job *K = &jobs[j + 4];
        if (id)
            __builtin_prefetch(K->id);
        if (K->cap_w && K->tput) {
            __builtin_prefetch(K->cap_w);
            __builtin_prefetch(K->cap_w + 8);
            __builtin_prefetch(K->tput);
            __builtin_prefetch(K->tput + 8);
        }
    }
}

static double val(const solver *S, int j, int k)
{
    return S->wt[j] * tput_at(&S->jobs[j], k * S->step);
}

/* val(j, k), from the fill's memory of job j when it is there: a re-solve whose rounding ends
 * where the last one did computes nothing. */
static double val_kept(solver *S, int j, int k)
{
    if (S->nk[j] != k) {
        S->nv[j] = val(S, j, k);
        S->nk[j] = k;
    }
    return S->nv[j];
}

/* The grid point below breakpoint x (in grid units), as (int)floor(x) for the x where that is
 * defined; -1 past the int range (such a breakpoint lies above every range: no candidate). */
static int grid_below(double x)
{
    return x < 2147483647.0 ? (int)x : -1; /* x > 0: truncation is floor */
}

/* A breakpoint in grid units: cap / step, by a product when step is a power of two (then the
 * same number exactly). */
static double grid_units(const solver *S, double cap)
{
    return S->inv_step > 0 ? cap * S->inv_step : cap / S->step;
}

static int same_bits(double x, double y)
{
    uint64_t a, b;
    memcpy(&a, &x, sizeof a);
    memcpy(&b, &y, sizeof b);
    return a == b;
}

static uint64_t slope_key(double s) /* positive doubles order as their bits do */
{
    uint64_t u;
    memcpy(&u, &s, sizeof u);
    return u;
}

/* How many candidate points job j's range [a_j, b_j] has (build_hull's, counted alike). */
static int count_cands(const solver *S, int j)
{
    const pfi_alloc_job *J = &S->jobs[j];
    int a = S->a[j], b = S->b[j], last = a, nc = 1;
    for (int i = 0; i < J->n_points; i++) {
        double x = grid_units(S, J->cap_w[i]);
        int f = grid_below(x);
        if (f < 0)
            continue;
        if (f > a && f < b && f > last) {
            last = f;
            nc++;
        }
        if (x - f > 1e-9 && f + 1 > a && f + 1 < b && f + 1 > last) {
            last = f + 1;
            nc++;
        }
    }
    return nc + (b > last);
}

/* The curve's value at cap x (not below the last candidate's): at is the first breakpoint
 * above the last candidate, moved on past x. */
static inline double curve_value(const double *cx, const double *cy, int np, int *at, double x)
{
    int i = *at;
    while (i < np && cx[i] <= x)
        i++;
    *at = i;
    if (i == 0)
        return cy[0];
    if (i == np)
        return cy[i - 1];
    if (x == cx[i - 1]) /* on a breakpoint: the same sum, its zero term */
        return cy[i - 1] + (cy[i] - cy[i - 1]) * 0.0; /* needs no division */
    return cy[i - 1] + (cy[i] - cy[i - 1]) * (x - cx[i - 1]) / (cx[i] - cx[i - 1]);
}

/* A hull being built: m vertices in hk/hv, the top two also in registers (k0, v0 below k1, v1;
 * grid indices below 2^31 as doubles, whose differences are exact as the ints' are). */
typedef struct hstack {
    int *hk;
    double *hv;
    int m;
    double k0, v0, k1, v1;
} hstack;

/* Grid point kk of value v put on top: first the vertices that lie on or below the chord to it
 * are dropped. */
static inline void hull_push(hstack *H, int kk, double v)
{
    double kd = kk;
    int m = H->m;
    if (m >= 2)
        for (;;) {
            double l = (H->v1 - H->v0) * (kd - H->k0);
            double r = (v - H->v0) * (H->k1 - H->k0);
            if (!(l <= r + 1e-13 * (fabs(l) + fabs(r)))) /* collinear up to rounding */
                break;
            m--;
            H->k1 = H->k0;
            H->v1 = H->v0;
            if (m < 2)
                break;
            H->k0 = H->hk[m - 2];
            H->v0 = H->hv[m - 2];
        }
    H->hk[m] = kk;
    H->hv[m] = v;
    H->m = m + 1;
    H->k0 = H->k1;
    H->v0 = H->v1;
    H->k1 = kd;
    H->v1 = v;
}

/* Whether every breakpoint of the curve (cx, np >= 1 points) is a grid point: its cap divided
 * by the step a whole number (x + 2^52 - 2^52 rounds x < 2^52 to a whole number), and that
 * number times the step its cap; caps ascend, so the ends bound the range. */
static int caps_on_grid(const solver *S, const double *cx, int np)
{
    const double R = 4503599627370496.0; /* 2^52 */
    double step = S->step, inv = S->inv_step, dev = 0;
    if (inv > 0) { /* cx * inv is cx / step; when whole, times step it is cx again */
        for (int i = pfi_alloc_vec_on_grid(S->vec, cx, np, inv) ? np : 0; i < np; i++) {
            double x = cx[i] * inv;
            dev += fabs((x + R) - R - x);
        }
    } else {
        for (int i = 0; i < np; i++) {
            double x = cx[i] / step, t = (x + R) - R;
            dev += fabs(t - x) + fabs(t * step - cx[i]);
        }
    }
    double x0 = grid_units(S, cx[0]), x1 = grid_units(S, cx[np - 1]);
    return dev == 0 && x0 >= 1 && x1 < 2147483647.0;
}

/* build_hull's candidates and vertices when every breakpoint is a grid point (caps_on_grid),
 * as measured curves usually are: the candidates are then a, the breakpoints strictly inside
 * (a, b), and b, and a breakpoint's value is its own throughput (the general pass's sum with a
 * zero term), so no point is interpolated but the range's ends.  The same candidates, values
 * and pops as the general pass, in the same order.  0 (nothing written): some breakpoint is
 * off the grid or out of range, and the general pass builds the hull.
 * In a fresh build (S->same_caps: the job before has these caps bit for bit) the test's answer
 * and, for the same range, the breakpoints inside it are the last call's (g_ok, glo, ghi). */
static int hull_on_grid(solver *S, const pfi_alloc_job *J, int a, int b, double w,
                        int *hk, double *hv, int *m_out, int *nc_out)
{
    const double *cx = J->cap_w, *cy = J->tput;
    int np = J->n_points;
    double step = S->step, inv = S->inv_step;
    if (np < 1)
        return 0;
    if (!S->same_caps)
        S->g_ok = caps_on_grid(S, cx, np);
    if (!S->g_ok)
        return 0;
    int lo = 0, hi = np; /* breakpoints [lo, hi) lie strictly inside (a, b) */
    if (S->same_caps && a == S->ga && b == S->gb) {
        lo = S->glo;
        hi = S->ghi;
    } else {
        while (lo < np && grid_units(S, cx[lo]) <= a)
            lo++;
        while (hi > lo && grid_units(S, cx[hi - 1]) >= b)
            hi--;
        S->ga = a;
        S->gb = b;
        S->glo = lo;
        S->ghi = hi;
    }
    int at = 0, nc = 1;
    hstack H = {hk, hv, 0, 0, 0, 0, 0};
    hull_push(&H, a, w * curve_value(cx, cy, np, &at, a * step));
    /* cx[i] = f * step exactly: the general pass's value there (at = i + 1) is w * (cy[i] +
     * (cy[i + 1] - cy[i]) * 0.0), which is w * (cy[i] + 0.0): throughputs are finite and not
     * below zero (check_job), so the product is a zero; added to a nonzero cy[i] it leaves it
     * as it is, and to a zero it gives +0 but for -0 + -0, which cannot happen (when cy[i] is
     * -0 the difference is cy[i + 1] + 0, not below zero, so the product is +0) */
    int end = hi < np - 1 ? hi : np - 1;
    for (int i = lo; i < end; i++, nc++)
        hull_push(&H, (int)(inv > 0 ? cx[i] * inv : cx[i] / step), w * (cy[i] + 0.0));
    if (lo < np && hi == np) { /* the last breakpoint inside the range: at = np */
        hull_push(&H, (int)(inv > 0 ? cx[np - 1] * inv : cx[np - 1] / step), w * cy[np - 1]);
        nc++;
    }
    if (b > a) {
        at = hi > lo ? hi : at;
        hull_push(&H, b, w * curve_value(cx, cy, np, &at, b * step));
        nc++;
    }
    *m_out = H.m;
    *nc_out = nc;
    return 1;
}

/* build_hull's candidates and vertices in general: the range's ends and the grid points on
 * either side of each breakpoint. */
static void hull_general(const solver *S, const pfi_alloc_job *J, int a, int b, double w,
                         int *hk, double *hv, int *m_out, int *nc_out)
{
    const double *cx = J->cap_w, *cy = J->tput;
    int np = J->n_points;
    double step = S->step;
    int nc_all = 0;
    hstack H = {hk, hv, 0, 0, 0, 0, 0};
    int last = a - 1;
    int at = 0; /* candidates ascend, so the curve segment holding each one only moves right */
    for (int i = -1; i <= np; i++) {
        /* candidate grid points, ascending: a, neighbours of each breakpoint, b */
        int cand_k[2], nc = 0;
        if (i < 0)
            cand_k[nc++] = a;
        else if (i == np)
            cand_k[nc++] = b;
        else {
            double x = grid_units(S, cx[i]);
            int f = grid_below(x);
            if (f < 0)
                continue;
            if (f > a && f < b)
                cand_k[nc++] = f;
            /* a breakpoint on the grid is its own neighbour */
            if (x - f > 1e-9 && f + 1 > a && f + 1 < b)
                cand_k[nc++] = f + 1;
        }
        for (int c = 0; c < nc; c++) {
            int kk = cand_k[c];
            if (kk <= last)
                continue;
            last = kk;
            nc_all++;
            hull_push(&H, kk, w * curve_value(cx, cy, np, &at, kk * step));
        }
    }
    *m_out = H.m;
    *nc_out = nc_all;
}

/* Job j's hull (its m vertices just written at hoff[j]): its slopes, how many are positive,
 * the fixed histogram's counts (while on) and its largest |value|. */
static inline void hull_shape(solver *S, int j, int m)
{
    const pfi_alloc_job *J = &S->jobs[j];
    int *hk = S->hk + S->hoff[j];
    double *hv = S->hv + S->hoff[j];
    S->hn[j] = m;
    /* vmax: as fmax(vmax, fabs(v)) over the vertices (no NaN here, so in any order): the
     * first, those the slopes' loop reads, then the rest */
    double vmax = fabs(hv[0]) > 0 ? fabs(hv[0]) : 0;
    double *hs = S->hs + S->hoff[j];
    long long n = J->n_gpus;
    double prev = INFINITY;
    long long *fhist = S->fh_on ? S->fhist : NULL; /* (the stores below alias nothing read) */
    int *fcnt = S->fcnt;
    int i = 0;
    for (; i + 1 < m; i++) {
        long long cost = n * (hk[i + 1] - hk[i]);
        double slope = (hv[i + 1] - hv[i]) / (double)cost;
        vmax = fabs(hv[i + 1]) > vmax ? fabs(hv[i + 1]) : vmax;
        /* Rounding can leave a later slope a hair above an earlier one; the selection needs
         * each job's taken segments to be a prefix, so slopes are made non-increasing. */
        if (slope > prev)
            slope = prev;
        prev = slope;
        if (!(slope > 0))
            break; /* hull slopes decrease: the rest gain nothing */
        hs[i] = slope;
        if (fhist) {
            uint64_t bk = slope_key(slope) >> FIX_SHIFT;
            fhist[bk] += cost;
            fcnt[bk]++;
        }
    }
    S->hm[j] = i;
    for (i += 2; i < m; i++)
        vmax = fabs(hv[i]) > vmax ? fabs(hv[i]) : vmax;
    S->hmax[j] = vmax;
}

/* Upper hull of job j's grid points on [a_j, b_j], its slopes and how many are positive.
 * Returns how many candidate points it looked at: no sub-range of [a_j, b_j] has more, so that
 * many slots hold the hull of any branch on the job.  count_only: only count them. */
static int build_hull(solver *S, int j, int count_only)
{
    if (count_only)
        return count_cands(S, j);
    const pfi_alloc_job *J = &S->jobs[j];
    int a = S->a[j], b = S->b[j];
    int *hk = S->hk + S->hoff[j];
    double *hv = S->hv + S->hoff[j];
    double w = (isnan(J->weight) || J->weight == 0) ? 1.0 : J->weight;
    int m, nc_all;
    if (!hull_on_grid(S, J, a, b, w, hk, hv, &m, &nc_all))
        hull_general(S, J, a, b, w, hk, hv, &m, &nc_all);
    hull_shape(S, j, m);
    return nc_all;
}

/* A fresh build's hulls 4 jobs at a time (pfi_alloc_vec_hulls4): jobs in a row whose caps are
 * the same bits and whose ranges are the same (a, b) have the same on-grid candidates, the
 * range's ends and the breakpoints [lo, hi) inside it (hull_on_grid's last answer, g_ok, ga,
 * gb, glo, ghi), so each lane pushes the same grid indices with its own job's values. */
typedef struct lane_grp {
    int j[4], n;           /* the jobs waiting, in list order */
    int nc;                /* candidates (K) made for the on-grid answer in S, 0: not made,
                            * -1: not for the lanes */
    double K[PFI_ALLOC_VEC_HULL_MAX]; /* their grid indices */
} lane_grp;

/* hull_on_grid's candidates for the range (S->ga, S->gb) of caps cx: their count, K filled;
 * -1 when there are fewer than 2 or too many for the lanes. */
static int lane_cands(const solver *S, const double *cx, int np, double *K)
{
    int a = S->ga, b = S->gb, lo = S->glo, hi = S->ghi, nc = 0;
    int end = hi < np - 1 ? hi : np - 1;
    int inner = (end > lo ? end - lo : 0) + (lo < np && hi == np);
    if (1 + inner + (b > a) < 2 || 1 + inner + (b > a) > PFI_ALLOC_VEC_HULL_MAX)
        return -1;
    double step = S->step, inv = S->inv_step;
    K[nc++] = a;
    for (int i = lo; i < end; i++)
        K[nc++] = (int)(inv > 0 ? cx[i] * inv : cx[i] / step);
    if (lo < np && hi == np)
        K[nc++] = (int)(inv > 0 ? cx[np - 1] * inv : cx[np - 1] / step);
    if (b > a)
        K[nc++] = b;
    return nc;
}

/* hull_shape for a hull made in lanes: its vertices (the candidates of bits, K[c] and V[4 c])
 * written, and the slopes the lanes computed (SL[4 c]) taken instead of divided again. */
static inline void lane_shape(solver *S, int j, const double *K, const double *V,
                              const double *SL, unsigned long long bits)
{
    int *hk = S->hk + S->hoff[j];
    double *hv = S->hv + S->hoff[j];
    double *hs = S->hs + S->hoff[j];
    long long n = S->ng[j];
    long long *fhist = S->fh_on ? S->fhist : NULL;
    int *fcnt = S->fcnt;
    int c = __builtin_ctzll(bits), m = 1, i = -1;
    hk[0] = (int)K[c];
    hv[0] = V[4 * c];
    double vmax = fabs(hv[0]) > 0 ? fabs(hv[0]) : 0, prev = INFINITY; /* as hull_shape's */
    for (bits &= bits - 1; bits; bits &= bits - 1, m++) {
        c = __builtin_ctzll(bits);
        hk[m] = (int)K[c];
        hv[m] = V[4 * c];
        vmax = fabs(hv[m]) > vmax ? fabs(hv[m]) : vmax;
        if (i >= 0)
            continue; /* past the positive slopes */
        double slope = SL[4 * c];
        if (slope > prev)
            slope = prev;
        prev = slope;
        if (!(slope > 0)) {
            i = m - 1;
            continue;
        }
        hs[m - 1] = slope;
        if (fhist) {
            uint64_t bk = slope_key(slope) >> FIX_SHIFT;
            fhist[bk] += n * (hk[m] - hk[m - 1]);
            fcnt[bk]++;
        }
    }
    S->hn[j] = m;
    S->hm[j] = i >= 0 ? i : m - 1;
    S->hmax[j] = vmax;
}

/* The waiting jobs' hulls: each job's values at the candidates as hull_on_grid computes them,
 * the hulls in lanes (a short group fills its other lanes with its first job), then each
 * job's vertices written and shaped in list order (scale summed in that order). */
static void lane_flush(solver *S, lane_grp *G, double *scale)
{
    double V[4 * PFI_ALLOC_VEC_HULL_MAX];
    int a = S->ga, b = S->gb, lo = S->glo, hi = S->ghi, nc = G->nc;
    double step = S->step;
    for (int l = 0; l < 4; l++) {
        int j = G->j[l < G->n ? l : 0];
        const pfi_alloc_job *J = &S->jobs[j];
        const double *cx = J->cap_w, *cy = J->tput;
        int np = J->n_points, at = 0, c = 0;
        double w = S->wt[j];
        V[l] = w * curve_value(cx, cy, np, &at, a * step);
        c++;
        int end = hi < np - 1 ? hi : np - 1;
        for (int i = lo; i < end; i++, c++)
            V[4 * c + l] = w * (cy[i] + 0.0); /* hull_on_grid's value (see there) */
        if (lo < np && hi == np)
            V[4 * c++ + l] = w * cy[np - 1];
        if (b > a) {
            at = hi > lo ? hi : at;
            V[4 * c + l] = w * curve_value(cx, cy, np, &at, b * step);
        }
    }
    unsigned long long alive[4];
    double N[4], SL[4 * PFI_ALLOC_VEC_HULL_MAX];
    for (int l = 0; l < 4; l++)
        N[l] = S->ng[G->j[l < G->n ? l : 0]];
    int done = pfi_alloc_vec_hulls4(S->vec, G->K, V, N, nc, alive, SL);
    for (int l = 0; l < G->n; l++) {
        int j = G->j[l];
        if (done)
            lane_shape(S, j, G->K, V + l, SL + l, alive[l]);
        else { /* not reached (the group is made only where the lanes take it) */
            int same = S->same_caps;
            S->same_caps = 1;
            build_hull(S, j, 0);
            S->same_caps = same;
        }
        S->fh_ns += S->hm[j];
        *scale += S->hmax[j];
    }
    G->n = 0;
}

/* Slope down, then job, then vertex: the order segments are taken in. */
static int seg_order(double s1, int j1, int i1, double s2, int j2, int i2)
{
    if (s1 != s2)
        return s1 > s2 ? -1 : 1;
    if (j1 != j2)
        return j1 < j2 ? -1 : 1;
    return (i1 > i2) - (i1 < i2);
}

static int cmp_cand(const void *x, const void *y)
{
    const cand *p = x, *q = y;
    return seg_order(p->slope, p->j, p->i, q->slope, q->j, q->i);
}

/* The root relaxation from the sorted index.  Its segments are in the order the relaxation
 * takes them (slope down, ties in job order), so what it takes is a prefix of the index: every
 * segment whose cost sum cum[t + 1] fits in e whole, then part of the next one.  The prefix is
 * kept (tfull, and pos[] with each job's vertex rk/rv there), so a new budget walks from the
 * last prefix's end to the new one: only the jobs whose segments lie between move. */
static int relax_indexed(solver *S, long long e, double *ub, int *fj, double *fx)
{
    int m = S->nidx;
    const long long *cum = S->cum;
    int lo = 0, hi = m; /* the largest t in [0, m] with cum[t] <= e */
    while (lo < hi) {
        int mid = hi - (hi - lo) / 2;
        if (cum[mid] <= e)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (!S->pos_ok) {
        memset(S->pos, 0, (size_t)S->n * sizeof *S->pos);
        for (int t = 0; t < lo; t++)
            S->pos[S->sj[t]]++;
        for (int j = 0; j < S->n; j++) {
            S->rk[j] = S->hk[S->hoff[j] + S->pos[j]];
            S->rv[j] = S->hv[S->hoff[j] + S->pos[j]];
        }
        S->pos_ok = 1;
    } else {
        for (int t = S->tfull; t < lo; t++) { /* more is taken */
            int j = S->sj[t], h = S->hoff[j] + ++S->pos[j];
            S->rk[j] = S->hk[h];
            S->rv[j] = S->hv[h];
        }
        for (int t = S->tfull; t > lo; t--) { /* less */
            int j = S->sj[t - 1], h = S->hoff[j] + --S->pos[j];
            S->rk[j] = S->hk[h];
            S->rv[j] = S->hv[h];
        }
    }
    S->tfull = lo;
    long long f = 0;
    double fslope = 0;
    if (lo < m && cum[lo] < e) { /* the next segment in part */
        int j = S->sj[lo];
        f = e - cum[lo];
        fslope = S->ss[lo];
        *fj = j;
        *fx = S->hk[S->hoff[j] + S->si[lo]] + (double)f / S->jobs[j].n_gpus;
    }
    /* k[] and kv[] (which the rounding changes) start at the vertices reached; the value sums
     * them in job order, as the selection does */
    memcpy(S->k, S->rk, (size_t)S->n * sizeof *S->k);
    memcpy(S->kv, S->rv, (size_t)S->n * sizeof *S->kv);
    memset(S->kx, 1, (size_t)S->n);
    double v = 0;
    for (int j = 0; j < S->n; j++)
        v += S->rv[j];
    *ub = *fj >= 0 ? v + fslope * (double)f : v;
    return 1;
}

/* Finds the threshold slope p of the relaxation with e grid units to spend: every segment
 * steeper than p is taken, the segments of slope p are filled in job order, the rest are not.
 * A weighted selection without moving segments: the positive slopes' bit patterns (ordered as
 * the slopes) are spread over buckets, one pass sums each bucket's cost, and only the bucket
 * where the budget runs out is gathered and sorted.  Returns the candidates of that bucket in
 * S->cd; [*g0, *tend) of them are taken whole, and the fractional job's part, if any, in *f. */
static double select_in(solver *S, long long e2, int nc, int *g0_out, int *tend_out, int *fj,
                        double *fx, long long *f_out);

/* A budget e spent on hist's buckets from top down to lo: the bucket where it runs out (lo - 1
 * when buckets top..lo all fit within it), and in *above the cost of the buckets over that one. */
static int spend_buckets(const long long *hist, int top, int lo, long long e, long long *above)
{
    long long a = 0;
    int b = top;
    for (; b >= lo && a + hist[b] < e; b--)
        a += hist[b];
    *above = a;
    return b;
}

/* Room for need candidates in S->cd.  0: no memory (S->nomem set). */
static int cand_room(solver *S, size_t need)
{
    if (need <= S->cd_cap)
        return 1;
    cand *c = realloc(S->cd, need * sizeof *c);
    if (!c) {
        S->nomem = 1;
        return 0;
    }
    S->cd = c;
    S->cd_cap = need;
    return 1;
}

/* A selection's opening, on a histogram of hist's cost and cnt's segments per bucket (top the
 * highest): the outputs say nothing taken, and e is spent from the top bucket down.  Returns
 * the bucket where it runs out, with room in S->cd for its segments and in *above the cost of
 * the buckets over it; -1 when every segment fits, or when there is no room (S->nomem set). */
static int select_open(solver *S, const long long *hist, const int *cnt, int top, long long e,
                       long long *above, int *g0_out, int *tend_out, long long *f_out)
{
    int beta = spend_buckets(hist, top, 0, e, above);
    *g0_out = *tend_out = 0;
    *f_out = 0;
    if (beta < 0 || !cand_room(S, (size_t)cnt[beta]))
        return -1;
    return beta;
}

static double select_threshold(solver *S, long long e, uint64_t kmin, uint64_t kmax, long long ns,
                               int *g0_out, int *tend_out, int *fj, double *fx, long long *f_out)
{
    int nb = 1;
    while (nb < SEL_BUCKETS && 16LL * nb < ns)
        nb <<= 1;
    int sh = 0;
    if (ns > 0)
        while (sh < 63 && ((kmax - kmin) >> sh) >= (uint64_t)nb)
            sh++;
    memset(S->hist, 0, (size_t)nb * sizeof *S->hist);
    memset(S->cnt, 0, (size_t)nb * sizeof *S->cnt);
    for (int j = 0; j < S->n; j++) {
        int m = S->hm[j];
        const double *hs = S->hs + S->hoff[j];
        const int *hk = S->hk + S->hoff[j];
        long long n = S->ng[j];
        for (int i = 0; i < m; i++) {
            uint64_t bk = (slope_key(hs[i]) - kmin) >> sh;
            S->hist[bk] += n * (hk[i + 1] - hk[i]);
            S->cnt[bk]++;
        }
    }
    long long above;
    int beta = select_open(S, S->hist, S->cnt, nb - 1, e, &above, g0_out, tend_out, f_out);
    if (beta < 0)
        return -INFINITY; /* every positive segment fits (or no memory) */
    /* The bucket's segments, and in k[j] how many of job j's lie above the bucket (all taken:
     * the relaxation's vertex for job j is found from there). */
    int nc = 0;
    for (int j = 0; j < S->n; j++) {
        int m = S->hm[j], i = 0;
        const double *hs = S->hs + S->hoff[j];
        const int *hk = S->hk + S->hoff[j];
        long long n = S->ng[j];
        for (; i < m; i++) {
            uint64_t bk = (slope_key(hs[i]) - kmin) >> sh;
            if (bk <= (uint64_t)beta)
                break; /* a job's slopes do not increase */
        }
        S->k[j] = i;
        for (; i < m; i++) {
            uint64_t bk = (slope_key(hs[i]) - kmin) >> sh;
            if (bk < (uint64_t)beta)
                break;
            S->cd[nc++] = (cand){hs[i], n * (hk[i + 1] - hk[i]), j, i};
        }
    }
    if (nc == 0)
        return INFINITY; /* nothing to spend (e == 0): nothing is taken */
    return select_in(S, e - above, nc, g0_out, tend_out, fj, fx, f_out);
}

/* The end of a selection: the nc candidates in S->cd (in job order) hold the segment where the
 * budget runs out, with e2 grid units left for them after every steeper segment outside them.
 * Sorts them, and returns the threshold slope and the parts taken (as select_threshold). */
static double select_in(solver *S, long long e2, int nc, int *g0_out, int *tend_out, int *fj,
                        double *fx, long long *f_out)
{
    cand *cd = S->cd;
    if (nc > 1) /* gathered in job order: sorted, ties keep it */
        qsort(cd, (size_t)nc, sizeof *cd, cmp_cand);
    long long cum = 0;
    int t = 0;
    while (t + 1 < nc && cum + cd[t].cost < e2)
        cum += cd[t++].cost;
    double p = cd[t].slope;
    int g0 = t, g1 = t + 1;
    while (g0 > 0 && cd[g0 - 1].slope == p)
        cum -= cd[--g0].cost;
    while (g1 < nc && cd[g1].slope == p)
        g1++;
    long long left = e2 - cum, f = 0;
    int tend = g0;
    for (t = g0; t < g1 && left > 0; t++) {
        f = cd[t].cost < left ? cd[t].cost : left;
        left -= f;
        if (f == cd[t].cost)
            tend = t + 1;
        else {
            *fj = cd[t].j;
            *fx = S->hk[S->hoff[cd[t].j] + cd[t].i] + (double)f / S->jobs[cd[t].j].n_gpus;
        }
    }
    *g0_out = g0;
    *tend_out = tend;
    *f_out = f;
    return p;
}

/* select_threshold at the root from the histogram made with its hulls (S->fhist): no pass to
 * find the slopes' range, none to count them.  The bucket where the budget runs out is gathered
 * (in k[j] how many of job j's segments lie above it), then its candidates are narrowed by a
 * second histogram of their own range before they are sorted.  The same threshold, parts and
 * fractional job as select_threshold: those are the sorted order's, whatever the buckets. */
static double select_fixed(solver *S, long long e, int *g0_out, int *tend_out, int *fj,
                           double *fx, long long *f_out, int *nl_out)
{
    long long above;
    int beta = select_open(S, S->fhist, S->fcnt, FIX_BUCKETS - 1, e, &above, g0_out, tend_out,
                           f_out);
    if (beta < 0)
        return -INFINITY; /* every positive segment fits (or no memory) */
    /* Each job's segments above the bucket are taken whatever p is: its vertex there is
     * written now (k[], kv[]), and the jobs with segments in the bucket are listed (in the
     * fill's heap, free until the fill) to be moved on once p is known. */
    int nc = 0, nl = 0;
    for (int j = 0; j < S->n; j++) {
        int m = S->hm[j], i = 0, o = S->hoff[j];
        const double *hs = S->hs + o;
        const int *hk = S->hk + o;
        long long n = S->ng[j];
        /* a job's slopes do not increase: the segments above the bucket are a prefix, counted
         * without a branch on each (where it ends differs from job to job) */
        for (int t = 0; t < m; t++)
            i += slope_key(hs[t]) >> FIX_SHIFT > (uint64_t)beta;
        S->k[j] = hk[i];
        S->kv[j] = S->hv[o + i];
        S->kx[j] = 1;
        int c0 = nc;
        for (; i < m; i++) {
            if (slope_key(hs[i]) >> FIX_SHIFT < (uint64_t)beta)
                break;
            S->cd[nc++] = (cand){hs[i], n * (hk[i + 1] - hk[i]), j, i};
        }
        if (nc > c0)
            S->heap[nl++] = j;
    }
    *nl_out = nl;
    if (nc == 0)
        return INFINITY; /* nothing to spend (e == 0): nothing is taken */
    long long e2 = e - above;
    cand *cd = S->cd;
    if (nc > 64) { /* narrowed: the finer bucket where e2 runs out, kept in job order */
        uint64_t kmin = UINT64_MAX, kmax = 0;
        for (int t = 0; t < nc; t++) {
            uint64_t k = slope_key(cd[t].slope);
            kmin = k < kmin ? k : kmin;
            kmax = k > kmax ? k : kmax;
        }
        int nb = 1, sh = 0;
        while (nb < SEL_BUCKETS && 16LL * nb < nc)
            nb <<= 1;
        while (sh < 63 && ((kmax - kmin) >> sh) >= (uint64_t)nb)
            sh++;
        memset(S->hist, 0, (size_t)nb * sizeof *S->hist);
        for (int t = 0; t < nc; t++)
            S->hist[(slope_key(cd[t].slope) - kmin) >> sh] += cd[t].cost;
        long long above2;
        int b2 = spend_buckets(S->hist, nb - 1, 1, e2, &above2); /* bucket 0 at the lowest */
        int keep = 0;
        for (int t = 0; t < nc; t++)
            if ((slope_key(cd[t].slope) - kmin) >> sh == (uint64_t)b2)
                cd[keep++] = cd[t];
        nc = keep;
        e2 -= above2;
    }
    return select_in(S, e2, nc, g0_out, tend_out, fj, fx, f_out);
}

static int relax_take(solver *S, double p, int g0, int tend, long long f, int fj, double *ub);

/* Solves the relaxation on the current ranges.  Returns 0 when the ranges' minimums exceed the
 * budget.  Fills k[] and kv[] (the hull vertex each job reached), *ub, and the fractional job
 * (*fj = -1 when none) with its position *fx in grid units. */
static int relax(solver *S, double *ub, int *fj, double *fx)
{
    long long base = 0, ns = 0;
    *fj = -1;
    *fx = 0;
    if (S->idx_ok && S->nodes == 1) {
        for (int j = 0; j < S->n; j++)
            base += (long long)S->ng[j] * S->a[j];
        S->work += S->n + 2.0 * S->nidx;
        if (base > S->bu)
            return 0;
        return relax_indexed(S, S->bu - base, ub, fj, fx);
    }
    int g0, tend;
    long long f;
    double p;
    if (S->fh_ok && S->nodes == 1) { /* the root, with the histogram made with its hulls */
        S->work += S->n + 2.0 * (double)S->fh_ns;
        if (S->fh_base > S->bu)
            return 0;
        int nl = 0;
        p = select_fixed(S, S->bu - S->fh_base, &g0, &tend, fj, fx, &f, &nl);
        if (S->nomem)
            return 0;
        if (p == -INFINITY) /* every segment fits: nothing was gathered */
            return relax_take(S, p, g0, tend, f, *fj, ub);
        /* the listed jobs' vertices moved on past their segments steeper than p and the whole
         * ones of slope p (as relax_take does), then the value summed in job order */
        int q = g0;
        for (int l = 0; l < nl; l++) {
            if (l + 8 < nl) { /* a job 8 ahead's hull asked for: at a million jobs each one
                               * listed is a wait on memory (its hull was read long ago) */
                int o8 = S->hoff[S->heap[l + 8]];
                __builtin_prefetch(S->hs + o8);
                __builtin_prefetch(S->hv + o8 + 4);
                __builtin_prefetch(S->hk + o8 + 4);
            }
            int j = S->heap[l], o = S->hoff[j], a = 0;
            const double *hs = S->hs + o;
            while (a < S->hm[j] && hs[a] > p)
                a++;
            for (; q < tend && S->cd[q].j == j; q++)
                if (S->cd[q].i + 1 > a)
                    a = S->cd[q].i + 1;
            S->k[j] = S->hk[o + a];
            S->kv[j] = S->hv[o + a];
        }
        double v = 0;
        for (int j = 0; j < S->n; j++)
            v += S->kv[j];
        *ub = *fj >= 0 ? v + p * (double)f : v;
        return 1;
    }
    uint64_t kmin = UINT64_MAX, kmax = 0;
    for (int j = 0; j < S->n; j++) {
        base += (long long)S->ng[j] * S->a[j];
        int m = S->hm[j];
        if (m > 0) {
            const double *hs = S->hs + S->hoff[j];
            uint64_t hi = slope_key(hs[0]), lo = slope_key(hs[m - 1]);
            if (hi > kmax)
                kmax = hi;
            if (lo < kmin)
                kmin = lo;
            ns += m;
        }
    }
    /* A fixed charge (not the selection's own count), so that the work limit stops a search
     * at the same node whichever way its root was solved. */
    S->work += S->n + 2.0 * (double)ns;
    if (base > S->bu)
        return 0;
    p = select_threshold(S, S->bu - base, kmin, kmax, ns, &g0, &tend, fj, fx, &f);
    if (S->nomem)
        return 0;
    return relax_take(S, p, g0, tend, f, *fj, ub);
}

/* What the relaxation at threshold p takes, into k[], kv[] and *ub (see relax). */
static int relax_take(solver *S, double p, int g0, int tend, long long f, int fj, double *ub)
{
    /* Every segment steeper than p is taken (a prefix of each job's), and the whole ones of
     * slope p, which the candidates list in job order. */
    double v = 0;
    int q = g0;
    for (int j = 0; j < S->n; j++) {
        int o = S->hoff[j];
        const double *hs = S->hs + o;
        /* how many of its slopes are steeper than p (they do not increase): all when every
         * segment fits, else those above p's bucket (counted by the selection) and those of
         * its bucket steeper than p */
        int a = S->hm[j];
        if (p != -INFINITY)
            for (a = S->k[j]; a < S->hm[j] && hs[a] > p;)
                a++;
        for (; q < tend && S->cd[q].j == j; q++)
            if (S->cd[q].i + 1 > a)
                a = S->cd[q].i + 1;
        S->k[j] = S->hk[o + a];
        S->kv[j] = S->hv[o + a];
        S->kx[j] = 1;
        v += S->kv[j];
    }
    *ub = fj >= 0 ? v + p * (double)f : v;
    return 1;
}

/* A spare index of at least total entries (and an eighth more when made anew).  Not cleared:
 * whoever uses it writes it first (a patch; build_index's sort, which so also brings in its
 * pages before a re-plan needs them).  0: out of memory (no index). */
static int spare_room(solver *S, int total)
{
    if (total <= S->idx_cap && S->cum2 && S->sj2 && S->si2 && S->ss2)
        return 1;
    free(S->cum2);
    free(S->sj2);
    free(S->si2);
    free(S->ss2);
    S->idx_cap = total + total / 8;
    size_t m = (size_t)S->idx_cap + 1;
    S->cum2 = big_alloc(m * sizeof *S->cum2);
    S->sj2 = big_alloc(m * sizeof *S->sj2);
    S->si2 = big_alloc(m * sizeof *S->si2);
    S->ss2 = big_alloc(m * sizeof *S->ss2);
    if (!S->cum2 || !S->sj2 || !S->si2 || !S->ss2) {
        S->idx_cap = 0;
        S->idx_ok = 0;
        return 0;
    }
    return 1;
}

/* Room for an index of ns entries (and an eighth more when made anew, so that arrivals fit in
 * place).  The arrays a workspace had are kept when they hold it: an index sorted again after
 * a rebuild writes memory it already has (new pages cost as much as the sort). */
static int index_room(solver *S, int ns)
{
    if (ns <= S->nidx_cap && S->cum && S->sj && S->si && S->ss)
        return 1;
    free(S->cum);
    free(S->sj);
    free(S->si);
    free(S->ss);
    S->nidx_cap = ns + ns / 8;
    size_t m = (size_t)S->nidx_cap + 1;
    S->cum = big_alloc(m * sizeof *S->cum);
    S->sj = big_alloc(m * sizeof *S->sj);
    S->si = big_alloc(m * sizeof *S->si);
    S->ss = big_alloc(m * sizeof *S->ss);
    if (!S->cum || !S->sj || !S->si || !S->ss) {
        S->nidx_cap = 0;
        return 0;
    }
    return 1;
}

#define RADIX_BITS 11 /* solver.rcnt's size */
#define RADIX_PASSES 6 /* 6 x 11 bits >= 64 */
#define RADIX_SIZE (1 << RADIX_BITS)

/* The sort's keys (slope bits, ascending: slopes descending) and the job-order positions they
 * carry, in the spare index's arrays, which the sort uses as scratch (a patch needs them
 * anyway, so the sort asks for no memory of its own); flip says which half holds them now. */
static void stage_bufs(solver *S, uint64_t **key, uint64_t **key2, int **ord, int **ord2)
{
    uint64_t *a = (uint64_t *)(void *)S->ss2, *b = (uint64_t *)(void *)S->cum2;
    *key = S->idx_flip ? b : a;
    *key2 = S->idx_flip ? a : b;
    *ord = S->idx_flip ? S->si2 : S->sj2;
    *ord2 = S->idx_flip ? S->sj2 : S->si2;
}

/* Stage 0: the segments of the root hulls gathered in job order (so that the stable sort keeps
 * ties in job and vertex order), with the counts of every radix pass made in the same read. */
static int stage_gather(solver *S)
{
    long long ns = 0;
    for (int j = 0; j < S->n; j++)
        ns += S->hm[j];
    if (ns >= INT_MAX / 2 || !index_room(S, (int)ns) || !spare_room(S, (int)ns))
        return 0;
    if (!S->rcnt && !(S->rcnt = malloc(RADIX_PASSES * sizeof *S->rcnt)))
        return 0;
    memset(S->rcnt, 0, RADIX_PASSES * sizeof *S->rcnt);
    S->idx_flip = 0;
    uint64_t *key, *key2;
    int *ord, *ord2, t = 0;
    stage_bufs(S, &key, &key2, &ord, &ord2);
    for (int j = 0; j < S->n; j++) {
        const double *hs = S->hs + S->hoff[j];
        for (int i = 0; i < S->hm[j]; i++, t++) {
            uint64_t k = ~slope_key(hs[i]);
            key[t] = k;
            ord[t] = t;
            S->sj[t] = j;
            S->si[t] = i;
            for (int p = 0; p < RADIX_PASSES; p++)
                S->rcnt[p][(k >> (p * RADIX_BITS)) & (RADIX_SIZE - 1)]++;
        }
    }
    S->nidx = t;
    return 1;
}

/* Radix pass p (stable, 11 bits from the lowest); 0 when every key has the same digit there
 * (nothing to do). */
static int stage_pass(solver *S, int p)
{
    int t = S->nidx, sh = p * RADIX_BITS;
    uint64_t *key, *key2;
    int *ord, *ord2;
    stage_bufs(S, &key, &key2, &ord, &ord2);
    unsigned *c = S->rcnt[p], sum = 0;
    if (t < 2 || c[(key[0] >> sh) & (RADIX_SIZE - 1)] == (unsigned)t)
        return 0;
    for (int d = 0; d < RADIX_SIZE; d++) {
        unsigned x = c[d];
        c[d] = sum;
        sum += x;
    }
    for (int u = 0; u < t; u++) {
        unsigned d = c[(key[u] >> sh) & (RADIX_SIZE - 1)]++;
        key2[d] = key[u];
        ord2[d] = ord[u];
    }
    S->idx_flip = !S->idx_flip;
    return 1;
}

/* The last two steps, each over entries [lo, hi) of the sorted order: the sorted positions
 * named by job and vertex (sj/si were in job order until here; the names go to key2), then the
 * index from the names.  Both read at random (a position's job, a job's hull), the cost of a
 * whole radix pass or more: each is done in INDEX_PARTS parts. */
static void stage_name(solver *S, int lo, int hi)
{
    uint64_t *key, *key2;
    int *ord, *ord2;
    stage_bufs(S, &key, &key2, &ord, &ord2);
    /* ord[u]: the job-order position of the u-th steepest */
    for (int u = lo; u < hi; u++)
        key2[u] = (uint64_t)S->sj[ord[u]] << 32 | (uint32_t)S->si[ord[u]];
}

static void stage_finish(solver *S, int lo, int hi)
{
    uint64_t *key, *key2;
    int *ord, *ord2;
    stage_bufs(S, &key, &key2, &ord, &ord2); /* the names are in key (flipped) */
    if (lo == 0)
        S->cum[0] = 0;
    for (int u = lo; u < hi; u++) {
        int j = (int)(key[u] >> 32), i = (int)(uint32_t)key[u];
        int o = S->hoff[j];
        S->sj[u] = j;
        S->si[u] = i;
        S->ss[u] = S->hs[o + i];
        S->cum[u + 1] = S->cum[u] + (long long)S->ng[j] * (S->hk[o + i + 1] - S->hk[o + i]);
    }
}

/* With the gather and RADIX_PASSES: PFI_ALLOC_INDEX_SOLVES - 1 parts at most. */
#define INDEX_PARTS 4

/* One part of sorting the current (root) hulls' segments into the index (a stable radix sort
 * of their slopes' bits): the gather (idx_next -1), one pass that moves the segments (idx_next:
 * which), then a part of naming them or of writing the index (idx_pos: from where).  A
 * re-planner's solve does one part, so that no budget change pays for the whole sort, which at
 * 100k jobs costs 2-3 fresh solves; the solve itself selects until the index is there.  The
 * hulls must be those the gather read (the caller starts again whenever they change).
 * 0: out of memory (no index; re-solves select). */
static int index_stage(solver *S)
{
    S->idx_ok = 0;
    if (S->idx_next < 0) {
        S->idx_next = 0;
        S->idx_pos = 0;
        return stage_gather(S);
    }
    while (S->idx_next < RADIX_PASSES)
        if (stage_pass(S, S->idx_next++))
            return 1; /* one pass a solve; passes with nothing to do are skipped */
    int t = S->nidx, part = t / INDEX_PARTS + 1, lo = S->idx_pos;
    int hi = t - lo > part ? lo + part : t;
    int naming = S->idx_next == RADIX_PASSES;
    if (naming)
        stage_name(S, lo, hi);
    else
        stage_finish(S, lo, hi);
    S->idx_pos = hi;
    if (hi < t)
        return 1;
    if (naming) {
        S->idx_flip = !S->idx_flip; /* the names are in key */
        S->idx_next++;
        S->idx_pos = 0;
    } else {
        S->idx_ok = 1;
        S->pos_ok = 0;
    }
    return 1;
}

/* Job j's hull changed (already rebuilt): its old segments leave the index and its new ones
 * enter at their places.  The entries between two such changes move as blocks (their cost
 * sums shifted by what was inserted and removed before them) into the spare index, which then
 * becomes the index.  The prefix the last indexed relaxation took is carried over (the other
 * jobs' vertices do not move; job j's is counted again), so the next budget still walks from
 * it.  arrived: job j is new at position j (the index has none of its segments and still names
 * the jobs from j on one lower: they are renumbered as they move).  0: out of memory (the index
 * is dropped; the next solves select). */
static int patch_index(solver *S, int j, int arrived)
{
    const int *hk = S->hk + S->hoff[j];
    const double *hs = S->hs + S->hoff[j];
    long long n = S->ng[j];
    int m = S->hm[j], old = 0, nidx = S->nidx;
    if (!arrived)
        for (int t = 0; t < nidx; t++)
            old += S->sj[t] == j;
    int total = nidx - old + m;
    if (!spare_room(S, total))
        return 0;
    int t = 0, u = 0, o = 0, rec = 0, mapped = 0, uj = 0;
    long long delta = 0; /* cum2[o + 1] = cum[t + 1] + delta for an entry moved from t to o */
    S->cum2[0] = 0;
    int next_old = arrived ? nidx : 0; /* job j's next old entry */
    while (next_old < nidx && S->sj[next_old] != j)
        next_old++;
    for (;;) {
        /* the next change: job j's next old entry, or where its next new one goes (the first
         * entry that does not come before it) */
        int next_new = nidx;
        if (u < m) {
            int lo = t, hi = nidx;
            while (lo < hi) {
                int mid = lo + (hi - lo) / 2, q = S->sj[mid];
                if (seg_order(S->ss[mid], q + (arrived && q >= j), S->si[mid], hs[u], j, u) < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            next_new = lo;
        }
        int stop = next_new < next_old ? next_new : next_old;
        if (!rec && S->tfull >= t && S->tfull < stop) {
            mapped = o + (S->tfull - t);
            uj = u;
            rec = 1;
        }
        size_t len = (size_t)(stop - t);
        if (arrived) /* renumbered: j and the jobs after it one higher */
            for (size_t q = 0; q < len; q++)
                S->sj2[o + q] = S->sj[t + q] + (S->sj[t + q] >= j);
        else
            memcpy(S->sj2 + o, S->sj + t, len * sizeof *S->sj);
        memcpy(S->si2 + o, S->si + t, len * sizeof *S->si);
        memcpy(S->ss2 + o, S->ss + t, len * sizeof *S->ss);
        for (size_t q = 0; q < len; q++)
            S->cum2[o + q + 1] = S->cum[t + q + 1] + delta;
        o += (int)len;
        t = stop;
        if (!rec && t == S->tfull) {
            mapped = o;
            uj = u;
            rec = 1;
        }
        if (t == nidx && u == m)
            break;
        if (u < m && next_new <= next_old) { /* job j's new segment u */
            long long cost = n * (hk[u + 1] - hk[u]);
            S->sj2[o] = j;
            S->si2[o] = u;
            S->ss2[o] = hs[u];
            S->cum2[o + 1] = S->cum2[o] + cost;
            delta += cost;
            o++;
            u++;
        } else { /* job j's old segment at t leaves */
            delta -= S->cum[t + 1] - S->cum[t];
            t++;
            next_old = t;
            while (next_old < nidx && S->sj[next_old] != j)
                next_old++;
        }
    }
    long long *c = S->cum;
    int *a = S->sj, *b = S->si, cap = S->idx_cap;
    double *d = S->ss;
    S->cum = S->cum2;
    S->sj = S->sj2;
    S->si = S->si2;
    S->ss = S->ss2;
    S->cum2 = c;
    S->sj2 = a;
    S->si2 = b;
    S->ss2 = d;
    S->idx_cap = S->nidx_cap;
    S->nidx_cap = cap;
    S->nidx = total;
    if (S->pos_ok) { /* the same prefix: job j's part of it counted on its new hull */
        S->tfull = mapped;
        S->pos[j] = uj;
        S->rk[j] = S->hk[S->hoff[j] + uj];
        S->rv[j] = S->hv[S->hoff[j] + uj];
    }
    return 1;
}

/* ---- greedy fill: a binary max-heap of jobs keyed by gain[j] (core/alloc_heap.h) ---- */

/* Below this many jobs in the heap the whole heap is built; above, its top first (fill_top)
 * with FILL_TOP jobs over the threshold, then FILL_TOP * 16, then the whole heap. */
#define FILL_TOP_MIN 1024
#define FILL_TOP 256

typedef struct fill_undo {
    int j, k;
    double kv;
    unsigned char kx;
} fill_undo;

/* A step of job j (its gain g per GPU, n GPUs) taken, as the fill takes it; returns its next
 * step's gain per GPU (0: none). */
static inline double fill_step(solver *S, int j, double g, long long n, double *v)
{
    *v += g * (double)n;
    S->k[j]++;
    S->kv[j] += g * (double)n;
    S->kx[j] = 0;
    return S->k[j] < S->b[j] ? (val_kept(S, j, S->k[j] + 1) - S->kv[j]) / (double)n : 0;
}

/* The fill's pops from the top of its heap alone: the jobs whose gains are among the want
 * largest (ties included) placed as the whole heap places them, the others unknown.  The pops,
 * the steps taken and every value are the whole heap's as long as the top is one of those;
 * once an unknown one would be popped, every step taken here is put back and 0 returned (the
 * caller builds the whole heap).  1: done, *v and *left as the whole heap leaves them. */
static int fill_top(solver *S, int nh, long long min_n, int want, long long *left, double *v)
{
    pfi_topheap *T = &S->top;
    if (want > S->tsc_cap) {
        double *t = realloc(S->tsc, (size_t)want * sizeof *t);
        if (!t)
            return 0;
        S->tsc = t;
        S->tsc_cap = want;
    }
    double thr = pfi_topheap_threshold(S->heap, S->gain, nh, want, S->tsc);
    if (!pfi_topheap_make(T, S->heap, S->gain, nh, thr, 2 * want))
        return 0;
    long long l = *left;
    double vv = *v;
    int nu = 0, ok = 1;
    while (T->nh > 0 && l >= min_n) {
        int s = pfi_topheap_top(T);
        if (!s) { /* an unknown job on top */
            ok = 0;
            break;
        }
        int j = T->item[s];
        long long n = S->ng[j];
        if (n <= l) {
            if (nu == S->ulog_cap) {
                int c = 2 * nu + 64;
                fill_undo *u = realloc(S->ulog, (size_t)c * sizeof *u);
                if (!u) {
                    ok = 0;
                    break;
                }
                S->ulog = u;
                S->ulog_cap = c;
            }
            S->ulog[nu++] = (fill_undo){j, S->k[j], S->kv[j], S->kx[j]};
            l -= n;
            double g = fill_step(S, j, T->key[s], n, &vv);
            if (g > 0 && n <= l) {
                pfi_topheap_rekey_top(T, g);
                continue;
            }
        }
        pfi_topheap_pop(T);
    }
    if (!ok) {
        while (nu > 0) {
            const fill_undo *u = &S->ulog[--nu];
            S->k[u->j] = u->k;
            S->kv[u->j] = u->kv;
            S->kx[u->j] = u->kx;
        }
        return 0;
    }
    *left = l;
    *v = vv;
    return 1;
}

/* Raises caps one grid step at a time, best gain per unit of cost first, while steps fit. */
static double fill(solver *S, long long left, double v)
{
    /* The jobs a step fits (often a few of many: small ones), listed first in job order so
     * that their curves, read from memory on a large list, are asked for ahead of use. */
    const int *ng = S->ng, *kk = S->k, *kb = S->b, *nk = S->nk;
    const double *nv = S->nv, *kv = S->kv;
    int *heap = S->heap, n_jobs = S->n, nq = 0;
    double *gain = S->gain;
    for (int j = 0; j < n_jobs; j++) { /* without a branch: about half of them fit */
        heap[nq] = j;
        nq += (ng[j] <= left) & (kk[j] < kb[j]);
    }
    int nh = 0;
    long long min_n = left + 1; /* the fewest GPUs of a job in the heap */
    for (int q = 0; q < nq; q++) {
        int j = heap[q];
        /* only the curves val_kept will read (a re-solve remembers most) */
        if (q + 8 < nq) {
            int i = heap[q + 8];
            if (nk[i] != kk[i] + 1)
                __builtin_prefetch(&S->jobs[i]);
        }
        if (q + 4 < nq) {
            int i = heap[q + 4];
            if (nk[i] != kk[i] + 1) {
                __builtin_prefetch(S->jobs[i].cap_w);
                __builtin_prefetch(S->jobs[i].tput);
            }
        }
        long long n = ng[j];
        int k1 = kk[j] + 1;
        double g = ((nk[j] == k1 ? nv[j] : val_kept(S, j, k1)) - kv[j]) / (double)n;
        if (g > 0) {
            gain[j] = g;
            heap[nh++] = j;
            if (n < min_n)
                min_n = n;
        }
    }
    S->work += S->n;
    /* A long heap pops a few of its jobs: its top first. */
    for (int want = FILL_TOP; !S->fill_whole && nh >= FILL_TOP_MIN && want <= nh / 4; want *= 16)
        if (fill_top(S, nh, min_n, want, &left, &v))
            return v;
    for (int i = nh / 2 - 1; i >= 0; i--)
        pfi_heap_down(S->heap, S->gain, nh, i);
    /* Once what is left is below every job's step, the rest would only be popped and dropped. */
    while (nh > 0 && left >= min_n) {
        int j = S->heap[0];
        long long n = S->ng[j];
        if (n <= left) {
            left -= n;
            double g = fill_step(S, j, S->gain[j], n, &v);
            if (g > 0 && n <= left) {
                S->gain[j] = g;
                pfi_heap_down(S->heap, S->gain, nh, 0);
                continue;
            }
        }
        S->heap[0] = S->heap[--nh];
        pfi_heap_down(S->heap, S->gain, nh, 0);
    }
    return v;
}

/* One node: relaxation, pruning, rounding.  Returns 1 and the split (*bj, *bs) to branch on,
 * 0 when the node is closed. */
static int node(solver *S, int *bj, int *bs)
{
    double ub;
    int fj;
    double fx;
    S->nodes++;
    if (!relax(S, &ub, &fj, &fx))
        return 0;
    if (S->nodes == 1) {
        S->root_ub = ub;
        S->tol += S->rel_gap * fabs(ub);
    }
    if (S->have_best && ub <= S->best + S->tol)
        return 0;
    long long used = 0;
    double v = 0;
    for (int j = 0; j < S->n; j++) { /* k[], kv[]: the vertices the relaxation reached */
        if (j == fj) {
            /* Inside a bridge over a dip the rounded-down point may be worse than the vertex
             * before it: take the best grid point between them. */
            int k0 = S->k[j], k1 = (int)floor(fx + 1e-9), bk = k0;
            double bv = val(S, j, k0);
            for (int kk = k0 + 1; kk <= k1; kk++) {
                double x = val(S, j, kk);
                if (x > bv) {
                    bv = x;
                    bk = kk;
                }
            }
            S->work += k1 - k0;
            S->k[j] = bk;
            S->kv[j] = bv;
            v += bv;
        } else
            v += S->kv[j];
        used += (long long)S->ng[j] * S->k[j];
    }
    v = fill(S, S->bu - used, v);
    if (!S->have_best || v > S->best) {
        S->best = v;
        S->have_best = 1;
        memcpy(S->best_k, S->k, (size_t)S->n * sizeof *S->k);
        memcpy(S->best_kv, S->kv, (size_t)S->n * sizeof *S->kv);
        memcpy(S->best_kx, S->kx, (size_t)S->n * sizeof *S->kx);
    }
    /* A fractional job at a grid point on its true curve rounds to the bound itself, so the
     * test below closes that node too. */
    if (fj < 0 || ub <= S->best + S->tol)
        return 0;
    *bj = fj;
    *bs = (int)floor(fx + 1e-9);
    return 1;
}

typedef struct frame {
    int j, a0, b0, s, child;
} frame;

static void search(solver *S)
{
    int cap = 64, top = 0;
    frame *st = malloc((size_t)cap * sizeof *st);
    int bj, bs;
    int branch = node(S, &bj, &bs);
    for (;;) {
        if (branch && S->work <= S->max_work && st) {
            if (top == cap) {
                frame *ns = realloc(st, (size_t)cap * 2 * sizeof *st);
                if (!ns)
                    break;
                st = ns;
                cap *= 2;
            }
            st[top++] = (frame){bj, S->a[bj], S->b[bj], bs, 0};
            S->b[bj] = bs;
            build_hull(S, bj, 0);
            branch = node(S, &bj, &bs);
            continue;
        }
        if (branch) /* work limit: the bound stays the root's */
            break;
        /* backtrack */
        while (top > 0 && st[top - 1].child == 1) {
            frame *f = &st[--top];
            S->a[f->j] = f->a0;
            S->b[f->j] = f->b0;
            build_hull(S, f->j, 0);
        }
        if (top == 0)
            break;
        frame *f = &st[top - 1];
        f->child = 1;
        S->a[f->j] = f->s + 1;
        S->b[f->j] = f->b0;
        build_hull(S, f->j, 0);
        branch = node(S, &bj, &bs);
    }
    /* Completed only when every node was closed (no pending branch, empty stack). */
    S->max_work = (branch || top > 0 || !st) ? -1 : S->max_work;
    /* Stopped early: put every range and hull back as it was at the root, so the next solve
     * starts from them. */
    while (top > 0) {
        frame *f = &st[--top];
        S->a[f->j] = f->a0;
        S->b[f->j] = f->b0;
        build_hull(S, f->j, 0);
    }
    free(st);
}

/* ---- the workspace: what a solve keeps for the next one ---- */

static long long gcd_ll(long long a, long long b)
{
    while (b) {
        long long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

struct pfi_alloc_ws {
    const pfi_alloc_job *jobs;
    int n;
    int valid;             /* the arrays below match jobs (0 after a failed build) */
    double budget_w;       /* the budget of the last build (floors are degraded for it) */
    solver S;
    pfi_alloc_opts o;
    pfi_alloc_result prep; /* floors, SLAs and flags of pfi_alloc_prepare */
    size_t total_h;        /* hull slots allocated (at most 2 per curve point, plus 2, per job) */
    size_t used_h;         /* hull slots in use: job j holds hsz[j] from hoff[j]; a job whose new
                            * curve needs more moves to the end of the used ones */
    int *hsz;
    void *block, *hblock;  /* every per-job array of the solver; the hulls' storage */
    double scale;          /* sum of the jobs' hmax (the tolerance's scale), when scale_ok */
    int scale_ok;
    long long units_gcd;   /* gcd of the jobs' GPU counts (reachable_units), when gcd_ok */
    int gcd_ok;
    long long *m0t;        /* each job's GPUs x its lowest grid index and their sum, */
    long long m0_units;    /*   allocated by the first job update (m0t NULL before) */
    double *lo_w, *top_w;  /* each job's lowest and highest grid cap (the AT_MIN/AT_MAX flags), */
    int ends_ok;           /*   allocated by the first re-solve (a one-shot solve needs none) */
    long long need_units;  /* sum n_j * floor_j in grid units: budgets below it re-prepare */
    int solves;            /* solves since the hulls last changed, up to 2: from the second on,
                            * each does a part of the sort (index_stage) until it is done */
    int cap_n;             /* buffers hold this many jobs */
    size_t cap_h;          /*   and hull vertices */
    int fresh_only;        /* the floors depend on the budget (SLAs relaxed or dropped) */
    int prep_cap;          /* prep's per-job arrays hold this many jobs */
    pfi_alloc_ids *ids;    /* the jobs' ids by position, made by the first arrival or departure */
};

static void ws_arrays_free(pfi_alloc_ws *w)
{
    solver *S = &w->S;
    free(w->block);
    free(w->hblock);
    free(w->m0t);
    w->m0t = NULL;
    free(S->cd);
    free(w->lo_w);
    free(w->top_w);
    free(S->cum);
    free(S->sj);
    free(S->si);
    free(S->cum2);
    free(S->sj2);
    free(S->si2);
    free(S->ss);
    free(S->ss2);
    free(S->rcnt);
    free(S->fhist);
    free(S->fcnt);
    pfi_topheap_free(&S->top);
    free(S->tsc);
    free(S->ulog);
    pfi_alloc_result_free(&w->prep);
    pfi_alloc_ids_free(w->ids);
    w->ids = NULL;
    memset(S, 0, sizeof *S);
    w->hsz = NULL;
    w->block = w->hblock = NULL;
    w->lo_w = w->top_w = NULL;
}

void pfi_alloc_ws_free(pfi_alloc_ws *w)
{
    if (!w)
        return;
    ws_arrays_free(w);
    free(w);
}

/* Job j's lowest and highest grid caps, as pfi_alloc_finish computes them for its flags. */
static void grid_ends(pfi_alloc_ws *w, int j)
{
    const pfi_alloc_job *J = &w->S.jobs[j];
    double step = w->o.step_w;
    w->lo_w[j] = ceil(fmax(J->min_cap_w, J->cap_w[0]) / step - 1e-9) * step;
    w->top_w[j] = floor(J->max_cap_w / step + 1e-9) * step;
}

static int ends_alloc(pfi_alloc_ws *w)
{
    if (!w->lo_w)
        w->lo_w = malloc((size_t)w->cap_n * sizeof *w->lo_w);
    if (!w->top_w)
        w->top_w = malloc((size_t)w->cap_n * sizeof *w->top_w);
    return w->lo_w && w->top_w;
}

/* The caps of the best allocation into res, then pfi_alloc_finish (core/alloc.c) with what the
 * solve knows: the same sums in the same order and the same flags; each job's grid ends
 * computed once per build when the workspace keeps them (ends_ok), and its throughput taken
 * from the solve where that is the very number pfi_alloc_tput_at gives (weight 1, a value not
 * summed up by the fill; a zero is computed again, for its sign).  src holds the floors, SLAs
 * and flags pfi_alloc_prepare made (res itself when it took them): they are copied into res
 * in the same pass.  Returns the grid units allocated, sum n_j k_j. */
static long long ws_finish(pfi_alloc_ws *w, const pfi_alloc_result *src, pfi_alloc_result *res)
{
    solver *S = &w->S;
    const pfi_alloc_job *jobs = S->jobs;
    double power = 0, value = 0, step = w->o.step_w;
    int n = S->n, min_n = S->ng[0];
    long long used = 0;
    if (w->ends_ok) { /* a re-solve: the same, from local pointers and without branches */
        const double *wts = S->wt, *bkv = S->best_kv, *lo = w->lo_w, *top = w->top_w,
                     *sfl = src->floor_w, *ssla = src->sla;
        const unsigned *sfg = src->flags;
        const unsigned char *bkx = S->best_kx;
        const int *ng = S->ng, *bk = S->best_k;
        double *cap = res->cap_w, *tp = res->tput, *fl = res->floor_w, *sla = res->sla;
        unsigned *flags = res->flags;
        for (int j = 0; j < n; j++) {
            double c = bk[j] * step, wt = wts[j], kv = bkv[j], f = sfl[j];
            cap[j] = c;
            used += (long long)ng[j] * bk[j];
            fl[j] = f;
            sla[j] = ssla[j];
            double t = wt == 1.0 && bkx[j] && kv != 0 ? kv : tput_at(&jobs[j], c);
            tp[j] = t;
            power += ng[j] * c;
            value += wt * t;
            min_n = ng[j] < min_n ? ng[j] : min_n;
            unsigned at_min = c <= lo[j] + 1e-9, at_max = c >= top[j] - 1e-9;
            unsigned at_sla = !at_min & (c <= f + 1e-9);
            flags[j] = (sfg[j] & (PFI_ALLOC_SLA_RELAXED | PFI_ALLOC_SLA_DROPPED)) |
                       (at_min ? PFI_ALLOC_AT_MIN : 0) | (at_sla ? PFI_ALLOC_AT_SLA : 0) |
                       (at_max ? PFI_ALLOC_AT_MAX : 0);
        }
        res->power_w = power;
        res->value = value;
        res->budget_binds = res->budget_w - power < min_n * step - 1e-9;
        return used;
    }
    if (src != res && n > 0) {
        memcpy(res->floor_w, src->floor_w, (size_t)n * sizeof *res->floor_w);
        memcpy(res->sla, src->sla, (size_t)n * sizeof *res->sla);
        memcpy(res->flags, src->flags, (size_t)n * sizeof *res->flags);
    }
    for (int j = 0; j < n; j++) {
        const pfi_alloc_job *J = &jobs[j];
        double c = res->cap_w[j] = S->best_k[j] * step;
        used += (long long)S->ng[j] * S->best_k[j];
        double wt = S->wt[j];
        res->tput[j] = wt == 1.0 && S->best_kx[j] && S->best_kv[j] != 0 ? S->best_kv[j]
                                                                         : tput_at(J, c);
        power += S->ng[j] * c;
        value += wt * res->tput[j];
        if (S->ng[j] < min_n)
            min_n = S->ng[j];
        unsigned f = res->flags[j] & (PFI_ALLOC_SLA_RELAXED | PFI_ALLOC_SLA_DROPPED);
        double lo = ceil(fmax(J->min_cap_w, J->cap_w[0]) / step - 1e-9) * step;
        double top = floor(J->max_cap_w / step + 1e-9) * step;
        if (c <= lo + 1e-9)
            f |= PFI_ALLOC_AT_MIN;
        else if (c <= res->floor_w[j] + 1e-9)
            f |= PFI_ALLOC_AT_SLA;
        if (c >= top - 1e-9)
            f |= PFI_ALLOC_AT_MAX;
        res->flags[j] = f;
    }
    res->power_w = power;
    res->value = value;
    res->budget_binds = res->budget_w - power < min_n * step - 1e-9;
    return used;
}

/* The per-job arrays of the block: doubles, then ints, then two of bytes.  The first KEPT_D and
 * KEPT_I of each list are what a workspace keeps between solves (moved when a job arrives or
 * leaves); the others are rewritten by every solve. */
#define N_JD 7
#define N_JI 13
#define KEPT_D 4
#define KEPT_I 10

static void job_lists(pfi_alloc_ws *w, double **d[N_JD], int **in[N_JI])
{
    solver *S = &w->S;
    double **dd[N_JD] = {&S->hmax, &S->wt, &S->nv, &S->rv, &S->kv, &S->best_kv, &S->gain};
    int **ii[N_JI] = {&S->a, &S->b,  &S->ng, &S->hoff, &S->hn,     &S->hm,  &w->hsz,
                      &S->pos, &S->nk, &S->rk, &S->k,  &S->best_k, &S->heap};
    memcpy(d, dd, sizeof dd);
    memcpy(in, ii, sizeof ii);
}

/* Points the per-job arrays into p, nn jobs each. */
static void job_carve(pfi_alloc_ws *w, char *p, size_t nn)
{
    double **d[N_JD];
    int **in[N_JI];
    job_lists(w, d, in);
    for (size_t i = 0; i < N_JD; i++, p += nn * sizeof(double))
        *d[i] = (double *)p;
    for (size_t i = 0; i < N_JI; i++, p += nn * sizeof(int))
        *in[i] = (int *)p;
    w->S.kx = (unsigned char *)p;
    w->S.best_kx = w->S.kx + nn;
}

static size_t job_bytes(size_t nn)
{
    return nn * (N_JD * sizeof(double) + N_JI * sizeof(int) + 2);
}

/* Points the hulls' storage into h, hh slots. */
static void hull_carve(solver *S, char *h, size_t hh)
{
    S->hv = (double *)h;
    S->hs = S->hv + hh;
    S->hk = (int *)(S->hs + hh);
}

/* Every per-job array of the solver carved from one block, the hulls' storage (hh slots) from
 * another: a fresh solve touches each once, and a few large allocations freed whole are what
 * the C library hands back to the next solve of the same size without new page faults. */
static int job_arrays(pfi_alloc_ws *w, size_t nn, size_t hh)
{
    char *p = w->block = big_alloc(job_bytes(nn));
    char *h = w->hblock = big_alloc(hh * (2 * sizeof(double) + sizeof(int)));
    if (!p || !h)
        return 0;
    job_carve(w, p, nn);
    hull_carve(&w->S, h, hh);
    return 1;
}

/* prep's per-job arrays for n jobs, kept from the last build when they are large enough
 * (their contents are rewritten; cap_w and tput are the one-shot result's, written there). */
static int prep_arrays(pfi_alloc_ws *w, int n)
{
    pfi_alloc_result *r = &w->prep;
    if (r->cap_w && r->tput && r->floor_w && r->sla && r->flags && n <= w->prep_cap)
        return 1;
    pfi_alloc_result_free(r);
    size_t nn = (size_t)n;
    r->cap_w = big_alloc(nn * sizeof *r->cap_w);
    r->tput = big_alloc(nn * sizeof *r->tput);
    r->floor_w = big_alloc(nn * sizeof *r->floor_w);
    r->sla = big_alloc(nn * sizeof *r->sla);
    r->flags = big_alloc(nn * sizeof *r->flags);
    w->prep_cap = n;
    return r->cap_w && r->tput && r->floor_w && r->sla && r->flags;
}

/* The fixed histogram cleared (allocated the first time).  0: no memory for it (the root then
 * selects as every node does). */
static int fix_hist(solver *S)
{
    if (!S->fhist) {
        S->fhist = malloc(FIX_BUCKETS * sizeof *S->fhist);
        S->fcnt = malloc(FIX_BUCKETS * sizeof *S->fcnt);
        if (!S->fhist || !S->fcnt) {
            free(S->fhist);
            free(S->fcnt);
            S->fhist = NULL;
            S->fcnt = NULL;
            return 0;
        }
    }
    memset(S->fhist, 0, FIX_BUCKETS * sizeof *S->fhist);
    memset(S->fcnt, 0, FIX_BUCKETS * sizeof *S->fcnt);
    return 1;
}

/* Validation, grid, floors and hulls in one pass over the jobs, each read once while its curve
 * is in cache: what pfi_alloc_prepare then the hull loop compute, when nothing goes wrong (no
 * error, no SLA to degrade).  0: something does, and nothing here is kept (the caller takes
 * the long way, which gives the error or degrades in its order), or the hulls' slots would run
 * past the buffers' (w->cap_h, counted as ws_build counts them: *short_room set). */
static int ws_build_onepass(pfi_alloc_ws *w, const pfi_alloc_job *jobs, int n, double budget_w,
                            int *short_room)
{
    solver *S = &w->S;
    const pfi_alloc_opts *o = &w->o;
    double step = o->step_w;
    if (n <= 0 || !isfinite(budget_w) || budget_w <= 0 || !(step > 0) || !isfinite(step) ||
        o->on_infeasible < PFI_INFEASIBLE_FAIL || o->on_infeasible > PFI_INFEASIBLE_BY_WEIGHT ||
        !prep_arrays(w, n))
        return 0;
    pfi_alloc_result *r = &w->prep;
    S->jobs = jobs;
    S->n = n;
    S->step = step;
    int e2;
    S->inv_step = frexp(step, &e2) == 0.5 && e2 > -1000 && e2 < 1000 ? 1.0 / step : 0;
    long long m0 = 0, ms = 0;
    size_t used = 0, hroom = 0;
    /* the ids' hashes, for their check after the pass: in the fill's heap, free until then */
    unsigned *hash = (unsigned *)S->heap;
    int ends = w->lo_w && w->top_w;
    S->fh_ok = 0;
    S->fh_on = n >= FIX_MIN_JOBS && fix_hist(S);
    S->fh_ns = 0;
    int pkmin = 0, pkmax = 0;
    double scale = 0; /* ws_solve's sum of the hulls' hmax, in the same order, here where its
                       * chain of additions overlaps the build's work */
    int lanes = S->vec >= PFI_ALLOC_VEC_AVX2; /* hulls 4 at a time where the lanes take them */
    lane_grp G;
    G.n = 0;
    G.nc = 0;
    for (int j = 0; j < n; j++) {
        const pfi_alloc_job *J = &jobs[j];
        int kmin, kmax, kf;
        prefetch_ahead(jobs, n, j, 1);
        /* caps, point count and cap range the same bits as the job before (which passed):
         * its cap tests, grid range and on-grid answer are this one's */
        const pfi_alloc_job *P = J - 1;
        S->same_caps = j > 0 && !o->caps_alone && J->n_points == P->n_points && J->cap_w &&
                       same_bits(J->min_cap_w, P->min_cap_w) &&
                       same_bits(J->max_cap_w, P->max_cap_w) &&
                       (J->cap_w == P->cap_w ||
                        pfi_alloc_vec_same(S->vec, J->cap_w, P->cap_w, J->n_points));
        if (S->same_caps) {
            kmin = pkmin;
            kmax = pkmax;
        }
        if (pfi_alloc_job_floor(J, step, S->inv_step, S->vec, S->same_caps, &kmin, &kmax, &kf) ||
            kf < 0) {
            S->same_caps = 0;
            S->fh_on = 0;
            return 0;
        }
        hroom += 2 * (size_t)J->n_points + 2; /* ws_build's bound on the slots, so far */
        if (hroom > w->cap_h) {
            *short_room = 1;
            S->same_caps = 0;
            S->fh_on = 0;
            return 0;
        }
        hash[j] = pfi_alloc_id_hash(J->id);
        if (ends) { /* grid_ends: its quotients are job_grid's, kmin unless raised to 1 */
            if (kmin > 1)
                w->lo_w[j] = kmin * step;
            else
                w->lo_w[j] = ceil(fmax(J->min_cap_w, J->cap_w[0]) / step - 1e-9) * step;
            w->top_w[j] = kmax * step;
        }
        m0 += (long long)J->n_gpus * kmin;
        ms += (long long)J->n_gpus * kf;
        if (ms > (1LL << 53)) { /* past what is counted exactly: the slow way refuses it */
            S->same_caps = 0;
            S->fh_on = 0;
            return 0;
        }
        r->sla[j] = J->sla;
        r->floor_w[j] = kf * step;
        r->flags[j] = 0;
        S->a[j] = kf;
        S->b[j] = kmax;
        S->ng[j] = J->n_gpus;
        S->wt[j] = (isnan(J->weight) || J->weight == 0) ? 1.0 : J->weight;
        S->nk[j] = -1;
        S->hoff[j] = (int)used;
        /* on the grid, caps and range those of the job before: its hull waits for 3 more */
        int same_grid = lanes && S->same_caps && S->g_ok && kf == S->ga && kmax == S->gb;
        if (same_grid && !G.nc)
            G.nc = lane_cands(S, J->cap_w, J->n_points, G.K); /* -1: not in lanes */
        if (same_grid && G.nc > 0) {
            G.j[G.n++] = j;
            w->hsz[j] = G.nc;
            if (G.n == 4)
                lane_flush(S, &G, &scale);
        } else {
            if (G.n)
                lane_flush(S, &G, &scale);
            w->hsz[j] = build_hull(S, j, 0);
            if (!same_grid)
                G.nc = 0; /* S's on-grid answer may be another now */
            S->fh_ns += S->hm[j];
            scale += S->hmax[j];
        }
        used += (size_t)w->hsz[j];
        pkmin = kmin;
        pkmax = kmax;
    }
    if (G.n)
        lane_flush(S, &G, &scale);
    S->same_caps = 0;
    S->fh_ok = S->fh_on;
    S->fh_on = 0;
    S->fh_base = ms;
    long long bu = pfi_alloc_budget_units(budget_w, step); /* as pfi_alloc_prepare's */
    if (bu < ms || !(budget_w / step < PFI_ALLOC_MAX_UNITS) || pfi_alloc_check_ids_hashed(jobs, n, hash, NULL)) {
        S->fh_ok = 0;
        return 0;
    }
    w->ends_ok = ends;
    r->n = n;
    r->budget_w = budget_w;
    r->min_budget_nosla_w = m0 * step;
    r->min_budget_w = ms * step;
    r->sla_extra = 0;
    r->n_sla_dropped = 0;
    w->need_units = ms;
    w->used_h = used;
    w->scale = scale;
    w->scale_ok = 1;
    return 1;
}

/* What every build of a list starts with, after the buffers are had. */
static void ws_build_start(pfi_alloc_ws *w, const pfi_alloc_job *jobs, int n, double budget_w)
{
    solver *S = &w->S;
    w->jobs = jobs;
    w->n = n;
    w->valid = 0;
    w->budget_w = budget_w;
    S->vec = pfi_alloc_vec_level(w->o.vec);
    pfi_alloc_ids_free(w->ids); /* made again from the new list when a job arrives */
    w->ids = NULL;
    S->idx_ok = 0;
    S->fh_ok = 0;
    w->total_h = w->cap_h;
    w->ends_ok = 0;
    w->scale_ok = 0; /* summed by the one pass, else by the first solve */
    w->gcd_ok = 0;
}

/* Validation, grid and floors at budget_w, and every job's hull.  The buffers of the last
 * build are reused when they are large enough (a re-plan touches no new memory). */
static int ws_build(pfi_alloc_ws *w, const pfi_alloc_job *jobs, int n, double budget_w,
                    pfi_err *err)
{
    solver *S = &w->S;
    /* Buffers that hold as many jobs: the one pass goes first and counts the hull slots the
     * pass over every job below would (a million jobs' structs read once instead of twice);
     * when they run past the buffers' it stops, and the buffers are made anew below. */
    int known = 0; /* 1: the one pass failed on this list for another reason (it would again) */
    if (n > 0 && n <= w->cap_n && S->hoff) {
        int short_room = 0;
        ws_build_start(w, jobs, n, budget_w);
        if (ws_build_onepass(w, jobs, n, budget_w, &short_room))
            goto built;
        known = !short_room;
    }
    size_t hcap = 0;
    for (int j = 0; j < n; j++)
        hcap += 2 * (size_t)(jobs[j].n_points > 0 ? jobs[j].n_points : 0) + 2;
    size_t nn = n > 0 ? (size_t)n : 1, hh = hcap > 0 ? hcap : 1;
    int fresh = n > w->cap_n || hcap > w->cap_h || !S->hoff;
    if (fresh) {
        known = 0;
        ws_arrays_free(w);
        w->cap_n = 0;
        w->cap_h = 0;
        if (hcap > 0x7fffffff || !job_arrays(w, nn, hh)) {
            ws_arrays_free(w);
            return pfi_err_set(err, PFI_ENOMEM, "out of memory for %d jobs", n);
        }
        w->cap_n = n;
        w->cap_h = hcap;
    }
    ws_build_start(w, jobs, n, budget_w);
    int room_unused = 0;
    if (known || !ws_build_onepass(w, jobs, n, budget_w, &room_unused)) {
        w->ends_ok = 0;
        pfi_alloc_result_free(&w->prep);
        /* pfi_alloc_prepare writes each job's floor and top grid index: the root's ranges */
        int rc = pfi_alloc_prepare(jobs, n, budget_w, &w->o, S->a, S->b, &w->prep, err);
        if (rc) {
            w->prep_cap = 0;
            return rc;
        }
        w->prep_cap = n;
        w->need_units = 0;
        S->jobs = jobs;
        S->n = n;
        S->step = w->o.step_w;
        int e2;
        S->inv_step =
            frexp(S->step, &e2) == 0.5 && e2 > -1000 && e2 < 1000 ? 1.0 / S->step : 0;
        size_t used = 0;
        for (int j = 0; j < n; j++) {
            S->ng[j] = jobs[j].n_gpus;
            S->wt[j] = (isnan(jobs[j].weight) || jobs[j].weight == 0) ? 1.0 : jobs[j].weight;
            S->nk[j] = -1;
            w->need_units += (long long)jobs[j].n_gpus * S->a[j];
            S->hoff[j] = (int)used;
            w->hsz[j] = build_hull(S, j, 0); /* packed: the slots it may need, no more */
            used += (size_t)w->hsz[j];
        }
        w->used_h = used;
    }
built:
    w->fresh_only = w->prep.sla_extra > 0 || w->prep.n_sla_dropped > 0;
    free(w->m0t);
    w->m0t = NULL;
    w->valid = 1;
    w->solves = 0;
    return PFI_OK;
}

int pfi_alloc_ws_new(const pfi_alloc_job *jobs, int n, double budget_w,
                     const pfi_alloc_opts *opts, pfi_alloc_ws **out, pfi_err *err)
{
    *out = NULL;
    pfi_alloc_ws *w = calloc(1, sizeof *w);
    if (!w)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory for the allocator");
    if (opts)
        w->o = *opts;
    else
        pfi_alloc_opts_default(&w->o);
    int rc = ws_build(w, jobs, n, budget_w, err);
    if (rc) {
        pfi_alloc_ws_free(w);
        return rc;
    }
    *out = w;
    return PFI_OK;
}

int pfi_alloc_ws_set_jobs(pfi_alloc_ws *w, const pfi_alloc_job *jobs, int n, double budget_w,
                          pfi_err *err)
{
    return ws_build(w, jobs, n, budget_w, err);
}

/* A job's GPUs times its lowest grid index (its range's lower end, as a job update sums it). */
static long long m0_term(const pfi_alloc_job *J, double step)
{
    return (long long)J->n_gpus * (long long)ceil(fmax(J->min_cap_w, J->cap_w[0]) / step - 1e-9);
}

/* Job j's curve changed and its hull kept as many positive segments, each of the same cost
 * (om, oc: the old ones; only their slopes ohs moved): its entries move in place.  Between the
 * first and the last place they leave or take, the other entries are merged with its new ones
 * (each before the first entry that does not come before it, as patch_index puts them) and the
 * cost sums made anew from the one before; nothing outside moves, the total being the same.
 * The prefix the last indexed relaxation took is carried over as patch_index carries it.
 * 0 (nothing changed): not that case, or no memory. */
static int index_update(solver *S, int j, int om, const double *ohs, const long long *oc)
{
    const int *hk = S->hk + S->hoff[j];
    const double *hs = S->hs + S->hoff[j];
    long long n = S->ng[j];
    int m = S->hm[j], nidx = S->nidx;
    if (m != om || m <= 0)
        return 0;
    for (int i = 0; i < m; i++)
        if (n * (hk[i + 1] - hk[i]) != oc[i])
            return 0;
    int *op = malloc(2 * (size_t)m * sizeof *op);
    if (!op)
        return 0;
    int *nw = op + m;
    /* op[i]: where old segment i is; nw[u]: the first entry (old ones of job j included) that
     * does not come before new segment u; both ascend */
    for (int i = 0, lo = 0; i < m; i++) {
        int hi = nidx;
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (seg_order(S->ss[mid], S->sj[mid], S->si[mid], ohs[i], j, i) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo >= nidx || S->sj[lo] != j || S->si[lo] != i) { /* not where it must be */
            free(op);
            return 0;
        }
        op[i] = lo++;
    }
    for (int u = 0, lo = 0; u < m; u++) {
        int hi = nidx;
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (seg_order(S->ss[mid], S->sj[mid], S->si[mid], hs[u], j, u) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        nw[u] = lo;
    }
    /* Segment i's window [min(op, nw), max(op + 1, nw)] holds its old place and its new one;
     * overlapping windows are merged into one, each of which loses and gains the same
     * segments (so as many entries, of the same total cost) */
    size_t big = 1;
    for (int g = 0; g < m;) {
        int a = op[g] < nw[g] ? op[g] : nw[g], b = op[g] + 1 > nw[g] ? op[g] + 1 : nw[g];
        int e = g + 1;
        for (; e < m && (op[e] < nw[e] ? op[e] : nw[e]) <= b; e++)
            b = op[e] + 1 > nw[e] ? op[e] + 1 : nw[e];
        big = (size_t)(b - a) > big ? (size_t)(b - a) : big;
        g = e;
    }
    int *tj = malloc(big * 2 * sizeof *tj);
    double *ts = malloc(big * sizeof *ts);
    long long *tc = malloc(big * sizeof *tc);
    if (!tj || !ts || !tc) {
        free(op);
        free(tj);
        free(ts);
        free(tc);
        return 0;
    }
    int *ti = tj + big;
    for (int g = 0; g < m;) {
        int a = op[g] < nw[g] ? op[g] : nw[g], b = op[g] + 1 > nw[g] ? op[g] + 1 : nw[g];
        int e = g + 1;
        for (; e < m && (op[e] < nw[e] ? op[e] : nw[e]) <= b; e++)
            b = op[e] + 1 > nw[e] ? op[e] + 1 : nw[e];
        int o = 0, u = g;
        for (int x = a; x <= b; x++) {
            for (; u < e && nw[u] == x; u++, o++) { /* new segment u before entry x */
                tj[o] = j;
                ti[o] = u;
                ts[o] = hs[u];
                tc[o] = oc[u];
            }
            if (x < b && S->sj[x] != j) {
                tj[o] = S->sj[x];
                ti[o] = S->si[x];
                ts[o] = S->ss[x];
                tc[o] = S->cum[x + 1] - S->cum[x];
                o++;
            }
        }
        for (int q = 0; q < o; q++) {
            S->sj[a + q] = tj[q];
            S->si[a + q] = ti[q];
            S->ss[a + q] = ts[q];
            S->cum[a + q + 1] = S->cum[a + q] + tc[q];
        }
        g = e;
    }
    if (S->pos_ok) { /* the same prefix: job j's part of it counted on its new hull */
        int tf = S->tfull, gone = 0, uj = 0;
        for (int i = 0; i < m; i++) {
            gone += op[i] < tf;
            uj += nw[i] < tf;
        }
        S->tfull = tf - gone + uj;
        S->pos[j] = uj;
        S->rk[j] = S->hk[S->hoff[j] + uj];
        S->rv[j] = S->hv[S->hoff[j] + uj];
    }
    free(op);
    free(tj);
    free(ts);
    free(tc);
    return 1;
}

int pfi_alloc_ws_update_job(pfi_alloc_ws *w, int j, pfi_err *err)
{
    solver *S = &w->S;
    if (j < 0 || j >= w->n)
        return pfi_err_set(err, PFI_EINVAL, "no job %d (the allocator holds %d)", j, w->n);
    const pfi_alloc_job *J = &w->jobs[j];
    int rc = pfi_alloc_validate(J, 1, err);
    if (rc)
        return rc;
    /* Not the kept state, or floors that depend on the budget: rebuild from scratch (the same
     * checks, the same answer). */
    if (!w->valid || w->fresh_only)
        return ws_build(w, w->jobs, w->n, w->budget_w, err);
    pfi_alloc_result one;
    int kf, kmax;
    double room = 2.0 * J->n_gpus * (J->max_cap_w + w->o.step_w); /* more than it can use */
    if (pfi_alloc_prepare(J, 1, room, &w->o, &kf, &kmax, &one, NULL) != PFI_OK)
        return ws_build(w, w->jobs, w->n, w->budget_w, err); /* its error, as fresh */
    if (one.sla_extra > 0 || one.n_sla_dropped > 0) { /* its SLA is met at no cap */
        pfi_alloc_result_free(&one);
        return ws_build(w, w->jobs, w->n, w->budget_w, err);
    }
    /* The least budgets, sums over every job in grid units: the job's terms replaced. */
    w->need_units += (long long)J->n_gpus * kf - (long long)S->ng[j] * S->a[j];
    S->a[j] = kf;
    S->b[j] = kmax;
    w->prep.floor_w[j] = one.floor_w[0];
    w->prep.sla[j] = one.sla[0];
    w->prep.flags[j] = one.flags[0];
    pfi_alloc_result_free(&one);
    double step = w->o.step_w;
    if (!w->m0t) {
        if ((w->m0t = malloc((size_t)w->cap_n * sizeof *w->m0t))) {
            w->m0_units = 0;
            for (int i = 0; i < w->n; i++)
                w->m0_units += w->m0t[i] = m0_term(&w->jobs[i], step);
        }
    } else {
        long long t = m0_term(J, step);
        w->m0_units += t - w->m0t[j];
        w->m0t[j] = t;
    }
    long long m0 = 0;
    if (w->m0t)
        m0 = w->m0_units;
    else /* no memory to keep the terms: summed anew */
        for (int i = 0; i < w->n; i++)
            m0 += m0_term(&w->jobs[i], step);
    w->prep.min_budget_nosla_w = m0 * step;
    w->prep.min_budget_w = w->need_units * step;
    /* the old positive segments' slopes and costs, for the index to move them in place */
    int om = S->hm[j];
    double *ohs = S->idx_ok ? malloc(((size_t)om + 1) * (sizeof(double) + sizeof(long long)))
                            : NULL;
    long long *oc = ohs ? (long long *)(ohs + om + 1) : NULL;
    for (int i = 0; ohs && i < om; i++) {
        ohs[i] = S->hs[S->hoff[j] + i];
        oc[i] = (long long)S->ng[j] * (S->hk[S->hoff[j] + i + 1] - S->hk[S->hoff[j] + i]);
    }
    S->ng[j] = J->n_gpus;
    S->wt[j] = (isnan(J->weight) || J->weight == 0) ? 1.0 : J->weight;
    S->nk[j] = -1;
    int need = build_hull(S, j, 1);
    if (need > w->hsz[j]) { /* more slots than it holds: to the end of the used ones */
        if ((size_t)need > w->total_h - w->used_h) {
            free(ohs);
            return ws_build(w, w->jobs, w->n, w->budget_w, err); /* full: packed again */
        }
        S->hoff[j] = (int)w->used_h;
        w->hsz[j] = need;
        w->used_h += (size_t)need;
    }
    build_hull(S, j, 0);
    w->scale_ok = 0;
    w->gcd_ok = 0; /* its GPU count may have changed */
    S->fh_ok = 0;
    if (w->ends_ok)
        grid_ends(w, j);
    if (!S->idx_ok || (!(ohs && index_update(S, j, om, ohs, oc)) && !patch_index(S, j, 0)))
        w->solves = 0; /* sorted again on the second solve from here */
    free(ohs);
    return PFI_OK;
}

/* ---- jobs arriving and leaving ---- */

/* Each job's m0 term and their sum, from the jobs array (kept from here; the least budget
 * without SLAs is summed anew when there is no memory for them). */
static void m0_make(pfi_alloc_ws *w)
{
    double step = w->o.step_w;
    w->m0t = malloc((size_t)w->cap_n * sizeof *w->m0t);
    w->m0_units = 0;
    for (int i = 0; i < w->n; i++) {
        long long t = m0_term(&w->jobs[i], step);
        w->m0_units += t;
        if (w->m0t)
            w->m0t[i] = t;
    }
}

/* Room for need jobs in every per-job array (a new block, a quarter more, the kept arrays
 * copied; the scratch ones need no copy). */
static int ws_room_jobs(pfi_alloc_ws *w, int need)
{
    if (need <= w->cap_n)
        return 1;
    size_t nn = (size_t)need + (size_t)need / 4 + 16;
    if (nn > INT_MAX)
        return 0;
    char *p = big_alloc(job_bytes(nn));
    double *lo = w->lo_w ? realloc(w->lo_w, nn * sizeof *lo) : NULL;
    if (lo)
        w->lo_w = lo;
    double *top = w->top_w ? realloc(w->top_w, nn * sizeof *top) : NULL;
    if (top)
        w->top_w = top;
    long long *m0 = w->m0t ? realloc(w->m0t, nn * sizeof *m0) : NULL;
    if (m0)
        w->m0t = m0;
    if (!p || (w->lo_w && !lo) || (w->top_w && !top) || (w->m0t && !m0)) {
        free(p);
        return 0;
    }
    double **d[N_JD], *od[N_JD];
    int **in[N_JI], *oi[N_JI];
    job_lists(w, d, in);
    for (int i = 0; i < N_JD; i++)
        od[i] = *d[i];
    for (int i = 0; i < N_JI; i++)
        oi[i] = *in[i];
    job_carve(w, p, nn);
    size_t n = (size_t)w->n;
    for (int i = 0; i < KEPT_D; i++)
        memcpy(*d[i], od[i], n * sizeof(double));
    for (int i = 0; i < KEPT_I; i++)
        memcpy(*in[i], oi[i], n * sizeof(int));
    free(w->block);
    w->block = p;
    w->cap_n = (int)nn;
    return 1;
}

/* Room for need jobs in the per-job arrays of prep. */
static int ws_room_prep(pfi_alloc_ws *w, int need)
{
    if (need <= w->prep_cap)
        return 1;
    size_t nn = (size_t)need + (size_t)need / 4 + 16;
    pfi_alloc_result *r = &w->prep;
    double **d[] = {&r->cap_w, &r->tput, &r->floor_w, &r->sla};
    for (size_t i = 0; i < sizeof d / sizeof *d; i++) {
        double *x = realloc(*d[i], nn * sizeof *x);
        if (!x)
            return 0;
        *d[i] = x;
    }
    unsigned *f = realloc(r->flags, nn * sizeof *f);
    if (!f)
        return 0;
    r->flags = f;
    w->prep_cap = (int)nn;
    return 1;
}

/* Room for need more hull slots after the used ones: the hulls packed again, job after job,
 * into new storage with a quarter to spare. */
static int ws_room_hulls(pfi_alloc_ws *w, size_t need)
{
    if (need <= w->total_h - w->used_h)
        return 1;
    solver *S = &w->S;
    size_t live = 0;
    for (int j = 0; j < w->n; j++)
        live += (size_t)w->hsz[j];
    size_t hh = live + need + (live + need) / 4 + 64;
    if (hh > INT_MAX)
        return 0;
    char *h = big_alloc(hh * (2 * sizeof(double) + sizeof(int)));
    if (!h)
        return 0;
    solver old = *S;
    hull_carve(S, h, hh);
    size_t used = 0;
    for (int j = 0; j < w->n; j++) {
        size_t o = (size_t)old.hoff[j], m = (size_t)w->hsz[j];
        memcpy(S->hv + used, old.hv + o, m * sizeof *S->hv);
        memcpy(S->hs + used, old.hs + o, m * sizeof *S->hs);
        memcpy(S->hk + used, old.hk + o, m * sizeof *S->hk);
        S->hoff[j] = (int)used;
        used += m;
    }
    free(w->hblock);
    w->hblock = h;
    w->total_h = w->cap_h = hh;
    w->used_h = used;
    return 1;
}

/* Moves entries [j, n) of each kept per-job array one place up (by 1) or [j + 1, n) one place
 * down (by -1). */
static void ws_shift(pfi_alloc_ws *w, int j, int n, int by)
{
    double **d[N_JD];
    int **in[N_JI];
    job_lists(w, d, in);
    int from = by > 0 ? j : j + 1, to = from + by;
    size_t len = (size_t)(n - from);
    if (n <= from)
        return;
    for (int i = 0; i < KEPT_D; i++)
        memmove(*d[i] + to, *d[i] + from, len * sizeof(double));
    for (int i = 0; i < KEPT_I; i++)
        memmove(*in[i] + to, *in[i] + from, len * sizeof(int));
    pfi_alloc_result *r = &w->prep;
    memmove(r->floor_w + to, r->floor_w + from, len * sizeof *r->floor_w);
    memmove(r->sla + to, r->sla + from, len * sizeof *r->sla);
    memmove(r->flags + to, r->flags + from, len * sizeof *r->flags);
    if (w->ends_ok) {
        memmove(w->lo_w + to, w->lo_w + from, len * sizeof *w->lo_w);
        memmove(w->top_w + to, w->top_w + from, len * sizeof *w->top_w);
    }
    if (w->m0t)
        memmove(w->m0t + to, w->m0t + from, len * sizeof *w->m0t);
}

/* Moves index entries [t, t + len) to o <= t: the jobs after job j numbered one lower, cost
 * sums less delta. */
static void index_move(solver *S, int t, int o, int len, int j, long long delta)
{
    /* four at a time, each four read before they are written (o <= t): straight-line code the
     * compiler turns into vector operations */
    int *sj = S->sj, q = 0;
    for (; q + 4 <= len; q += 4) {
        int a0 = sj[t + q], a1 = sj[t + q + 1], a2 = sj[t + q + 2], a3 = sj[t + q + 3];
        sj[o + q] = a0 - (a0 > j);
        sj[o + q + 1] = a1 - (a1 > j);
        sj[o + q + 2] = a2 - (a2 > j);
        sj[o + q + 3] = a3 - (a3 > j);
    }
    for (; q < len; q++)
        sj[o + q] = sj[t + q] - (sj[t + q] > j);
    if (o != t) {
        memmove(S->si + o, S->si + t, (size_t)len * sizeof *S->si);
        memmove(S->ss + o, S->ss + t, (size_t)len * sizeof *S->ss);
    }
    if (o != t || delta) {
        long long *c = S->cum + 1;
        for (q = 0; q + 4 <= len; q += 4) {
            long long c0 = c[t + q], c1 = c[t + q + 1], c2 = c[t + q + 2], c3 = c[t + q + 3];
            c[o + q] = c0 - delta;
            c[o + q + 1] = c1 - delta;
            c[o + q + 2] = c2 - delta;
            c[o + q + 3] = c3 - delta;
        }
        for (; q < len; q++)
            c[o + q] = c[t + q] - delta;
    }
}

/* Job j's segments leave the index (each found by a binary search: its hull is still there),
 * the jobs after it are numbered one lower, and the prefix the last indexed relaxation took
 * loses job j's part of it. */
static void index_remove(solver *S, int j)
{
    const int *hk = S->hk + S->hoff[j];
    const double *hs = S->hs + S->hoff[j];
    long long n = S->ng[j], delta = 0;
    int t = 0, o = 0, tf = S->tfull;
    for (int i = 0; i < S->hm[j]; i++) {
        int lo = t, hi = S->nidx;
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (seg_order(S->ss[mid], S->sj[mid], S->si[mid], hs[i], j, i) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        index_move(S, t, o, lo - t, j, delta);
        o += lo - t;
        delta += n * (hk[i + 1] - hk[i]);
        tf -= lo < S->tfull;
        t = lo + 1;
    }
    index_move(S, t, o, S->nidx - t, j, delta);
    S->nidx = o + S->nidx - t;
    S->tfull = tf;
}

/* Job j arrived (its hull built; the index names the jobs from j on one lower): its segments
 * enter the index in place, the entries after each moved up from the end (the mirror of
 * index_remove), every job from j on renumbered one higher, the cost sums shifted by what was
 * inserted before them; the prefix the last indexed relaxation took is carried over as
 * patch_index carries it.  0 (nothing changed): the index has no room for them in place. */
static int index_insert(solver *S, int j)
{
    const int *hk = S->hk + S->hoff[j];
    const double *hs = S->hs + S->hoff[j];
    long long n = S->ng[j];
    int m = S->hm[j], nidx = S->nidx;
    if ((long long)nidx + m > S->nidx_cap)
        return 0;
    int *ins = malloc(((size_t)m + 1) * sizeof *ins);
    long long *pre = malloc(((size_t)m + 1) * sizeof *pre);
    if (!ins || !pre) {
        free(ins);
        free(pre);
        return 0;
    }
    /* ins[u]: the first old entry that does not come before new segment u (they ascend);
     * pre[u]: the cost of new segments 0..u-1 */
    int lo = 0, before = 0;
    pre[0] = 0;
    for (int u = 0; u < m; u++) {
        int hi = nidx;
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2, q = S->sj[mid];
            if (seg_order(S->ss[mid], q + (q >= j), S->si[mid], hs[u], j, u) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        ins[u] = lo;
        pre[u + 1] = pre[u] + n * (hk[u + 1] - hk[u]);
        before += lo < S->tfull;
    }
    /* from the end: old entries [ins[u], ins[u + 1]) move up by u + 1, then new segment u */
    int end = nidx;
    for (int u = m - 1; u >= -1; u--) {
        int start = u >= 0 ? ins[u] : 0, sh = u + 1;
        long long d = pre[u + 1];
        for (int x = end - 1; x >= start; x--) {
            int q = S->sj[x];
            S->sj[x + sh] = q + (q >= j);
            S->si[x + sh] = S->si[x];
            S->ss[x + sh] = S->ss[x];
            S->cum[x + sh + 1] = S->cum[x + 1] + d;
        }
        if (u >= 0) {
            int at = ins[u] + u;
            long long c0 = S->cum[ins[u]] + pre[u]; /* entry ins[u] is not written yet */
            S->sj[at] = j;
            S->si[at] = u;
            S->ss[at] = hs[u];
            S->cum[at + 1] = c0 + (pre[u + 1] - pre[u]);
        }
        end = start;
    }
    S->nidx = nidx + m;
    if (S->pos_ok) { /* the same prefix: job j's part of it counted on its hull */
        S->tfull += before;
        S->pos[j] = before;
        S->rk[j] = S->hk[S->hoff[j] + before];
        S->rv[j] = S->hv[S->hoff[j] + before];
    }
    free(ins);
    free(pre);
    return 1;
}

int pfi_alloc_ws_add_job(pfi_alloc_ws *w, const pfi_alloc_job *jobs, int n, int j, pfi_err *err)
{
    solver *S = &w->S;
    if (n != w->n + 1 || j < 0 || j >= n)
        return pfi_err_set(err, PFI_EINVAL,
                           "a job arriving at %d: the allocator holds %d jobs, the new list %d",
                           j, w->n, n);
    const pfi_alloc_job *J = &jobs[j];
    int rc = pfi_alloc_validate(J, 1, err);
    if (rc)
        return rc;
    pfi_alloc_result one;
    int kf, kmax;
    double room = 2.0 * J->n_gpus * (J->max_cap_w + w->o.step_w); /* more than it can use */
    rc = pfi_alloc_prepare(J, 1, room, &w->o, &kf, &kmax, &one, err);
    if (rc == PFI_EINVAL || rc == PFI_ERANGE || rc == PFI_ENOMEM)
        return rc; /* no grid in its range, or no memory: nothing changes */
    double step = w->o.step_w;
    if (!ws_room_jobs(w, n) || !ws_room_prep(w, n)) {
        pfi_alloc_result_free(&one);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory for %d jobs", n);
    }
    /* the ids: the table made from the new list at the first arrival (the old one may be gone) */
    int ins = w->ids ? pfi_alloc_ids_insert(w->ids, jobs, n, j)
                     : pfi_alloc_ids_make(&w->ids, jobs, n);
    if (ins <= 0) {
        pfi_alloc_result_free(&one);
        return ins == 0 ? pfi_err_set(err, PFI_EINVAL, "duplicate job id '%s'", J->id)
                        : pfi_err_set(err, PFI_ENOMEM, "out of memory for %d jobs", n);
    }
    /* Not the kept state, floors that depend on the budget, or an SLA met at no cap: rebuilt
     * at the last budget, as a new list (the same checks, the same answer). */
    if (rc || one.sla_extra > 0 || one.n_sla_dropped > 0 || !w->valid || w->fresh_only) {
        pfi_alloc_result_free(&one);
        return ws_build(w, jobs, n, w->budget_w, err);
    }
    /* From here the workspace holds the new list. */
    S->fh_ok = 0;
    ws_shift(w, j, w->n, 1);
    w->jobs = S->jobs = jobs;
    w->n = S->n = n;
    S->a[j] = kf;
    S->b[j] = kmax;
    S->ng[j] = J->n_gpus;
    S->wt[j] = (isnan(J->weight) || J->weight == 0) ? 1.0 : J->weight;
    S->nk[j] = -1;
    S->pos[j] = 0;
    S->rk[j] = kf;
    w->prep.floor_w[j] = one.floor_w[0];
    w->prep.sla[j] = one.sla[0];
    w->prep.flags[j] = one.flags[0];
    pfi_alloc_result_free(&one);
    w->need_units += (long long)J->n_gpus * kf;
    if (w->m0t)
        w->m0_units += w->m0t[j] = m0_term(J, step);
    else
        m0_make(w);
    w->prep.min_budget_nosla_w = w->m0_units * step;
    w->prep.min_budget_w = w->need_units * step;
    w->hsz[j] = 0;
    S->hoff[j] = (int)w->used_h;
    int need = build_hull(S, j, 1);
    if (!ws_room_hulls(w, (size_t)need)) {
        w->valid = 0; /* the next solve builds everything for the new list */
        return pfi_err_set(err, PFI_ENOMEM, "out of memory for %d jobs", n);
    }
    S->hoff[j] = (int)w->used_h;
    w->hsz[j] = need;
    w->used_h += (size_t)need;
    build_hull(S, j, 0);
    S->rv[j] = S->hv[S->hoff[j]];
    /* the scale sums hmax in job order: a job appended adds its term last */
    if (w->scale_ok && j == n - 1)
        w->scale += S->hmax[j];
    else
        w->scale_ok = 0;
    if (w->gcd_ok)
        w->units_gcd = gcd_ll(w->units_gcd, S->ng[j]);
    if (w->ends_ok)
        grid_ends(w, j);
    if (!S->idx_ok || (!index_insert(S, j) && !patch_index(S, j, 1)))
        w->solves = 0;
    return PFI_OK;
}

int pfi_alloc_ws_remove_job(pfi_alloc_ws *w, const pfi_alloc_job *jobs, int n, int j,
                            pfi_err *err)
{
    solver *S = &w->S;
    if (n != w->n - 1 || j < 0 || j > n)
        return pfi_err_set(err, PFI_EINVAL,
                           "job %d leaving: the allocator holds %d jobs, the new list %d", j,
                           w->n, n);
    if (n < 1)
        return pfi_err_set(err, PFI_EINVAL, "the last job cannot leave: no jobs to allocate");
    if (!w->valid || w->fresh_only)
        return ws_build(w, jobs, n, w->budget_w, err);
    double step = w->o.step_w;
    S->fh_ok = 0;
    if (w->ids)
        pfi_alloc_ids_remove(w->ids, j);
    if (S->idx_ok)
        index_remove(S, j);
    else
        w->solves = 0;
    w->need_units -= (long long)S->ng[j] * S->a[j];
    if (w->m0t)
        w->m0_units -= w->m0t[j];
    if ((size_t)S->hoff[j] + (size_t)w->hsz[j] == w->used_h) /* the last slots: free again */
        w->used_h = (size_t)S->hoff[j];
    ws_shift(w, j, w->n, -1);
    w->jobs = S->jobs = jobs;
    w->n = S->n = n;
    if (!w->m0t)
        m0_make(w);
    w->prep.min_budget_nosla_w = w->m0_units * step;
    w->prep.min_budget_w = w->need_units * step;
    w->scale_ok = 0; /* summed again in job order */
    w->gcd_ok = 0;  /* the one that left may have held it down */
    return PFI_OK;
}

/* res's per-job arrays for n jobs: old's when it has them all for at least n jobs (taken: old
 * no longer holds them), else new ones; res->cap_n says how many they hold.  0: out of memory
 * (what res holds is the caller's to free). */
static int result_arrays(pfi_alloc_result *res, pfi_alloc_result *old, int n)
{
    int old_cap = old ? (old->cap_n > old->n ? old->cap_n : old->n) : 0;
    if (old && old_cap >= n && old->cap_w && old->tput && old->floor_w && old->sla &&
        old->flags) {
        res->cap_n = old_cap;
        res->cap_w = old->cap_w;
        res->tput = old->tput;
        res->floor_w = old->floor_w;
        res->sla = old->sla;
        res->flags = old->flags;
        old->cap_w = old->tput = old->floor_w = old->sla = NULL;
        old->flags = NULL;
        return 1;
    }
    size_t nn = (size_t)n;
    res->cap_n = n;
    return (res->cap_w = big_alloc(nn * sizeof *res->cap_w)) &&
           (res->tput = big_alloc(nn * sizeof *res->tput)) &&
           (res->floor_w = big_alloc(nn * sizeof *res->floor_w)) &&
           (res->sla = big_alloc(nn * sizeof *res->sla)) &&
           (res->flags = big_alloc(nn * sizeof *res->flags));
}

/* The largest total of budget units the jobs can spend within bu: every job's power is its
 * GPU count times a whole number of units, so every total is a multiple of the counts' gcd.
 * The rest can never be spent, yet the relaxation's bound counted it: on a fleet of 8-GPU jobs
 * under a budget that is no multiple of 8 units the bound never met the best plan, and the
 * search ran to its work limit (10^6 nodes, a second, "not proven optimal") for a plan found at
 * once.  Stops at a gcd of 1, the usual mixed fleet, after a few jobs. */
static long long reachable_units(pfi_alloc_ws *w, long long bu)
{
    if (!w->gcd_ok) { /* once per set of jobs: a re-plan of a uniform fleet costs no pass */
        long long g = 0;
        for (int j = 0; j < w->S.n && g != 1; j++)
            g = gcd_ll(g, w->S.ng[j]);
        w->units_gcd = g;
        w->gcd_ok = 1;
    }
    long long g = w->units_gcd;
    return g > 1 ? bu - bu % g : bu;
}

/* steal: the workspace is used once; res takes the arrays pfi_alloc_prepare allocated.  old
 * (NULL: none): an earlier result whose arrays res may take (result_arrays). */
static int ws_solve(pfi_alloc_ws *w, double budget_w, pfi_alloc_result *res, int steal,
                    pfi_alloc_result *old, pfi_err *err)
{
    memset(res, 0, sizeof *res);
    solver *S = &w->S;
    const pfi_alloc_opts *o = &w->o;
    int n = S->n;
    long long bu;
    int brc = pfi_alloc_budget_check(budget_w, o->step_w, &bu, err);
    if (brc)
        return brc;
    /* Floors fixed by the SLAs hold for any budget that meets them; below that, or when they
     * were degraded for a budget, the degradation is redone for this one. */
    if (!w->valid || w->fresh_only || bu < w->need_units) {
        int rc = ws_build(w, w->jobs, w->n, budget_w, err);
        if (rc)
            return rc;
        n = S->n;
    }
    if (steal) {
        res->cap_w = w->prep.cap_w;
        res->tput = w->prep.tput;
        res->floor_w = w->prep.floor_w;
        res->sla = w->prep.sla;
        res->flags = w->prep.flags;
        w->prep.cap_w = w->prep.tput = w->prep.floor_w = w->prep.sla = NULL;
        w->prep.flags = NULL;
        w->valid = 0;
    } else if (n > 0 && (!result_arrays(res, old, n) || !ends_alloc(w))) {
        pfi_alloc_result_free(res);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory for %d jobs", n);
    }
    /* the floors, SLAs and flags to copy into res (ws_finish): the workspace's, or res's own */
    const pfi_alloc_result *src = steal ? res : &w->prep;
    res->n = n;
    res->budget_w = budget_w;
    res->min_budget_w = w->prep.min_budget_w;
    res->min_budget_nosla_w = w->prep.min_budget_nosla_w;
    res->sla_extra = w->prep.sla_extra;
    res->n_sla_dropped = w->prep.n_sla_dropped;
    S->bu = reachable_units(w, bu);
    S->nomem = 0;
    S->max_work = o->max_work;
    S->fill_whole = o->fill_whole;
    S->work = 0;
    S->nodes = 0;
    S->best = 0;
    S->have_best = 0;
    S->root_ub = 0;
    if (!w->scale_ok) { /* the same sum in the same order, once per set of hulls */
        w->scale = 0;
        for (int j = 0; j < n; j++)
            w->scale += S->hmax[j];
        w->scale_ok = 1;
    }
    S->tol = 1e-11 * w->scale; /* above the rounding of hull slopes and sums */
    S->rel_gap = o->rel_gap > 0 ? o->rel_gap : 0;
    /* A workspace solved again at the same hulls is being re-planned: sort its segments once
     * (the hulls are at the root here), so later budgets cost a search, not a selection; one
     * part of the sort a solve from the second on, so that none costs more than a fresh one. */
    if (w->solves < 2 && ++w->solves == 2)
        S->idx_next = -1;
    if (w->solves == 2 && !S->idx_ok && S->idx_next >= -1 && !index_stage(S))
        S->idx_next = -2; /* out of memory: re-solves select until the hulls change */
    if (o->max_work >= 0) {
        search(S);
    } else {
        int bj, bs;
        S->max_work = 0;
        node(S, &bj, &bs);
        S->max_work = -1;
    }
    if (S->nomem) {
        pfi_alloc_result_free(res);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory for %d jobs", n);
    }
    double root_ub = S->root_ub;
    res->optimal = S->max_work >= 0 || S->best >= root_ub - S->tol;
    res->nodes = S->nodes;
    if (!steal && !w->ends_ok) {
        for (int j = 0; j < n; j++)
            grid_ends(w, j);
        w->ends_ok = 1;
    }
    long long used = ws_finish(w, src, res); /* n >= 1: pfi_alloc_prepare refuses none */
    if (used > S->bu) { /* the one promise that must never break: refuse, do not return it */
        int rc = pfi_err_set(err, PFI_EINTERNAL,
                             "allocator bug: %lld W allocated over a %lld W budget",
                             (long long)(used * o->step_w), (long long)(S->bu * o->step_w));
        pfi_alloc_result_free(res);
        return rc;
    }
    res->upper_bound = res->optimal ? fmax(res->value, fmin(root_ub, res->value + S->tol))
                                    : root_ub;
    return PFI_OK;
}

int pfi_alloc_ws_solve(pfi_alloc_ws *w, double budget_w, pfi_alloc_result *res, pfi_err *err)
{
    return ws_solve(w, budget_w, res, 0, NULL, err);
}

int pfi_alloc_ws_solve_reuse(pfi_alloc_ws *w, double budget_w, pfi_alloc_result *res,
                             pfi_err *err)
{
    pfi_alloc_result old = *res;
    int rc = ws_solve(w, budget_w, res, 0, &old, err);
    pfi_alloc_result_free(&old); /* what res did not take */
    return rc;
}

int pfi_alloc_solve(const pfi_alloc_job *jobs, int n, double budget_w, const pfi_alloc_opts *opts,
                    pfi_alloc_result *res, pfi_err *err)
{
    pfi_alloc_ws *w;
    memset(res, 0, sizeof *res);
    int rc = pfi_alloc_ws_new(jobs, n, budget_w, opts, &w, err);
    if (rc)
        return rc;
    rc = ws_solve(w, budget_w, res, 1, NULL, err);
    pfi_alloc_ws_free(w);
    return rc;
}
