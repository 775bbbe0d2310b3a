/* SPDX-License-Identifier: Apache-2.0 */
/* node.c: a simulated node: GPUs with manufacturing variation, jobs placed on them, the history
 * of power limits, and everything at time t derived from that history.
 *
 * The firmware's power budget e(t) follows each limit change as a first-order system,
 * e(t) = L + (e(t_k) - L) exp(-(t - t_k)/tau); the clock is the highest whose busy power fits
 * under e(t).  Cumulative tokens and energy are integrals over that path: Gauss-Legendre over
 * the transient (10 tau after the last change), exact products in the steady state after it.
 * Values at every change are cached, so a query costs one short integral. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/physics.h"

typedef struct limit_change {
    double t, limit, e0; /* at t the limit became `limit`; the firmware budget was e0 */
} limit_change;

typedef struct gpu_hist {
    int n, cap;
    limit_change *ch;
    double cache_e;          /* the last operating point solved, reused in steady state */
    pfi_sim_op cache_op;
    pfi_sim_optable ops;     /* operating points by budget (transients); nodes NULL: unset */
    int ops_init;
} gpu_hist;

/* Cumulative quantities of one job at a time: tokens and each of its GPUs' energy. */
typedef struct job_point {
    double t;
    double tokens;
    double energy[PFI_MAX_GPUS]; /* indexed by GPU of the job (0..n_gpus-1) */
} job_point;

#define TPANELS 40 /* panels of tau/4 over a transient of 10 tau */
#define TCACHE 4

typedef struct transient {
    int k;          /* breakpoint index */
    int filled;     /* pts[0..filled-1] are known */
    double a, end, w;
    job_point *pts; /* cumulative integrals from the breakpoint at each panel boundary */
} transient;

#define NMEMO 4

typedef struct job_track {
    int n, cap;
    job_point *pts; /* breakpoints: t=0, then every limit change on one of the job's GPUs */
    transient tc[TCACHE];
    int next_tc;
    /* The last few cumulative values asked for: a sampler reads every GPU of a job at one
     * instant, and each reading needs the job at t, t-1 s and t-20 s. */
    double memo_t[NMEMO];
    job_point memo_p[NMEMO];
    int memo_n, memo_next;
} job_track;

struct pfi_sim_node {
    pfi_node_config cfg;
    double eff[PFI_MAX_GPUS]; /* per-GPU multiplier of dynamic power (manufacturing) */
    int job_of[PFI_MAX_GPUS];
    int stage_of[PFI_MAX_GPUS]; /* pipeline stage of the GPU in its job */
    double last_change;
    /* The job's state at the last instant asked for (every GPU of a job at one t). */
    int now_valid[PFI_SIM_MAX_JOBS];
    double now_t[PFI_SIM_MAX_JOBS];
    struct job_now *now_v[PFI_SIM_MAX_JOBS];
    /* From here on only the first cfg.n_gpus GPUs, cfg.n_jobs jobs and their stages are set
     * (a fit creates a node per evaluation: clearing all of it cost more than the rest). */
    gpu_hist hist[PFI_MAX_GPUS];
    job_track track[PFI_SIM_MAX_JOBS];
    pfi_sim_work work[PFI_SIM_MAX_JOBS][PFI_SIM_MAX_STAGES]; /* per job and stage */
};

/* Instantaneous state of one job (or one idle GPU) at one budget vector. */
typedef struct job_now job_now;
struct job_now {
    double step, rate;
    double f[PFI_MAX_GPUS];     /* compute-phase clock: it sets the pace */
    double fbusy[PFI_MAX_GPUS]; /* time-weighted clock over the busy phases */
    double power[PFI_MAX_GPUS], busy[PFI_MAX_GPUS];
    double tph[PFI_MAX_GPUS][PFI_PH_N]; /* time of each phase per step */
    int binds[PFI_MAX_GPUS];
};

static int grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 0;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = nc;
    return 0;
}

static int hist_push(gpu_hist *h, double t, double limit, double e0)
{
    if (grow((void **)&h->ch, &h->cap, h->n + 1, sizeof(limit_change)))
        return -1;
    h->ch[h->n++] = (limit_change){t, limit, e0};
    return 0;
}

/* Index of the last change at or before t (change 0 is the initial limit at t=0). */
static int hist_seg(const gpu_hist *h, double t)
{
    int lo = 0, hi = h->n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (h->ch[mid].t <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static double budget_at(const pfi_sim_node *n, int g, double t)
{
    const gpu_hist *h = &n->hist[g];
    int k = hist_seg(h, t);
    double L = h->ch[k].limit;
    double dt = t - h->ch[k].t;
    if (dt > 40 * n->cfg.gpu.tau_s)
        return L;
    return L + (h->ch[k].e0 - L) * exp(-dt / n->cfg.gpu.tau_s);
}

/* GPU g's table of operating points, set up the first time it is needed. */
static pfi_sim_optable *gpu_table(pfi_sim_node *n, int g)
{
    gpu_hist *h = &n->hist[g];
    if (!h->ops_init) {
        const pfi_sim_work *w = &n->work[n->job_of[g]][n->stage_of[g]];
        pfi_sim_optable_init(&h->ops, &n->cfg.gpu, w, n->eff[g]);
        h->ops_init = 1;
    }
    return &h->ops;
}

static const pfi_sim_op *op_for(pfi_sim_node *n, int g, double e)
{
    gpu_hist *h = &n->hist[g];
    if (e != h->cache_e) {
        pfi_sim_optable_op(gpu_table(n, g), e, &h->cache_op);
        h->cache_e = e;
    }
    return &h->cache_op;
}

static double gap_power(const pfi_gpu_model *g)
{
    /* Between kernels the clocks stay up for a while: a little more than idle. */
    return g->idle_w + 0.25 * g->busy_static_w;
}

/* State of job j when its GPUs' budgets are e[] (indexed by node GPU).  Each data-parallel
 * replica is a pipeline paced by its slowest stage, a stage by its slowest GPU (TP peers wait
 * for each other); the replicas meet at the gradient all-reduce, so the step is the slowest
 * replica's. */
static void job_eval_ops(pfi_sim_node *n, int j, const pfi_sim_op *ops, job_now *o);

static void job_eval(pfi_sim_node *n, int j, const double *e, job_now *o)
{
    const pfi_job_config *job = &n->cfg.jobs[j];
    pfi_sim_op ops[PFI_MAX_GPUS];
    for (int i = 0; i < job->n_gpus; i++)
        ops[i] = *op_for(n, job->first_gpu + i, e[job->first_gpu + i]);
    job_eval_ops(n, j, ops, o);
}

/* The same with the operating points of the job's GPUs (ops[i]: GPU first_gpu + i) given. */
static void job_eval_ops(pfi_sim_node *n, int j, const pfi_sim_op *ops, job_now *o)
{
    const pfi_job_config *job = &n->cfg.jobs[j];
    const pfi_gpu_model *g = &n->cfg.gpu;
    pfi_sim_gpu_step gs[PFI_MAX_GPUS];
    double pipe[PFI_MAX_GPUS]; /* [replica * pp + stage] */
    double sd[PFI_MAX_GPUS];   /* the spread of the GPU that sets pipe[k] (expected pace) */
    int expected = n->cfg.pace == PFI_SIM_PACE_EXPECTED;
    int pp = job->pp, tp = job->tp, dp = job->dp;
    for (int k = 0; k < dp * pp; k++)
        pipe[k] = sd[k] = 0;
    double t_host = 0;
    for (int i = 0; i < job->n_gpus; i++) {
        int gi = job->first_gpu + i;
        const pfi_sim_work *w = &n->work[j][n->stage_of[gi]];
        pfi_sim_gpu_step_at(g, w, &ops[i], &gs[i]);
        o->f[i] = ops[i].f[PFI_PH_COMPUTE];
        o->binds[i] = ops[i].binds;
        o->fbusy[i] = gs[i].fbusy;
        for (int p = 0; p < PFI_PH_KERNELS; p++)
            o->tph[i][p] = gs[i].t[p];
        int k = ((i / tp) % dp) * pp + n->stage_of[gi];
        if (gs[i].pipe > pipe[k]) {
            pipe[k] = gs[i].pipe;
            if (expected)
                sd[k] = pfi_sim_pipe_spread(w, gs[i].busy);
        }
        if (w->t_host > t_host)
            t_host = w->t_host;
    }
    o->step = 0;
    for (int d = 0; d < dp; d++) {
        double m = n->work[j][0].microbatches;
        double st = expected ? pfi_sim_pipeline_step_spread(pipe + d * pp, sd + d * pp, pp, m,
                                                            t_host)
                             : pfi_sim_pipeline_step(pipe + d * pp, pp, m, t_host);
        if (st > o->step)
            o->step = st; /* a synchronous step waits for its slowest replica */
    }
    o->rate = n->work[j][0].tokens_per_step / o->step;
    for (int i = 0; i < job->n_gpus; i++) {
        int gi = job->first_gpu + i;
        const pfi_sim_work *w = &n->work[j][n->stage_of[gi]];
        double busy = gs[i].busy;
        if (busy > o->step)
            busy = o->step;
        o->busy[i] = busy;
        double pb = gs[i].pbusy;
        /* Waiting for the pipeline or a slower peer spins a polling kernel; host time idles. */
        double host = w->t_host < o->step - busy ? w->t_host : o->step - busy;
        double spin = o->step - busy - host;
        double ps = ops[i].p[PFI_PH_SPIN];
        o->tph[i][PFI_PH_SPIN] = spin;
        o->power[i] = (busy * pb + spin * ps + host * gap_power(g)) / o->step;
    }
}

static void budgets_at(const pfi_sim_node *n, int j, double t, double *e)
{
    const pfi_job_config *job = &n->cfg.jobs[j];
    for (int i = 0; i < job->n_gpus; i++)
        e[job->first_gpu + i] = budget_at(n, job->first_gpu + i, t);
}

static void steady_budgets(const pfi_sim_node *n, int j, double t, double *e)
{
    const pfi_job_config *job = &n->cfg.jobs[j];
    for (int i = 0; i < job->n_gpus; i++) {
        const gpu_hist *h = &n->hist[job->first_gpu + i];
        e[job->first_gpu + i] = h->ch[hist_seg(h, t)].limit;
    }
}

/* Job j at time t, memoised for the instant last asked. */
static void job_at(pfi_sim_node *n, int j, double t, job_now *out)
{
    if (n->now_valid[j] && n->now_t[j] == t) {
        *out = *n->now_v[j];
        return;
    }
    double e[PFI_MAX_GPUS];
    budgets_at(n, j, t, e);
    job_eval(n, j, e, out);
    if (!n->now_v[j] && !(n->now_v[j] = malloc(sizeof(job_now))))
        return;
    *n->now_v[j] = *out;
    n->now_t[j] = t;
    n->now_valid[j] = 1;
}

/* The end of the transient that starts at breakpoint time a: 10 tau after the latest change of
 * any of the job's GPUs (at or before a). */
static double transient_end(const pfi_sim_node *n, int j, double a)
{
    const pfi_job_config *job = &n->cfg.jobs[j];
    double last = 0;
    for (int i = 0; i < job->n_gpus; i++) {
        const gpu_hist *h = &n->hist[job->first_gpu + i];
        double tk = h->ch[hist_seg(h, a)].t;
        if (tk > last)
            last = tk;
    }
    return last + 10 * n->cfg.gpu.tau_s;
}

/* 5-point Gauss-Legendre: the integrand is smooth inside each panel of a transient. */
static const double xg[5] = {-0.9061798459386640, -0.5384693101056831, 0.0, 0.5384693101056831,
                             0.9061798459386640};
static const double wg[5] = {0.2369268850561891, 0.4786286704993665, 0.5688888888888889,
                             0.4786286704993665, 0.2369268850561891};

/* Adds the integrals of tokens and energy over [a, b] with one Gauss-Legendre panel. */
static void gl_panel(pfi_sim_node *n, int j, double a, double b, job_point *acc)
{
    const pfi_job_config *job = &n->cfg.jobs[j];
    double e[PFI_MAX_GPUS];
    job_now now;
    double hw = (b - a) / 2, c = (a + b) / 2;
    for (int q = 0; q < 5; q++) {
        budgets_at(n, j, c + hw * xg[q], e);
        job_eval(n, j, e, &now);
        acc->tokens += wg[q] * hw * now.rate;
        for (int i = 0; i < job->n_gpus; i++)
            acc->energy[i] += wg[q] * hw * now.power[i];
    }
}

static void add_point(const pfi_sim_node *n, int j, job_point *acc, const job_point *d)
{
    acc->tokens += d->tokens;
    for (int i = 0; i < n->cfg.jobs[j].n_gpus; i++)
        acc->energy[i] += d->energy[i];
}

/* The cumulative integrals at each panel boundary of breakpoint k's transient, filled lazily
 * and kept for the most recently used breakpoints: a query then costs one partial panel. */
static transient *transient_for(pfi_sim_node *n, int j, int k)
{
    job_track *tr = &n->track[j];
    for (int c = 0; c < TCACHE; c++)
        if (tr->tc[c].k == k && tr->tc[c].pts)
            return &tr->tc[c];
    transient *t = &tr->tc[tr->next_tc];
    tr->next_tc = (tr->next_tc + 1) % TCACHE;
    if (!t->pts && !(t->pts = malloc(sizeof(job_point) * (TPANELS + 1))))
        return NULL;
    t->k = k;
    t->a = tr->pts[k].t;
    /* The grid depends only on the history up to the breakpoint (which never changes), so
     * every process integrates on the same points whatever it asked before. */
    t->end = transient_end(n, j, t->a);
    t->w = (t->end - t->a) / TPANELS;
    memset(&t->pts[0], 0, sizeof(job_point));
    t->filled = 1;
    return t;
}

/* Integrals over [a, b], a being breakpoint k's time and b before the next breakpoint. */
static void integrate(pfi_sim_node *n, int j, int k, double b, job_point *acc)
{
    double a = n->track[j].pts[k].t;
    if (b <= a)
        return;
    transient *t = transient_for(n, j, k);
    if (!t) { /* out of memory: integrate the transient in one go, less cached */
        job_point d = {0};
        double tend = transient_end(n, j, a);
        for (int p = 0; p < TPANELS; p++) {
            double x0 = a + (tend - a) * p / TPANELS, x1 = a + (tend - a) * (p + 1) / TPANELS;
            if (x0 >= b)
                break;
            gl_panel(n, j, x0, x1 < b ? x1 : b, &d);
        }
        add_point(n, j, acc, &d);
        if (b > tend) {
            double e[PFI_MAX_GPUS];
            job_now now;
            steady_budgets(n, j, b, e);
            job_eval(n, j, e, &now);
            acc->tokens += now.rate * (b - tend);
            for (int i = 0; i < n->cfg.jobs[j].n_gpus; i++)
                acc->energy[i] += now.power[i] * (b - tend);
        }
        return;
    }
    double mid = b < t->end ? b : t->end;
    int p = t->w > 0 ? (int)floor((mid - a) / t->w) : TPANELS;
    if (p > TPANELS)
        p = TPANELS;
    while (t->filled <= p) {
        int q = t->filled;
        t->pts[q] = t->pts[q - 1];
        gl_panel(n, j, a + (q - 1) * t->w, q == TPANELS ? t->end : a + q * t->w, &t->pts[q]);
        t->filled++;
    }
    add_point(n, j, acc, &t->pts[p]);
    double from = p == TPANELS ? t->end : a + p * t->w;
    if (mid > from)
        gl_panel(n, j, from, mid, acc);
    if (b > t->end) {
        double e[PFI_MAX_GPUS];
        job_now now;
        steady_budgets(n, j, b, e);
        job_eval(n, j, e, &now);
        acc->tokens += now.rate * (b - t->end);
        for (int i = 0; i < n->cfg.jobs[j].n_gpus; i++)
            acc->energy[i] += now.power[i] * (b - t->end);
    }
}

/* Cumulative tokens and energy of job j at t. */
static void job_cum_compute(pfi_sim_node *n, int j, double t, job_point *out);

static void job_cum(pfi_sim_node *n, int j, double t, job_point *out)
{
    job_track *tr = &n->track[j];
    for (int k = 0; k < tr->memo_n; k++)
        if (tr->memo_t[k] == t) {
            *out = tr->memo_p[k];
            return;
        }
    job_cum_compute(n, j, t, out);
    tr->memo_t[tr->memo_next] = t;
    tr->memo_p[tr->memo_next] = *out;
    tr->memo_next = (tr->memo_next + 1) % NMEMO;
    if (tr->memo_n < NMEMO)
        tr->memo_n++;
}

static void job_cum_compute(pfi_sim_node *n, int j, double t, job_point *out)
{
    job_track *tr = &n->track[j];
    int lo = 0, hi = tr->n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (tr->pts[mid].t <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    *out = tr->pts[lo];
    integrate(n, j, lo, t, out);
    out->t = t;
}

/* Inverse of the standard normal CDF (Acklam's rational approximation, |error| < 1.2e-9). */
static double normal_quantile(double p)
{
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00, 2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                               2.445134137142996e+00, 3.754408661907416e+00};
    if (p < 0.02425) {
        double q = sqrt(-2 * log(p));
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
               ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    if (p > 1 - 0.02425)
        return -normal_quantile(1 - p);
    double q = p - 0.5, r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

int pfi_sim_node_new(const pfi_node_config *cfg_in, pfi_sim_node **out, pfi_err *err)
{
    *out = NULL;
    pfi_sim_node *n = malloc(sizeof *n);
    if (!n)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    /* The configuration is copied whole; what follows it up to the GPUs' histories cleared. */
    n->cfg = *cfg_in;
    memset((char *)n + offsetof(pfi_sim_node, eff), 0,
           offsetof(pfi_sim_node, hist) - offsetof(pfi_sim_node, eff));
    int rc = pfi_sim_config_check(&n->cfg, err);
    if (rc != PFI_OK) {
        free(n);
        return rc;
    }
    const pfi_node_config *c = &n->cfg;
    /* A GPU's history: its few fields set below, not its whole table of operating points
     * (set up when first needed, gpu_table). */
    for (int g = 0; g < c->n_gpus; g++) {
        gpu_hist *h = &n->hist[g];
        h->n = h->cap = h->ops_init = 0;
        h->ch = NULL;
    }
    memset(n->track, 0, (size_t)c->n_jobs * sizeof n->track[0]);
    /* Same cap, slightly different clocks: chips differ in power efficiency.  A node gets the
     * expected spread of n parts (normal order statistics, Blom's approximation) in an order
     * the seed shuffles, so a bigger job meets a worse slowest chip, as in a real fleet, while
     * no node draws an implausible outlier. */
    int order[PFI_MAX_GPUS];
    for (int g = 0; g < c->n_gpus; g++)
        order[g] = g;
    for (int g = c->n_gpus - 1; g > 0; g--) {
        int k = (int)(pfi_sim_uniform(c->seed, 1, (uint64_t)g) * (g + 1));
        int tmp = order[g];
        order[g] = order[k];
        order[k] = tmp;
    }
    for (int g = 0; g < c->n_gpus; g++) {
        n->job_of[g] = -1;
        double q = (order[g] + 1 - 0.375) / (c->n_gpus + 0.25);
        n->eff[g] = 1.0 + c->variation * normal_quantile(q);
    }
    for (int j = 0; j < c->n_jobs; j++) {
        const pfi_job_config *job = &c->jobs[j];
        for (int i = 0; i < job->n_gpus; i++) {
            n->job_of[job->first_gpu + i] = j;
            /* Megatron's order: TP innermost, then DP, then PP. */
            n->stage_of[job->first_gpu + i] = i / (job->tp * job->dp);
        }
        rc = pfi_sim_job_works(c, job, n->work[j], err);
        if (rc != PFI_OK) {
            pfi_sim_node_free(n);
            return rc;
        }
    }
    for (int g = 0; g < c->n_gpus; g++) {
        double L = c->initial_limit_w[g] > 0 ? c->initial_limit_w[g] : c->gpu.default_limit_w;
        n->hist[g].cache_e = NAN;
        if (hist_push(&n->hist[g], 0, L, L) != 0) {
            pfi_sim_node_free(n);
            return pfi_err_set(err, PFI_ENOMEM, "out of memory");
        }
    }
    for (int j = 0; j < c->n_jobs; j++) {
        job_track *tr = &n->track[j];
        if (grow((void **)&tr->pts, &tr->cap, 1, sizeof(job_point))) {
            pfi_sim_node_free(n);
            return pfi_err_set(err, PFI_ENOMEM, "out of memory");
        }
        memset(&tr->pts[0], 0, sizeof(job_point));
        tr->n = 1;
        for (int q = 0; q < TCACHE; q++)
            tr->tc[q].k = -1;
    }
    *out = n;
    return PFI_OK;
}

void pfi_sim_node_free(pfi_sim_node *n)
{
    if (!n)
        return;
    for (int g = 0; g < n->cfg.n_gpus; g++) {
        free(n->hist[g].ch);
        if (n->hist[g].ops_init)
            pfi_sim_optable_free(&n->hist[g].ops);
    }
    for (int j = 0; j < PFI_SIM_MAX_JOBS; j++)
        free(n->now_v[j]);
    for (int j = 0; j < n->cfg.n_jobs; j++) {
        free(n->track[j].pts);
        for (int c = 0; c < TCACHE; c++)
            free(n->track[j].tc[c].pts);
    }
    free(n);
}

const pfi_node_config *pfi_sim_node_config(const pfi_sim_node *n) { return &n->cfg; }
int pfi_sim_node_gpus(const pfi_sim_node *n) { return n->cfg.n_gpus; }
int pfi_sim_job_count(const pfi_sim_node *n) { return n->cfg.n_jobs; }
double pfi_sim_last_change(const pfi_sim_node *n) { return n->last_change; }

int pfi_sim_job_find(const pfi_sim_node *n, const char *name)
{
    for (int j = 0; j < n->cfg.n_jobs; j++)
        if (strcmp(n->cfg.jobs[j].name, name) == 0)
            return j;
    return -1;
}

static int check_gpu(const pfi_sim_node *n, int g, pfi_err *err)
{
    if (g < 0 || g >= n->cfg.n_gpus)
        return pfi_err_set(err, PFI_ENOENT, "no GPU %d (this node has %d)", g, n->cfg.n_gpus);
    return PFI_OK;
}

double pfi_sim_limit(const pfi_sim_node *n, int g, double t)
{
    if (g < 0 || g >= n->cfg.n_gpus)
        return NAN;
    const gpu_hist *h = &n->hist[g];
    return h->ch[hist_seg(h, t)].limit;
}

int pfi_sim_device(pfi_sim_node *n, int g, double t, pfi_device *d, pfi_err *err)
{
    int rc = check_gpu(n, g, err);
    if (rc != PFI_OK)
        return rc;
    const pfi_gpu_model *m = &n->cfg.gpu;
    memset(d, 0, sizeof *d);
    d->index = g;
    snprintf(d->name, sizeof d->name, "%s", m->nvml_name);
    uint64_t a = (uint64_t)(pfi_sim_uniform(n->cfg.seed, 2, (uint64_t)g) * 4294967296.0);
    uint64_t b = (uint64_t)(pfi_sim_uniform(n->cfg.seed, 3, (uint64_t)g) * 4294967296.0);
    snprintf(d->uuid, sizeof d->uuid, "GPU-%08llx-%04llx-%04llx-%04llx-%04llx%08llx",
             (unsigned long long)a, (unsigned long long)(b >> 16), (unsigned long long)(b & 0xffff),
             (unsigned long long)((a ^ b) & 0xffff), (unsigned long long)(g & 0xffff),
             (unsigned long long)(a * 2654435761u & 0xffffffffu));
    d->min_limit_w = m->min_limit_w;
    d->max_limit_w = m->max_limit_w;
    d->default_limit_w = m->default_limit_w;
    d->limit_w = pfi_sim_limit(n, g, t);
    d->enforced_w = d->limit_w;
    return PFI_OK;
}

int pfi_sim_set_limit(pfi_sim_node *n, int g, double t, double watts, pfi_err *err)
{
    int rc = check_gpu(n, g, err);
    if (rc != PFI_OK)
        return rc;
    const pfi_gpu_model *m = &n->cfg.gpu;
    if (!isfinite(t) || t < n->last_change || t < 0)
        return pfi_err_set(err, PFI_EINVAL,
                           "limit change at t=%.6f s is before the last one (t=%.6f s)", t,
                           n->last_change);
    if (!isfinite(watts) || watts < m->min_limit_w - 0.5 || watts > m->max_limit_w + 0.5)
        return pfi_err_set(err, PFI_ERANGE,
                           "power limit %.0f W is outside GPU %d's range %.0f-%.0f W", watts, g,
                           m->min_limit_w, m->max_limit_w);
    int j = n->job_of[g];
    if (j >= 0) {
        /* Record the job's cumulative state at t before the history changes under it. */
        job_track *tr = &n->track[j];
        n->now_valid[j] = 0;
        tr->memo_n = 0;
        /* Another change at the instant of the last breakpoint alters its transient. */
        for (int c = 0; c < TCACHE; c++)
            if (tr->tc[c].k == tr->n - 1 && tr->pts[tr->n - 1].t == t)
                tr->tc[c].k = -1;
        if (tr->pts[tr->n - 1].t < t) {
            job_point p;
            job_cum(n, j, t, &p);
            if (grow((void **)&tr->pts, &tr->cap, tr->n + 1, sizeof(job_point)))
                return pfi_err_set(err, PFI_ENOMEM, "out of memory");
            tr->pts[tr->n++] = p;
        }
    }
    gpu_hist *h = &n->hist[g];
    double e = budget_at(n, g, t);
    if (h->ch[h->n - 1].t == t) {
        h->ch[h->n - 1].limit = watts; /* two sets at one instant: the last one wins */
    } else if (hist_push(h, t, watts, e) != 0) {
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    h->cache_e = NAN;
    n->last_change = t;
    return PFI_OK;
}

int pfi_sim_job_status_at(pfi_sim_node *n, int j, double t, pfi_sim_job_status *s, pfi_err *err)
{
    if (j < 0 || j >= n->cfg.n_jobs)
        return pfi_err_set(err, PFI_ENOENT, "no job %d (this node runs %d)", j, n->cfg.n_jobs);
    if (!(t >= 0))
        t = 0;
    const pfi_job_config *job = &n->cfg.jobs[j];
    job_now now;
    job_at(n, j, t, &now);
    job_point p;
    job_cum(n, j, t, &p);
    memset(s, 0, sizeof *s);
    s->tokens_per_s = now.rate;
    s->tokens = p.tokens;
    s->tokens_per_step = n->work[j][0].tokens_per_step;
    s->iterations = p.tokens / s->tokens_per_step;
    s->step_time_s = now.step;
    s->sm_clock_mhz = INFINITY;
    for (int i = 0; i < job->n_gpus; i++) {
        s->sm_clock_mhz = fmin(s->sm_clock_mhz, now.f[i]);
        s->power_w += now.power[i] / job->n_gpus;
    }
    return PFI_OK;
}

/* The steady state from the job's state at its GPUs' limits. */
static void steady_of(const pfi_sim_node *n, int j, const job_now *now, pfi_sim_steady *s)
{
    const pfi_job_config *job = &n->cfg.jobs[j];
    memset(s, 0, sizeof *s);
    s->tokens_per_s = now->rate;
    s->step_time_s = now->step;
    int slow = 0;
    for (int i = 0; i < job->n_gpus; i++) {
        s->power_w += now->power[i] / job->n_gpus;
        s->sm_clock_mhz += now->fbusy[i] / job->n_gpus;
        s->busy_frac += now->busy[i] / now->step / job->n_gpus;
        s->cap_binds |= now->binds[i];
        if (now->busy[i] > now->busy[slow])
            slow = i;
    }
    s->compute_frac = now->tph[slow][PFI_PH_COMPUTE] / now->step;
    s->mem_frac = now->tph[slow][PFI_PH_MEMORY] / now->step;
    s->comm_frac = now->tph[slow][PFI_PH_COMM] / now->step;
}

int pfi_sim_job_steady(const pfi_sim_node *nc, int j, double cap_w, pfi_sim_steady *s,
                       pfi_err *err)
{
    pfi_sim_node *n = (pfi_sim_node *)nc; /* only the clock cache changes */
    if (j < 0 || j >= n->cfg.n_jobs)
        return pfi_err_set(err, PFI_ENOENT, "no job %d (this node runs %d)", j, n->cfg.n_jobs);
    const pfi_job_config *job = &n->cfg.jobs[j];
    double e[PFI_MAX_GPUS];
    for (int i = 0; i < job->n_gpus; i++)
        e[job->first_gpu + i] = cap_w;
    job_now now;
    job_eval(n, j, e, &now);
    steady_of(n, j, &now, s);
    return PFI_OK;
}

/* Requests of one batch of operating points (pfi_sim_optable_ops). */
#define STEADY_BATCH 256

int pfi_sim_job_steady_n(const pfi_sim_node *nc, int j, const double *cap_w, int n_caps,
                         pfi_sim_steady *s, pfi_err *err)
{
    pfi_sim_node *n = (pfi_sim_node *)nc; /* only the clock tables change */
    if (j < 0 || j >= n->cfg.n_jobs)
        return pfi_err_set(err, PFI_ENOENT, "no job %d (this node runs %d)", j, n->cfg.n_jobs);
    const pfi_job_config *job = &n->cfg.jobs[j];
    int ng = job->n_gpus, per = STEADY_BATCH / ng; /* caps per batch; ng <= PFI_MAX_GPUS */
    pfi_sim_optable *t[STEADY_BATCH];
    double e[STEADY_BATCH];
    pfi_sim_op ops[STEADY_BATCH];
    for (int c0 = 0; c0 < n_caps; c0 += per) {
        int nc_ = n_caps - c0 < per ? n_caps - c0 : per;
        for (int c = 0; c < nc_; c++)
            for (int i = 0; i < ng; i++) {
                t[c * ng + i] = gpu_table(n, job->first_gpu + i);
                e[c * ng + i] = cap_w[c0 + c];
            }
        pfi_sim_optable_ops(t, e, ops, nc_ * ng);
        for (int c = 0; c < nc_; c++) {
            job_now now;
            job_eval_ops(n, j, ops + c * ng, &now);
            steady_of(n, j, &now, &s[c0 + c]);
        }
    }
    return PFI_OK;
}

/* Energy of GPU g at t: its job's integral, or idle power for a GPU without work. */
static double energy_at(pfi_sim_node *n, int g, double t)
{
    int j = n->job_of[g];
    if (t <= 0)
        return 0;
    if (j < 0)
        return n->cfg.gpu.idle_w * t;
    job_point p;
    job_cum(n, j, t, &p);
    return p.energy[g - n->cfg.jobs[j].first_gpu];
}

int pfi_sim_sample(pfi_sim_node *n, int g, double t, pfi_sample *s, pfi_err *err)
{
    int rc = check_gpu(n, g, err);
    if (rc != PFI_OK)
        return rc;
    if (!(t >= 0))
        t = 0;
    const pfi_node_config *c = &n->cfg;
    const pfi_gpu_model *m = &c->gpu;
    int j = n->job_of[g];
    s->t_s = t;
    s->mem_clock_mhz = m->mem_clock_mhz;
    s->limit_w = pfi_sim_limit(n, g, t);
    s->enforced_w = s->limit_w;
    double inst, dram, mem_mib;
    if (j < 0) {
        inst = m->idle_w;
        s->sm_clock_mhz = m->sm_clock_idle_mhz;
        s->clock_reasons = PFI_REASON_IDLE;
        s->gpu_util = s->sm_active = s->sm_occupancy = s->tensor_active = 0;
        dram = 0;
        s->nvlink_tx_mibs = s->nvlink_rx_mibs = s->pcie_tx_mibs = s->pcie_rx_mibs = 0;
        mem_mib = 0;
    } else {
        const pfi_job_config *job = &c->jobs[j];
        const pfi_sim_work *w = &n->work[j][n->stage_of[g]];
        job_now now;
        job_at(n, j, t, &now);
        int i = g - job->first_gpu;
        inst = now.power[i];
        /* A reading lands in any phase: report the busy-time mean, in NVML's 15 MHz steps. */
        s->sm_clock_mhz = floor(now.fbusy[i] / 15.0 + 1e-9) * 15.0;
        s->clock_reasons = now.binds[i] ? PFI_REASON_SW_POWERCAP : 0;
        double T = now.step;
        double tc = now.tph[i][PFI_PH_COMPUTE], tm = now.tph[i][PFI_PH_MEMORY];
        double tx = now.tph[i][PFI_PH_COMM];
        double spin = now.tph[i][PFI_PH_SPIN];
        /* A polling kernel counts as a kernel running, as NVML's utilization counts it. */
        s->gpu_util = (now.busy[i] + spin) / T;
        s->sm_active = (tc * 0.97 + tm * 0.80 + tx * 0.35 + spin * 0.05) / T;
        s->sm_occupancy = s->sm_active * 0.42;
        s->tensor_active = tc * w->tensor_comp / T;
        /* Traffic per step is fixed: a slower phase spreads it thinner. */
        dram = (w->t_comp * m->sm_clock_max_mhz / now.f[i] * w->dram_comp +
                w->t_mem * w->dram_mem + w->t_comm * w->dram_comm) / T;
        double mib = 1024.0 * 1024.0;
        s->nvlink_tx_mibs = s->nvlink_rx_mibs = w->nvlink_bytes / T / mib;
        s->pcie_tx_mibs = s->pcie_rx_mibs = w->pcie_bytes / T / mib;
        mem_mib = w->mem_used_mib;
    }
    s->dram_active = dram;
    s->mem_used_mib = mem_mib + 512; /* the driver's context */
    s->mem_power_w = m->hbm_idle_w + m->hbm_w * dram;
    /* Noise is a function of the instant, so every process sees the same reading. */
    uint64_t tick = (uint64_t)floor(t * 50.0);
    s->power_inst_w = inst + c->noise_w * pfi_sim_gauss(c->seed, 100 + (uint64_t)g, tick);
    double e_now = energy_at(n, g, t);
    double win = t < 1.0 ? t : 1.0;
    double avg = win > 0 ? (e_now - energy_at(n, g, t - win)) / win : inst;
    uint64_t tick10 = (uint64_t)floor(t * 10.0);
    s->power_w = avg + 0.15 * c->noise_w * pfi_sim_gauss(c->seed, 300 + (uint64_t)g, tick10);
    s->energy_j = e_now;
    double twin = t < 20.0 ? t : 20.0;
    double slow = twin > 0 ? (e_now - energy_at(n, g, t - twin)) / twin : inst;
    s->temp_c = c->ambient_c + m->temp_c_per_w * slow;
    s->have = PFI_F_POWER | PFI_F_POWER_INST | PFI_F_ENERGY | PFI_F_SM_CLOCK | PFI_F_MEM_CLOCK |
              PFI_F_REASONS | PFI_F_GPU_UTIL | PFI_F_SM_ACTIVE | PFI_F_SM_OCCUPANCY |
              PFI_F_TENSOR | PFI_F_DRAM | PFI_F_NVLINK | PFI_F_PCIE | PFI_F_TEMP |
              PFI_F_MEM_USED | PFI_F_LIMIT;
    if (m->name[0] == 'H') /* HBM power is a field on Hopper only */
        s->have |= PFI_F_MEM_POWER;
    else
        s->mem_power_w = NAN;
    if (m->nvlink_gbs <= 0) {
        s->nvlink_tx_mibs = s->nvlink_rx_mibs = NAN;
        s->have &= ~(uint32_t)PFI_F_NVLINK;
    }
    return PFI_OK;
}
