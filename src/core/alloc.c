/* SPDX-License-Identifier: Apache-2.0 */
/* alloc.c: what every allocation policy shares: input checks, the cap grid, SLA floors and the
 * degradation order when the budget is short, and the bookkeeping of a result.  The optimal
 * solver itself is in alloc_solve.c. */
#include "core/alloc.h"
#include "core/alloc_vec.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Slack for floating-point comparisons of budgets and throughputs, relative. */
#define REL_EPS 1e-12

void pfi_alloc_opts_default(pfi_alloc_opts *o)
{
    o->step_w = 1.0;
    o->on_infeasible = PFI_INFEASIBLE_FAIL;
    o->rel_gap = 1e-6;
    o->max_work = 1e8;
    o->fill_whole = 0;
    o->vec = PFI_ALLOC_VEC_BEST;
    o->caps_alone = 0;
}

void pfi_alloc_result_free(pfi_alloc_result *r)
{
    if (!r)
        return;
    free(r->cap_w);
    free(r->tput);
    free(r->floor_w);
    free(r->sla);
    free(r->flags);
    memset(r, 0, sizeof *r);
}

static double curve_at(const double *x, const double *y, int n, double c)
{
    if (c <= x[0])
        return y[0];
    if (c >= x[n - 1])
        return y[n - 1];
    int lo = 0, hi = n - 1;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (x[mid] <= c)
            lo = mid;
        else
            hi = mid;
    }
    return y[lo] + (y[hi] - y[lo]) * (c - x[lo]) / (x[hi] - x[lo]);
}

double pfi_alloc_tput_at(const pfi_alloc_job *job, double cap_w)
{
    return curve_at(job->cap_w, job->tput, job->n_points, cap_w);
}

double pfi_alloc_budget_from_cut(const pfi_alloc_job *jobs, int n, double cut)
{
    double sum = 0;
    for (int j = 0; j < n; j++)
        sum += jobs[j].n_gpus * jobs[j].p0_w;
    return (1.0 - cut) * sum;
}

/* A hash of an id, a word at a time (multiply and fold). */
unsigned pfi_alloc_id_hash(const char *id)
{
    size_t len = strlen(id);
    uint64_t h = 0x9e3779b97f4a7c15ull ^ len, x;
    for (; len >= 8; len -= 8, id += 8) {
        memcpy(&x, id, 8);
        h = (h ^ x) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    x = 0;
    memcpy(&x, id, len);
    h = (h ^ x) * 0xc4ceb9fe1a85ec53ull;
    return (unsigned)(h ^ h >> 29);
}

/* Job j's own checks (all of pfi_alloc_validate's but its id's uniqueness); the points' tests
 * first in vector lanes at level vec (core/alloc_vec.h), the loop only when they do not pass. */
const char *pfi_alloc_watts_text(char buf[32], double w)
{
    double r = floor(w * 10 + 0.5) / 10;
    snprintf(buf, 32, r == floor(r) ? "%.0f" : "%.1f", r);
    return buf;
}

void pfi_alloc_watts_below(char bb[32], double budget_w, char nb[32], double need_w)
{
    /* the budget as given (its fewest decimals that read back to it), the need rounded up at
     * the fewest decimals within 1e-4 of it: above the budget, since it is */
    snprintf(bb, 32, "%.17g", budget_w);
    for (int d = 0; d <= 9; d++)
        if (snprintf(bb, 32, "%.*f", d, budget_w) < 32 &&
            fabs(strtod(bb, NULL) - budget_w) <= 1e-12 * fabs(budget_w))
            break;
        else
            snprintf(bb, 32, "%.17g", budget_w);
    snprintf(nb, 32, "%.17g", need_w);
    for (int d = 0; d <= 9; d++) {
        double p = pow(10, d), up = ceil(need_w * p) / p;
        if (up <= need_w + 1e-4 * fabs(need_w) && up > budget_w) {
            snprintf(nb, 32, "%.*f", d, up);
            break;
        }
    }
    /* a budget a hair short reads as the need to a few decimals: both in full then */
    if (strtod(bb, NULL) >= strtod(nb, NULL) || strcmp(bb, nb) == 0) {
        snprintf(bb, 32, "%.17g", budget_w);
        snprintf(nb, 32, "%.17g", need_w);
    }
}

long long pfi_alloc_budget_units(double budget_w, double step_w)
{
    double u = budget_w / step_w;
    if (!(u < PFI_ALLOC_MAX_UNITS))
        return (long long)PFI_ALLOC_MAX_UNITS;
    if (!(u > 0))
        return 0;
    /* 1e-12 of the budget, at most a thousandth of a step: at 1e12 steps 1e-12 was a whole
     * step over the budget */
    return (long long)floor(u + fmin(u * REL_EPS, 1e-3));
}

int pfi_alloc_budget_check(double budget_w, double step_w, long long *units, pfi_err *err)
{
    if (!isfinite(budget_w) || budget_w <= 0)
        return pfi_err_set(err, PFI_EINVAL, "budget %g W must be positive", budget_w);
    if (!(budget_w / step_w < PFI_ALLOC_MAX_UNITS))
        return pfi_err_set(err, PFI_ERANGE,
                           "budget %g W is %.3g steps of a %g W grid, past 2^53, what the "
                           "allocator counts exactly: use a coarser step",
                           budget_w, budget_w / step_w, step_w);
    *units = pfi_alloc_budget_units(budget_w, step_w);
    return PFI_OK;
}

static int check_job(const pfi_alloc_job *J, int j, int vec, int caps_ok, pfi_err *err)
{
    if (!J->id || !J->id[0])
        return pfi_err_set(err, PFI_EINVAL, "job %d has no id", j + 1);
    if (J->n_gpus < 1)
        return pfi_err_set(err, PFI_EINVAL, "job %s: %d GPUs (needs at least 1)", J->id,
                           J->n_gpus);
    if (J->n_points <= 0 || !J->cap_w || !J->tput)
        return pfi_err_set(err, PFI_EINVAL, "job %s has no curve", J->id);
    if (J->n_points == 1)
        return pfi_err_set(err, PFI_EINVAL,
                           "job %s: its curve has one point; at least 2 caps are needed to "
                           "know what power costs",
                           J->id);
    int pass = caps_ok ? pfi_alloc_vec_tput_ok(vec, J->tput, J->n_points)
                       : pfi_alloc_vec_points_ok(vec, J->cap_w, J->tput, J->n_points);
    for (int i = pass ? J->n_points : 0; i < J->n_points; i++) {
        if (!isfinite(J->cap_w[i]) || J->cap_w[i] <= 0 || !isfinite(J->tput[i]) ||
            J->tput[i] < 0)
            return pfi_err_set(err, PFI_EINVAL,
                               "job %s: curve point %d (cap %g W, throughput %g) is not a "
                               "positive cap with a non-negative throughput",
                               J->id, i + 1, J->cap_w[i], J->tput[i]);
        if (i > 0 && J->cap_w[i] <= J->cap_w[i - 1])
            return pfi_err_set(err, PFI_EINVAL,
                               "job %s: curve caps must increase (%g W after %g W)", J->id,
                               J->cap_w[i], J->cap_w[i - 1]);
    }
    if (caps_ok)
        ;
    else if (!isfinite(J->min_cap_w) || !isfinite(J->max_cap_w) || J->min_cap_w <= 0 ||
        J->max_cap_w < J->min_cap_w)
        return pfi_err_set(err, PFI_EINVAL, "job %s: cap range %g..%g W is not valid", J->id,
                           J->min_cap_w, J->max_cap_w);
    else if (J->max_cap_w < J->cap_w[0])
        return pfi_err_set(err, PFI_EINVAL,
                           "job %s: its maximum cap %g W is below its curve's first point "
                           "%g W",
                           J->id, J->max_cap_w, J->cap_w[0]);
    if (!isfinite(J->p0_w) || J->p0_w <= 0)
        return pfi_err_set(err, PFI_EINVAL, "job %s: baseline power %g W must be positive",
                           J->id, J->p0_w);
    if (!isnan(J->sla) && !(J->sla >= 0 && J->sla < 1))
        return pfi_err_set(err, PFI_EINVAL, "job %s: SLA max slowdown %g must be in [0, 1)",
                           J->id, J->sla);
    if (!isnan(J->weight) && !(isfinite(J->weight) && J->weight >= 0))
        return pfi_err_set(err, PFI_EINVAL, "job %s: weight %g must be positive", J->id,
                           J->weight);
    if (!isnan(J->t0) && !(isfinite(J->t0) && J->t0 > 0))
        return pfi_err_set(err, PFI_EINVAL, "job %s: baseline throughput %g must be positive",
                           J->id, J->t0);
    return PFI_OK;
}

int pfi_alloc_validate(const pfi_alloc_job *jobs, int n, pfi_err *err)
{
    if (n <= 0)
        return pfi_err_set(err, PFI_EINVAL, "no jobs to allocate");
    for (int j = 0; j < n; j++) {
        int rc = check_job(&jobs[j], j, PFI_ALLOC_VEC_SCALAR, 0, err);
        if (rc)
            return rc;
    }
    return pfi_alloc_check_ids_hashed(jobs, n, NULL, err);
}

int pfi_alloc_check_ids_hashed(const pfi_alloc_job *jobs, int n, const unsigned *hashes,
                               pfi_err *err)
{
    /* An open-addressing hash of the ids: duplicate detection in O(n) for 100k jobs.  The
     * hashes are computed first, in job order (eight bytes at a time); then each insertion
     * fetches the slot of the job 16 places ahead, and compares ids only when the stored hash
     * is equal.  Below 2^24 - 1 jobs a slot also holds its hash's top 8 bits above the job
     * (tag), so that most occupied slots are passed without reading that job's hash: at a
     * million jobs that read is a wait on memory for ~40% of insertions. */
    size_t cap = 16;
    while (cap < 2 * (size_t)n)
        cap <<= 1;
    unsigned *slot = calloc(cap, sizeof *slot);  /* job + 1, 0: empty */
    unsigned *mine = hashes ? NULL : malloc((size_t)n * sizeof *mine);
    const unsigned *hash = hashes ? hashes : mine;
    if (!slot || !hash) {
        free(slot);
        free(mine);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory checking %d job ids", n);
    }
    if (mine)
        for (int j = 0; j < n; j++)
            mine[j] = pfi_alloc_id_hash(jobs[j].id);
    unsigned tmask = n < (1 << 24) - 1 ? 0xff000000u : 0; /* the tag's bits, if any */
    for (int j = 0; j < n; j++) {
        if (j + 16 < n)
            __builtin_prefetch(&slot[hash[j + 16] & (cap - 1)], 1);
        unsigned h = hash[j], tag = h & tmask;
        size_t i = h & (cap - 1);
        for (; slot[i]; i = (i + 1) & (cap - 1)) {
            if ((slot[i] & tmask) != tag)
                continue; /* another hash: not the same id */
            unsigned o = (slot[i] & ~tmask) - 1;
            if (hash[o] == h && strcmp(jobs[o].id, jobs[j].id) == 0) {
                free(slot);
                free(mine);
                return pfi_err_set(err, PFI_EINVAL, "duplicate job id '%s'", jobs[j].id);
            }
        }
        slot[i] = tag | ((unsigned)j + 1);
    }
    free(slot);
    free(mine);
    return PFI_OK;
}

/* Grid index range of job j: multiples of step inside [max(min cap, first point), max cap].
 * inv: 1 / step when that is exact (step a power of two), else 0; x * inv is then x / step to
 * the last bit (both round the same number). */
static int job_grid(const pfi_alloc_job *J, double step, double inv, int *kmin, int *kmax,
                    pfi_err *err)
{
    double lo = fmax(J->min_cap_w, J->cap_w[0]);
    double qa = inv > 0 ? lo * inv : lo / step;
    double qb = inv > 0 ? J->max_cap_w * inv : J->max_cap_w / step;
    double a = ceil(qa - 1e-9), b = floor(qb + 1e-9);
    if (a < 1)
        a = 1; /* a cap of 0 W is never in a range: a step far above the caps gives no grid */
    if (a > b)
        return pfi_err_set(err, PFI_EINVAL,
                           "job %s: its cap range %g..%g W holds no multiple of the %g W grid",
                           J->id, lo, J->max_cap_w, step);
    if (b > 1e9) /* the grid's indices are ints; what is too fine here is the step */
        return pfi_err_set(err, PFI_ERANGE,
                           "job %s: its cap %g W is %.3g steps of the %g W grid, more than 1e9: "
                           "use a coarser step", J->id, J->max_cap_w, b, step);
    *kmin = (int)a;
    *kmax = (int)b;
    return PFI_OK;
}

static double job_t0(const pfi_alloc_job *J)
{
    return isnan(J->t0) ? pfi_alloc_tput_at(J, J->max_cap_w) : J->t0;
}

int pfi_alloc_sla_met(const pfi_alloc_job *J, double cap_w, double sla)
{
    if (isnan(sla) || sla >= 1)
        return 1;
    double target = (1.0 - sla) * job_t0(J);
    return pfi_alloc_tput_at(J, cap_w) >= target - REL_EPS * fabs(target);
}

/* Smallest grid index in [kmin, kmax] whose throughput meets (1 - sla) T0; -1 when none.
 * Curves need not be monotone, so every linear piece is tried from the left. */
static int sla_floor(const pfi_alloc_job *J, double step, int kmin, int kmax, double sla)
{
    if (isnan(sla) || sla >= 1)
        return kmin;
    double target = (1.0 - sla) * job_t0(J);
    double tol = REL_EPS * fabs(target);
    double xa = kmin * step, xe = kmax * step;
    int i = 0;
    while (i < J->n_points && J->cap_w[i] <= xa)
        i++;
    for (;;) {
        double xb = (i < J->n_points && J->cap_w[i] < xe) ? J->cap_w[i] : xe;
        double ya = pfi_alloc_tput_at(J, xa), yb = pfi_alloc_tput_at(J, xb);
        if (ya >= target - tol || yb >= target - tol) {
            double c = ya >= target - tol ? xa : xa + (target - ya) / (yb - ya) * (xb - xa);
            /* A curve near DBL_MAX can overflow the interpolation to -inf (c NaN), and a
             * NaN or infinite cap has no int: scan the piece from its start instead. */
            if (!isfinite(c))
                c = xa;
            int k = (int)ceil(c / step - 1e-9);
            if (k < kmin)
                k = kmin;
            /* The rounded-up grid point can fall past a peak into a dip: check it. */
            for (; k <= kmax && k * step <= xb + 1e-9; k++)
                if (pfi_alloc_tput_at(J, k * step) >= target - tol)
                    return k;
        }
        if (xb >= xe)
            return -1;
        xa = xb;
        i++;
    }
}

int pfi_alloc_job_floor(const pfi_alloc_job *J, double step, double inv_step, int vec,
                        int same_caps, int *kmin, int *kmax, int *kf)
{
    if (check_job(J, 0, vec, same_caps, NULL) ||
        (!same_caps && job_grid(J, step, inv_step, kmin, kmax, NULL)))
        return PFI_EINVAL;
    *kf = sla_floor(J, step, *kmin, *kmax, J->sla);
    return PFI_OK;
}

static int result_alloc(pfi_alloc_result *r, int n)
{
    memset(r, 0, sizeof *r);
    r->n = n;
    r->cap_w = calloc((size_t)n, sizeof *r->cap_w);
    r->tput = calloc((size_t)n, sizeof *r->tput);
    r->floor_w = calloc((size_t)n, sizeof *r->floor_w);
    r->sla = calloc((size_t)n, sizeof *r->sla);
    r->flags = calloc((size_t)n, sizeof *r->flags);
    if (!r->cap_w || !r->tput || !r->floor_w || !r->sla || !r->flags) {
        pfi_alloc_result_free(r);
        return PFI_ENOMEM;
    }
    return PFI_OK;
}

/* Sum n_j * floor_j in grid units with every SLA loosened by extra; -1 when some SLA cannot be
 * met at any cap. */
static long long floors_with(const pfi_alloc_job *jobs, int n, double step, const int *kmin,
                             const int *kmax, double extra, int *kf)
{
    long long sum = 0;
    for (int j = 0; j < n; j++) {
        double s = isnan(jobs[j].sla) ? NAN : jobs[j].sla + extra;
        int k = sla_floor(&jobs[j], step, kmin[j], kmax[j], s);
        if (k < 0)
            return -1;
        kf[j] = k;
        sum += (long long)jobs[j].n_gpus * k;
    }
    return sum;
}

typedef struct by_weight {
    double w;
    int j;
} by_weight;

static int cmp_weight(const void *a, const void *b)
{
    const by_weight *x = a, *y = b;
    if (x->w != y->w)
        return x->w < y->w ? -1 : 1;
    return x->j - y->j;
}

static double weight_of(const pfi_alloc_job *J)
{
    return (isnan(J->weight) || J->weight == 0) ? 1.0 : J->weight;
}

/* Degrades SLAs by mode until the floors fit in bu grid units.  Returns PFI_OK with kf filled. */
static int degrade(const pfi_alloc_job *jobs, int n, const pfi_alloc_opts *o, const int *kmin,
                   const int *kmax, long long bu, int *kf, pfi_alloc_result *res)
{
    double step = o->step_w;
    if (o->on_infeasible == PFI_INFEASIBLE_RELAX) {
        /* Floors fall as the allowed slowdown grows, so bisection finds the least extra. */
        double lo = 0, hi = 1;
        for (int it = 0; it < 60; it++) {
            double mid = 0.5 * (lo + hi);
            long long s = floors_with(jobs, n, step, kmin, kmax, mid, kf);
            if (s >= 0 && s <= bu)
                hi = mid;
            else
                lo = mid;
        }
        floors_with(jobs, n, step, kmin, kmax, hi, kf);
        res->sla_extra = hi;
        for (int j = 0; j < n; j++)
            if (!isnan(jobs[j].sla)) {
                res->sla[j] = fmin(jobs[j].sla + hi, 1.0);
                res->flags[j] |= PFI_ALLOC_SLA_RELAXED;
            }
        return PFI_OK;
    }
    /* by-weight: the SLAs of the least important jobs go first. */
    by_weight *order = malloc((size_t)n * sizeof *order);
    if (!order)
        return PFI_ENOMEM;
    int m = 0;
    long long sum = 0;
    for (int j = 0; j < n; j++) {
        if (kf[j] < 0)
            kf[j] = kmin[j]; /* an SLA no cap meets is dropped first */
        sum += (long long)jobs[j].n_gpus * kf[j];
        if (!isnan(jobs[j].sla))
            order[m++] = (by_weight){sla_floor(&jobs[j], step, kmin[j], kmax[j], jobs[j].sla) < 0
                                         ? -1.0
                                         : weight_of(&jobs[j]),
                                     j};
    }
    qsort(order, (size_t)m, sizeof *order, cmp_weight);
    for (int i = 0; i < m; i++) {
        int j = order[i].j;
        if (order[i].w >= 0 && sum <= bu)
            break;
        sum -= (long long)jobs[j].n_gpus * (kf[j] - kmin[j]);
        kf[j] = kmin[j];
        res->sla[j] = NAN;
        res->flags[j] |= PFI_ALLOC_SLA_DROPPED;
        res->n_sla_dropped++;
    }
    free(order);
    return PFI_OK;
}

int pfi_alloc_prepare(const pfi_alloc_job *jobs, int n, double budget_w,
                      const pfi_alloc_opts *o, int *kf, int *kmax, pfi_alloc_result *res,
                      pfi_err *err)
{
    memset(res, 0, sizeof *res);
    int rc = pfi_alloc_validate(jobs, n, err);
    if (rc)
        return rc;
    if (!(o->step_w > 0) || !isfinite(o->step_w))
        return pfi_err_set(err, PFI_EINVAL, "cap grid step %g W must be positive", o->step_w);
    long long bu;
    if ((rc = pfi_alloc_budget_check(budget_w, o->step_w, &bu, err)))
        return rc;
    if (o->on_infeasible < PFI_INFEASIBLE_FAIL || o->on_infeasible > PFI_INFEASIBLE_BY_WEIGHT)
        return pfi_err_set(err, PFI_EINVAL, "unknown on-infeasible mode %d", o->on_infeasible);
    if (result_alloc(res, n))
        return pfi_err_set(err, PFI_ENOMEM, "out of memory for %d jobs", n);
    res->budget_w = budget_w;
    double step = o->step_w;
    int *kmin = malloc((size_t)n * sizeof *kmin);
    if (!kmin) {
        pfi_alloc_result_free(res);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory for %d jobs", n);
    }
    long long m0 = 0, ms = 0;
    int unmet = -1;
    for (int j = 0; j < n; j++) {
        if ((rc = job_grid(&jobs[j], step, 0, &kmin[j], &kmax[j], err)))
            goto fail;
        kf[j] = sla_floor(&jobs[j], step, kmin[j], kmax[j], jobs[j].sla);
        if (kf[j] < 0 && unmet < 0)
            unmet = j;
        m0 += (long long)jobs[j].n_gpus * kmin[j];
        ms += (long long)jobs[j].n_gpus * (kf[j] < 0 ? kmax[j] : kf[j]);
        res->sla[j] = jobs[j].sla;
        /* each term is at most 1e6 GPUs x 1e9 steps: checked before a sum could overflow */
        if (!((double)ms < PFI_ALLOC_MAX_UNITS)) {
            rc = pfi_err_set(err, PFI_ERANGE,
                             "the jobs' floors come to more than 2^53 steps of a %g W grid (by "
                             "job %s), past what the allocator counts exactly: use a coarser "
                             "step",
                             step, jobs[j].id);
            goto fail;
        }
    }
    res->min_budget_nosla_w = m0 * step;
    res->min_budget_w = unmet >= 0 ? INFINITY : ms * step;
    if (bu < m0) {
        char b1[32], b2[32];
        pfi_alloc_watts_below(b1, budget_w, b2, m0 * step);
        rc = pfi_err_set(err, PFI_EINFEASIBLE,
                         "budget %s W is below %s W, what the jobs need with every GPU at its "
                         "minimum cap: no allocation is possible",
                         b1, b2);
        goto fail;
    }
    if (unmet >= 0 || bu < ms) {
        if (o->on_infeasible == PFI_INFEASIBLE_FAIL) {
            if (unmet >= 0)
                rc = pfi_err_set(err, PFI_EINFEASIBLE,
                                 "job %s cannot meet its SLA (max slowdown %g%%) at any cap up "
                                 "to %g W; relax it (on-infeasible relax-sla or by-weight)",
                                 jobs[unmet].id, 100 * jobs[unmet].sla, jobs[unmet].max_cap_w);
            else {
                char b1[32], b2[32], b3[32];
                pfi_alloc_watts_below(b1, budget_w, b2, ms * step);
                rc = pfi_err_set(err, PFI_EINFEASIBLE,
                                 "budget %s W is below the minimum feasible budget %s W that "
                                 "the SLAs need (minimum caps alone need %s W); relax SLAs "
                                 "(on-infeasible relax-sla or by-weight) or raise the budget",
                                 b1, b2, pfi_alloc_watts_text(b3, m0 * step));
            }
            goto fail;
        }
        if ((rc = degrade(jobs, n, o, kmin, kmax, bu, kf, res))) {
            rc = pfi_err_set(err, rc, "out of memory relaxing SLAs");
            goto fail;
        }
    }
    for (int j = 0; j < n; j++)
        res->floor_w[j] = kf[j] * step;
    free(kmin);
    return PFI_OK;
fail:
    free(kmin);
    pfi_alloc_result_free(res);
    return rc;
}

void pfi_alloc_finish(const pfi_alloc_job *jobs, int n, const pfi_alloc_opts *o,
                      pfi_alloc_result *res)
{
    double power = 0, value = 0, step = o->step_w;
    int min_n = jobs[0].n_gpus;
    for (int j = 0; j < n; j++) {
        const pfi_alloc_job *J = &jobs[j];
        double c = res->cap_w[j];
        res->tput[j] = pfi_alloc_tput_at(J, c);
        power += J->n_gpus * c;
        value += weight_of(J) * res->tput[j];
        if (J->n_gpus < min_n)
            min_n = J->n_gpus;
        unsigned f = res->flags[j] & (PFI_ALLOC_SLA_RELAXED | PFI_ALLOC_SLA_DROPPED);
        double lo = ceil(fmax(J->min_cap_w, J->cap_w[0]) / step - 1e-9) * step;
        if (c <= lo + 1e-9)
            f |= PFI_ALLOC_AT_MIN;
        else if (c <= res->floor_w[j] + 1e-9)
            f |= PFI_ALLOC_AT_SLA;
        if (c >= floor(J->max_cap_w / step + 1e-9) * step - 1e-9)
            f |= PFI_ALLOC_AT_MAX;
        res->flags[j] = f;
    }
    res->power_w = power;
    res->value = value;
    res->budget_binds = res->budget_w - power < min_n * step - 1e-9;
}
