/* SPDX-License-Identifier: Apache-2.0 */
/* sim_validate.c: calibration of the simulator against measured power-limit sweeps (Perseus,
 * SOSP'24: zeus_baseline/{A100,A40}/zeus_global.csv), read through store/perseus.h.
 *
 * Each transformer job of those files is configured from its model name and parallelism and
 * simulated at every measured limit; relative throughput T/T(max) and relative power P/P(max)
 * are compared with the measurement.
 *
 * What is fitted (docs/simulator.md): the V-f shape of each chip on the Perseus stage profiles
 * (locked-clock power, not the validation runs), then per GPU type (never per run) the SM
 * dynamic and busy static power, GEMM and memory efficiency, the cluster's host time and (A40)
 * inter-host bandwidth, on at most half of each type's runs, chosen before any fitting:
 *   A100-PCIE-80GB: bert-huge-uncased, bloom-3b      (held out: gpt3-xl, t5-3b)
 *   A40:            gpt3-2.7b, t5-3b                  (held out: bert-huge, bloom-3b, gpt3-6.7b)
 * (the A40 T5 run is needed to see the cluster's network: nothing else stalls on it).  On
 * request (PFI_SIM_VAL_FAM_*) constants per model family too, each fitted with the one GPU
 * type that has a fit run of the family and applied to its runs on the other type.  The fit
 * is a bounded Nelder-Mead (GSL) on squared errors. */
#include "study/sim_validate.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multimin.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "store/csv.h"
#include "store/perseus.h"
#include "util/progress.h"

/* ---------------------------------------------------------------- runs */

typedef struct vrun {
    pfi_sim_val_run out;
    int type;          /* 0 A100-PCIE-80GB, 1 A40 */
    int fam;           /* index into ctx.fam */
    pfi_node_config cfg;
    /* What simulate() hands the simulator: cfg copied once (sim_set), the context's constants
     * written into it at every evaluation (run_constants overwrites all it ever writes). */
    pfi_node_config sim;
    int sim_set;
    double meas_time[PFI_MAX_LEVELS], meas_energy[PFI_MAX_LEVELS];
    double meas_time0;
} vrun;

/* A model family's constants.  Each family is fitted on the fit runs of one GPU type only
 * (fit_type) and applied unchanged to its runs on the other type. */
typedef struct vfam {
    char name[32];
    int fit_type;   /* -1: no fit run of this family: it keeps the catalogue's defaults */
    double act_log; /* log of the GEMM switching activity relative to the fit type's mean */
    double stall;   /* input/host stall as a fraction of GPU work */
    double mem_log; /* log of memory traffic per token relative to the fit type's mean */
    double gemm_log; /* log of the achieved GEMM efficiency relative to the mean */
} vfam;

/* One row of zeus_local.csv (a power limit per pipeline stage) of a run, kept for the
 * per-stage check and, with PFI_SIM_VAL_STAGE_ROWS, for the fit. */
#define MAX_ROWS 256
typedef struct vrow {
    int run;                               /* index into ctx.runs */
    double limit_w[PFI_SIM_MAX_STAGES];    /* per stage */
    double stage_layers[PFI_SIM_MAX_STAGES]; /* the row's own partition, in mean layers */
    double time_s, energy_j;
} vrow;

typedef struct ctx {
    vrun runs[PFI_SIM_VAL_MAX_RUNS];
    int nruns;
    vrow rows[MAX_ROWS];
    int nrows;
    int stage_rows;    /* PFI_SIM_VAL_STAGE_ROWS */
    vfam fam[PFI_SIM_VAL_MAX_RUNS];
    int nfam;
    int fam_mode;
    int starts; /* starting points of the sweep fits */
    int no_memo; /* PFI_SIM_VAL_NO_MEMO */
    pfi_gpu_model gpu[2];
    double net[2];
    double host[2]; /* the cluster's host time per layer and microbatch, ms */
    double jit[2];  /* the cluster network's relative spread per transfer */
    struct profile *prof[2];
    /* what the current fit moves */
    int type;
} ctx;

/* Chip-to-chip spread of power efficiency (1 sigma), modelled, not fitted: two runs of the
 * same GPU count cannot separate it from the other constants. */
#define VAL_VARIATION 0.03

/* The fit runs, two per GPU type (at most half), by a rule fixed before any fit: the A40's
 * include T5 (the only run that stalls on the cluster's network, so the only one that can tell
 * its bandwidth); every family measured on both types has its one fit run on one type only, so
 * a family constant is always tested on the other type.  Three splits follow that rule; split 0
 * was chosen first and is reported run by run; the headline is the worst held-out error over
 * all three (pfi_sim_validate_splits). */
static const char *const fit_models[PFI_SIM_VAL_SPLITS][2][2] = {
    {{"bert-huge-uncased", "bloom-3b"}, {"gpt3-2.7b", "t5-3b"}},
    {{"gpt3-xl", "bloom-3b"}, {"bert-huge-uncased", "t5-3b"}},
    {{"gpt3-xl", "bert-huge-uncased"}, {"bloom-3b", "t5-3b"}},
};

/* Sequence lengths are not in the files: Merak's defaults are assumed (GPT-style 1024,
 * BERT and T5 512); docs/simulator.md says so. */
static int seq_for(const char *family) { return strcmp(family, "gpt") == 0 ||
                                                strcmp(family, "bloom") == 0 ? 1024 : 512; }

/* A run of type `type` (0 A100-PCIE-80GB, 1 A40) from its first row: the job configured from
 * its model name and parallelism. */
static int new_run(vrun *v, int type, const pfi_gpu_model *gm, const pfi_perseus_row *row,
                   pfi_err *err)
{
    memset(v, 0, sizeof *v);
    v->type = type;
    pfi_node_config *nc = &v->cfg;
    nc->gpu = *gm;
    pfi_job_config *j = &nc->jobs[0];
    int rc = pfi_sim_job_from_model(j, row->model, err);
    if (rc != PFI_OK)
        return rc;
    j->dp = row->dp;
    j->tp = row->tp;
    j->pp = row->pp;
    j->micro_batch = row->mbs;
    j->global_batch = row->batch;
    j->seq_len = seq_for(j->family);
    /* Merak trains Hugging Face models, whose attention (2023) is eager. */
    j->attn_eager = 1;
    if (j->pp > 1) {
        rc = pfi_sim_merak_stage_layers(row->partition, j, j->stage_layers, err);
        if (rc != PFI_OK)
            return rc;
    }
    snprintf(j->name, sizeof j->name, "train");
    nc->n_jobs = 1;
    nc->n_gpus = j->dp * j->tp * j->pp;
    nc->gpus_per_host = 4; /* both clusters: 4 GPUs per host */
    nc->variation = VAL_VARIATION;
    snprintf(nc->name, sizeof nc->name, "perseus-%s", type == 0 ? "A100" : "A40");
    snprintf(v->out.run, sizeof v->out.run, "perseus/%s/%s dp%dtp%dpp%d",
             type == 0 ? "A100" : "A40", row->model, j->dp, j->tp, j->pp);
    snprintf(v->out.gpu_type, sizeof v->out.gpu_type, "%s", gm->name);
    return PFI_OK;
}

static int load_type(ctx *c, const char *dir, int type, int fit_all, int split, pfi_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/perseus-sosp24/zeus_baseline/%s/zeus_global.csv", dir,
             type == 0 ? "A100" : "A40");
    pfi_perseus *t;
    int rc = pfi_perseus_open(path, PFI_PERSEUS_GLOBAL, &t, err);
    if (rc != PFI_OK)
        return rc;
    const pfi_gpu_model *gm = pfi_gpu_model_find(type == 0 ? "A100-PCIE-80GB" : "A40");
    pfi_perseus_row row;
    while ((rc = pfi_perseus_next(t, &row, err)) == PFI_OK) {
        const char *model = row.model;
        if (strncmp(model, "wide-resnet", 11) == 0)
            continue; /* a CNN: the cost model is for transformers */
        vrun *v = NULL;
        for (int i = 0; i < c->nruns; i++)
            if (c->runs[i].type == type && strcmp(c->runs[i].cfg.jobs[0].model, model) == 0)
                v = &c->runs[i];
        if (!v) {
            if (c->nruns >= PFI_SIM_VAL_MAX_RUNS) {
                rc = pfi_err_set(err, PFI_EINVAL, "too many runs in %s", path);
                break;
            }
            v = &c->runs[c->nruns++];
            if ((rc = new_run(v, type, gm, &row, err)) != PFI_OK)
                break;
            const char *const *fm = fit_models[split][type];
            v->out.held_out = !fit_all && strcmp(model, fm[0]) != 0 && strcmp(model, fm[1]) != 0;
        }
        if (v->out.n_levels >= PFI_MAX_LEVELS) {
            rc = pfi_err_set(err, PFI_EINVAL, "%s: too many limits for %s", path, model);
            break;
        }
        int k = v->out.n_levels++;
        v->out.limit_w[k] = row.cap_w;
        v->meas_time[k] = row.time_s;
        v->meas_energy[k] = row.energy_j;
        if (!(v->out.limit_w[k] > 0 && v->meas_time[k] > 0 && v->meas_energy[k] > 0)) {
            rc = pfi_err_set(err, PFI_EINVAL, "%s: row %d has a non-positive value", path,
                             row.line);
            break;
        }
    }
    pfi_perseus_close(t);
    return rc == PFI_CSV_END ? PFI_OK : rc;
}

/* Relative measured values, against the level at the highest limit. */
static void measured(vrun *v)
{
    pfi_sim_val_run *o = &v->out;
    int top = 0;
    for (int k = 1; k < o->n_levels; k++)
        if (o->limit_w[k] > o->limit_w[top])
            top = k;
    int n = v->cfg.n_gpus;
    double p0 = v->meas_energy[top] / v->meas_time[top] / n;
    o->meas_power_w0 = p0;
    v->meas_time0 = v->meas_time[top];
    o->meas_time0 = v->meas_time0;
    for (int k = 0; k < o->n_levels; k++) {
        o->meas_tput[k] = v->meas_time[top] / v->meas_time[k];
        o->meas_power[k] = v->meas_energy[k] / v->meas_time[k] / n / p0;
    }
}

/* Family f's multipliers on its job's activity, memory traffic and GEMM efficiency.  They are
 * relative to the mean (in log) of the families fitted on the same GPU type: the common level
 * belongs to that type's dyn_w, mem_eff and gemm_eff; only the contrast is the family's. */
static void fam_scales(const ctx *c, int f, double *act, double *mem, double *gemm)
{
    const vfam *fm = &c->fam[f];
    *act = *mem = *gemm = 1;
    if (!c->fam_mode || fm->fit_type < 0)
        return;
    double a = 0, m = 0, g = 0;
    int nf = 0;
    for (int i = 0; i < c->nfam; i++)
        if (c->fam[i].fit_type == fm->fit_type) {
            a += c->fam[i].act_log;
            m += c->fam[i].mem_log;
            g += c->fam[i].gemm_log;
            nf++;
        }
    if (c->fam_mode & PFI_SIM_VAL_FAM_ACT)
        *act = exp(fm->act_log - a / nf);
    if (c->fam_mode & PFI_SIM_VAL_FAM_MEM)
        *mem = exp(fm->mem_log - m / nf);
    if (c->fam_mode & PFI_SIM_VAL_FAM_GEMM)
        *gemm = exp(fm->gemm_log - g / nf);
}

/* The job's switching activity before any family constant (the catalogue's default). */
static double default_act(const pfi_job_config *j)
{
    pfi_job_config base = *j;
    base.act_compute = 0;
    pfi_sim_job_defaults(&base);
    return base.act_compute;
}

/* The context's current constants written into nc, a copy of run v's configuration. */
static void run_constants(const ctx *c, const vrun *v, pfi_node_config *nc)
{
    nc->gpu = c->gpu[v->type];
    nc->net_gbs = c->net[v->type];
    nc->net_jitter = c->jit[v->type];
    pfi_job_config *j = &nc->jobs[0];
    j->host_ms = c->host[v->type];
    /* Family constants travel in the run's own configuration: activity and stall in the job,
     * memory traffic and GEMM efficiency as scales of the node's copy of the GPU constants
     * (t_mem = bytes / (bandwidth * mem_eff), so more traffic is a lower mem_eff). */
    double act, mem, gemm;
    fam_scales(c, v->fam, &act, &mem, &gemm);
    nc->gpu.mem_eff /= mem;
    nc->gpu.gemm_eff *= gemm;
    if (c->fam_mode & PFI_SIM_VAL_FAM_ACT)
        j->act_compute = default_act(j) * act;
    if ((c->fam_mode & PFI_SIM_VAL_FAM_STALL) && c->fam[v->fam].fit_type >= 0)
        j->input_stall = c->fam[v->fam].stall;
}

/* Run v's node configuration with the context's current constants. */
static void run_config(const ctx *c, const vrun *v, pfi_node_config *out)
{
    *out = v->cfg; /* written in place: the configuration is ~10 KB, copied once */
    run_constants(c, v, out);
}

/* Simulates run v with the context's current constants; returns PFI_OK or an error. */
static int simulate(const ctx *c, vrun *v, pfi_err *err)
{
    /* The run's own copy, not a fresh one per evaluation: the simulator copies it again. */
    if (!v->sim_set) {
        v->sim = v->cfg;
        v->sim_set = 1;
    }
    run_constants(c, v, &v->sim);
    pfi_sim_node *node;
    int rc = pfi_sim_node_new(&v->sim, &node, err);
    if (rc != PFI_OK)
        return rc;
    pfi_sim_val_run *o = &v->out;
    int top = 0;
    for (int k = 1; k < o->n_levels; k++)
        if (o->limit_w[k] > o->limit_w[top])
            top = k;
    /* Every level at once: their clocks are solved together. */
    pfi_sim_steady st[PFI_MAX_LEVELS];
    rc = pfi_sim_job_steady_n(node, 0, o->limit_w, o->n_levels, st, err);
    pfi_sim_node_free(node);
    if (rc != PFI_OK)
        return rc;
    pfi_sim_steady s0 = st[top];
    o->sim_power_w0 = s0.power_w;
    o->sim_time0 = s0.step_time_s;
    o->max_abs_err_tput = o->max_abs_err_power = 0;
    for (int k = 0; k < o->n_levels; k++) {
        const pfi_sim_steady s = st[k];
        o->sim_tput[k] = s.tokens_per_s / s0.tokens_per_s;
        o->sim_power[k] = s.power_w / s0.power_w;
        o->max_abs_err_tput = fmax(o->max_abs_err_tput, fabs(o->sim_tput[k] - o->meas_tput[k]));
        o->max_abs_err_power =
            fmax(o->max_abs_err_power, fabs(o->sim_power[k] - o->meas_power[k]));
    }
    return PFI_OK;
}

/* ---------------------------------------------------------------- the fit */

/* Parameters are unbounded u mapped into [lo, hi] by a logistic, so the simplex never leaves
 * the physical range. */
static double squash(double u, double lo, double hi) { return lo + (hi - lo) / (1 + exp(-u)); }
static double unsquash(double x, double lo, double hi)
{
    double p = (x - lo) / (hi - lo);
    p = fmin(fmax(p, 1e-6), 1 - 1e-6);
    return log(p / (1 - p));
}

/* A bounded minimisation problem: pointers to the constants it moves and their ranges. */
typedef struct param {
    double *x;
    double lo, hi;
} param;

#define MAX_PARAMS 40

/* Costs already computed in this search, by the exact point: the simplex asks again for points
 * it has (each restart starts at its best vertex, each start ends at it), and the cost of a
 * point is a function of the point alone.  Points come back from far in the search: of split
 * 0's ~56,400 asks, 256 slots answered 646, 4096 answer 1,384 (16,384: 1,422); 4096 slots are
 * 1.4 MB per search, touched as used. */
#define SEEN_SLOTS 4096
typedef struct seen_point {
    double u[MAX_PARAMS];
    double cost;
    int set;
} seen_point;

typedef struct problem {
    param p[MAX_PARAMS];
    int n;
    int starts; /* starting points of the search (0 or 1: the current values only) */
    double (*cost)(void *);
    void *arg;
    int no_memo;      /* compute every point's cost (PFI_SIM_VAL_NO_MEMO) */
    seen_point *seen; /* SEEN_SLOTS, or NULL */
} problem;

static void add_param(problem *pb, double *x, double lo, double hi)
{
    /* At most 10 per GPU type plus 4 per family (four here): under the bound. */
    if (pb->n < MAX_PARAMS)
        pb->p[pb->n++] = (param){x, lo, hi};
}

/* Sets the constants to the point u and returns its cost, computed once per point: a point
 * seen before gets its cost back (the constants set all the same; what the cost function
 * leaves behind, the runs' simulated values, is simulated again after every fit). */
static double problem_eval(const gsl_vector *u, void *arg)
{
    problem *pb = arg;
    double x[MAX_PARAMS] = {0};
    uint64_t h = 0;
    for (int i = 0; i < pb->n; i++) {
        x[i] = gsl_vector_get(u, (size_t)i);
        *pb->p[i].x = squash(x[i], pb->p[i].lo, pb->p[i].hi);
        uint64_t b;
        memcpy(&b, &x[i], sizeof b);
        h = (h ^ b) * 0x100000001b3ull;
    }
    seen_point *s = pb->seen ? &pb->seen[(h ^ h >> 29) % SEEN_SLOTS] : NULL;
    if (s && s->set && memcmp(s->u, x, sizeof x) == 0)
        return s->cost;
    double cost = pb->cost(pb->arg);
    if (s)
        *s = (seen_point){.cost = cost, .set = 1};
    if (s)
        memcpy(s->u, x, sizeof x);
    return cost;
}

/* Nelder-Mead (GSL) from the current values; restarts from the best point shake the simplex
 * out of early collapse.  With pb->starts > 1 the search is repeated from points scattered
 * around the current values and the lowest cost wins (a check that the fit is not a local
 * minimum).  Leaves the best point in the constants. */
static int minimize(problem *pb, pfi_err *err)
{
    size_t n = (size_t)pb->n;
    /* NULL: every point computed */
    pb->seen = pb->no_memo ? NULL : calloc(SEEN_SLOTS, sizeof *pb->seen);
    gsl_vector *u = gsl_vector_alloc(n), *step = gsl_vector_alloc(n);
    gsl_multimin_fminimizer *m = gsl_multimin_fminimizer_alloc(gsl_multimin_fminimizer_nmsimplex2,
                                                                n);
    if (!u || !step || !m) {
        gsl_vector_free(u);
        gsl_vector_free(step);
        if (m)
            gsl_multimin_fminimizer_free(m);
        free(pb->seen);
        pb->seen = NULL;
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    double u0[MAX_PARAMS], best_u[MAX_PARAMS], best = INFINITY;
    for (size_t i = 0; i < n; i++)
        u0[i] = unsquash(*pb->p[i].x, pb->p[i].lo, pb->p[i].hi);
    gsl_multimin_function fn = {.f = problem_eval, .n = n, .params = pb};
    for (int st = 0; st < (pb->starts > 1 ? pb->starts : 1); st++) {
        /* Start 0 is the current point; the others are scattered around it (deterministic). */
        for (size_t i = 0; i < n; i++)
            gsl_vector_set(u, i, u0[i] + (st ? 3.0 * (pfi_sim_uniform(77, (uint64_t)st, i) - 0.5)
                                             : 0));
        for (int restart = 0; restart < 6; restart++) {
            gsl_vector_set_all(step, restart == 0 ? 1.0 : 0.4);
            gsl_multimin_fminimizer_set(m, &fn, u, step);
            for (int it = 0; it < 1500; it++) {
                if (gsl_multimin_fminimizer_iterate(m) != GSL_SUCCESS)
                    break;
                if (gsl_multimin_fminimizer_size(m) < 1e-5)
                    break;
            }
            gsl_vector_memcpy(u, gsl_multimin_fminimizer_x(m));
        }
        double cst = problem_eval(u, pb);
        if (cst < best) {
            best = cst;
            for (size_t i = 0; i < n; i++)
                best_u[i] = gsl_vector_get(u, i);
        }
    }
    for (size_t i = 0; i < n; i++)
        gsl_vector_set(u, i, best_u[i]);
    problem_eval(u, pb);
    free(pb->seen);
    pb->seen = NULL;
    gsl_multimin_fminimizer_free(m);
    gsl_vector_free(u);
    gsl_vector_free(step);
    return PFI_OK;
}

/* ---------------------------------------------------------------- stage profiles: V-f shape */

/* Perseus's stage profiles run one pipeline stage at locked SM clocks: board power against
 * clock with no cap in the way (where it stays under the default limit).  Their shape fixes
 * each chip's voltage-frequency curve before any power-limit sweep is looked at.  The A100
 * PCIe shares the A100 SXM's GA100 die and V-f table. */
#define MAX_PROFILE 256
typedef struct profile profile;
struct profile {
    const pfi_gpu_model *g;
    int n;
    double f[MAX_PROFILE], p[MAX_PROFILE];
    double ratio; /* clock-independent power over dynamic power at f_max (fitted) */
    double fref, pref;
    /* What the cost asks of every evaluation, computed once (profile_prepare): the clocks at
     * or below fref in file order, each as a fraction of f_max and its relative power. */
    int m;
    double uf[MAX_PROFILE], uphi[MAX_PROFILE], urel[MAX_PROFILE];
    double phiref;
};

/* Stage 0, forward and backward summed per clock: time and energy of one microbatch; their
 * ratio is the board power at that clock.  Adds the clocks of one profile file to pr. */
static int add_profile_file(const char *path, profile *pr, pfi_err *err)
{
    pfi_csv *t;
    int rc = pfi_csv_open(path, &t, err);
    if (rc != PFI_OK)
        return rc;
    int cs, cf, ct, ce;
    if ((rc = pfi_csv_require(t, "stage", &cs, err)) ||
        (rc = pfi_csv_require(t, "frequency", &cf, err)) ||
        (rc = pfi_csv_require(t, "time", &ct, err)) ||
        (rc = pfi_csv_require(t, "energy", &ce, err))) {
        pfi_csv_close(t);
        return rc;
    }
    int first = pr->n;
    double tm[MAX_PROFILE] = {0};
    while ((rc = pfi_csv_next(t, err)) == PFI_OK) {
        int stage;
        double f, e, time;
        if ((rc = pfi_csv_int(t, cs, &stage, err)) != PFI_OK)
            break;
        if (stage != 0)
            continue;
        if ((rc = pfi_csv_double(t, cf, &f, err)) || (rc = pfi_csv_double(t, ce, &e, err)) ||
            (rc = pfi_csv_double(t, ct, &time, err)))
            break;
        int k = first;
        while (k < pr->n && pr->f[k] != f)
            k++;
        if (k == pr->n) {
            if (pr->n >= MAX_PROFILE) {
                rc = pfi_err_set(err, PFI_EINVAL, "%s: too many clocks", path);
                break;
            }
            pr->f[k] = f;
            pr->p[k] = 0;
            pr->n++;
        }
        pr->p[k] += e;
        tm[k] += time;
    }
    pfi_csv_close(t);
    if (rc != PFI_CSV_END)
        return rc;
    for (int k = first; k < pr->n; k++) {
        if (!(tm[k] > 0 && pr->p[k] > 0))
            return pfi_err_set(err, PFI_EINVAL, "%s: no time at %.0f MHz", path, pr->f[k]);
        pr->p[k] /= tm[k];
    }
    return PFI_OK;
}

static int load_profile(const char *dir, int type, profile *pr, pfi_err *err)
{
    static const char *const models[2] = {"gpt3-175b", "bloom"};
    const char *chip = type == 0 ? "a100_sxm" : "a40";
    pr->n = 0;
    int rc = PFI_OK;
    for (int m = 0; m < 2 && rc == PFI_OK; m++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/perseus-sosp24/stage_profile/%s+%s_bf16.csv", dir,
                 models[m], chip);
        rc = add_profile_file(path, pr, err);
    }
    return rc;
}

/* The clocks profile_cost compares, with what does not change from one evaluation to the next
 * (f_max is no fitted constant): once fref and pref are set. */
static void profile_prepare(profile *pr)
{
    double fm = pr->g->sm_clock_max_mhz;
    pr->phiref = pr->fref / fm;
    pr->m = 0;
    for (int k = 0; k < pr->n; k++) {
        if (pr->f[k] > pr->fref)
            continue;
        pr->uf[pr->m] = pr->f[k];
        pr->uphi[pr->m] = pr->f[k] / fm;
        pr->urel[pr->m++] = pr->p[k] / pr->pref;
    }
}

/* Relative power P(f)/P(fref) = (ratio + v(f)^2 f) / (ratio + v(fref)^2 fref), f in f_max. */
static double profile_cost(void *arg)
{
    profile *pr = arg;
    const pfi_gpu_model *g = pr->g;
    double fm = g->sm_clock_max_mhz;
    double vr = pfi_sim_volt_phi(g, pr->phiref);
    double ref = pr->ratio + vr * vr * pr->fref / fm;
    double sse = 0;
    for (int k = 0; k < pr->m; k++) {
        double v = pfi_sim_volt_phi(g, pr->uphi[k]);
        double model = (pr->ratio + v * v * pr->uf[k] / fm) / ref;
        double e = model - pr->urel[k];
        sse += e * e;
    }
    return sse;
}

/* Fits v_floor, f_knee, v_gamma of gpu[type] on the stage profiles. */
static int fit_vf(ctx *c, const char *dir, int type, pfi_err *err)
{
    profile *pr = calloc(1, sizeof *pr);
    if (!pr)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    c->prof[type] = pr;
    int rc = load_profile(dir, type, pr, err);
    if (rc == PFI_OK) {
        pfi_gpu_model *g = &c->gpu[type];
        pr->g = g;
        /* Reference: the highest clock below the power plateau of the profiled part's own
         * limit (the A40 profile is capped at 300 W above ~1450 MHz, where locking the clock
         * no longer holds it).  The plateau is the profile's, not the validated part's: the
         * A100 SXM was profiled up to ~475 W, far above the PCIe card's 300 W, and every
         * clock of it informs the shared V-f curve. */
        double pmax = 0;
        for (int k = 0; k < pr->n; k++)
            pmax = fmax(pmax, pr->p[k]);
        pr->fref = 0;
        for (int k = 0; k < pr->n; k++)
            if (pr->p[k] < 0.97 * pmax && pr->f[k] > pr->fref)
                pr->fref = pr->f[k];
        double psum = 0;
        int np = 0;
        for (int k = 0; k < pr->n; k++)
            if (pr->f[k] == pr->fref) {
                psum += pr->p[k];
                np++;
            }
        if (np == 0) /* pr is c->prof[type]: the caller frees it */
            return pfi_err_set(err, PFI_EINVAL, "stage profile: no clock under the limit");
        pr->pref = psum / np;
        profile_prepare(pr);
        pr->ratio = 0.3;
        problem pb = {.cost = profile_cost, .arg = pr, .no_memo = c->no_memo};
        /* Ranges a silicon V-f table can have: the floor at 50-95% of the top voltage. */
        add_param(&pb, &g->v_floor, 0.5, 0.95);
        add_param(&pb, &g->f_knee, 0.0, 0.9);
        add_param(&pb, &g->v_gamma, 0.7, 3.0);
        add_param(&pb, &pr->ratio, 0.05, 2.0);
        rc = minimize(&pb, err);
    }
    return rc;
}

/* ---------------------------------------------------------------- power-limit sweeps */

/* Weight of the stage profiles when the sweeps also move the V-f curve: the profiles see
 * clocks below the limit, the sweeps the top where the limit binds; both must agree. */
#define PROFILE_WEIGHT 2.0

static int row_errors(const ctx *c, vrun *v, const vrow *r, double *et, double *ep,
                      pfi_err *err);

static double sweep_cost(void *arg)
{
    ctx *c = arg;
    double sse = 0;
    for (int t = 0; t < 2; t++)
        if (c->type < 0 || c->type == t)
            sse += PROFILE_WEIGHT * profile_cost(c->prof[t]);
    for (int i = 0; i < c->nruns; i++) {
        vrun *v = &c->runs[i];
        if ((c->type >= 0 && v->type != c->type) || v->out.held_out)
            continue;
        /* A point the simulator refuses is as bad as a point can be: the search turns away
         * from it, and the final simulation at the fitted point reports any error. */
        pfi_err e = {0};
        if (simulate(c, v, &e) != PFI_OK)
            return 1e9;
        const pfi_sim_val_run *o = &v->out;
        for (int k = 0; k < o->n_levels; k++) {
            double et = o->sim_tput[k] - o->meas_tput[k];
            double ep = o->sim_power[k] - o->meas_power[k];
            /* The fourth power leans on the worst level: the target is a maximum error. */
            sse += et * et + ep * ep + 400 * (et * et * et * et + ep * ep * ep * ep);
        }
        /* The stage-row fit: each of the run's per-stage rows counts as one more level. */
        for (int r = 0; c->stage_rows && r < c->nrows; r++) {
            if (c->rows[r].run != i)
                continue;
            double et, ep;
            if (row_errors(c, v, &c->rows[r], &et, &ep, &e) != PFI_OK)
                return 1e9;
            sse += et * et + ep * ep + 400 * (et * et * et * et + ep * ep * ep * ep);
        }
        /* Absolute power and iteration time at the top limit keep the constants physical
         * (weakly): the time scale decides how compute compares with links and host. */
        double ea = (o->sim_power_w0 - o->meas_power_w0) / o->meas_power_w0;
        double es = log(o->sim_time0 / v->meas_time0);
        sse += 0.05 * ea * ea + 0.05 * es * es;
    }
    return sse;
}

/* The power and efficiency constants of gpu[type] (the V-f shape starts where the stage
 * profiles set it), the cluster's network and host time. */
static void add_type_params(problem *pb, ctx *c, int type)
{
    pfi_gpu_model *g = &c->gpu[type];
    add_param(pb, &g->v_floor, 0.5, 0.95);
    add_param(pb, &g->f_knee, 0.0, 0.9);
    add_param(pb, &g->v_gamma, 0.7, 3.0);
    add_param(pb, &c->prof[type]->ratio, 0.05, 2.0);
    add_param(pb, &g->dyn_w, 100, 1500);
    add_param(pb, &g->busy_static_w, 0, 150);
    add_param(pb, &g->gemm_eff, 0.01, 0.9);
    add_param(pb, &g->mem_eff, 0.02, 0.9);
    /* Only the A40 runs cross hosts (8 GPUs on 4-GPU hosts): its network's bandwidth and
     * spread; a transfer over a shared network varies from 2% to most of its mean. */
    if (type == 1) {
        add_param(pb, &c->net[1], 0.05, 25);
        add_param(pb, &c->jit[1], 0.02, 0.8);
    }
    add_param(pb, &c->host[type], 0.001, 5);
    /* The A100's saturation clock: below it even memory-bound kernels slow with the SM
     * clock.  Its HBM2e delivers ~13 bytes per SM per cycle at full clock (1.94 TB/s, 108
     * SMs, 1410 MHz), so keeping DRAM busy takes many requests in flight per SM cycle and
     * bandwidth falls off well above the lowest clocks; the A40's GDDR6 needs ~5 (0.70
     * TB/s, 84 SMs, 1740 MHz): it keeps the modelled 0.3 (fitting it there was tried and
     * made the held-out runs worse, docs/simulator.md). */
    if (type == 0)
        add_param(pb, &g->sat_frac, 0.1, 0.95);
}

/* The constants of the families fitted with GPU type `type` (-1: every family). */
static void add_family_params(problem *pb, ctx *c, int type)
{
    for (int f = 0; f < c->nfam; f++) {
        if (c->fam[f].fit_type < 0 || (type >= 0 && c->fam[f].fit_type != type))
            continue;
        if (c->fam_mode & PFI_SIM_VAL_FAM_ACT)
            add_param(pb, &c->fam[f].act_log, -0.4, 0.4);
        if (c->fam_mode & PFI_SIM_VAL_FAM_STALL)
            add_param(pb, &c->fam[f].stall, 0, 0.6);
        if (c->fam_mode & PFI_SIM_VAL_FAM_MEM)
            add_param(pb, &c->fam[f].mem_log, -1.5, 1.5);
        if (c->fam_mode & PFI_SIM_VAL_FAM_GEMM)
            add_param(pb, &c->fam[f].gemm_log, -0.7, 0.7);
    }
}

/* Fits gpu[type]'s constants and those of the families whose fit runs are of that type. */
static int fit_type(ctx *c, int type, pfi_err *err)
{
    c->type = type;
    problem pb = {.cost = sweep_cost, .arg = c, .starts = c->starts, .no_memo = c->no_memo};
    add_type_params(&pb, c, type);
    add_family_params(&pb, c, type);
    return minimize(&pb, err);
}

/* --fit-all with family constants: every family has fit runs on both types, so after the
 * per-type fits (families fitted with the A100) both types and every family are refined
 * together on all runs: the capacity of shared family constants, not a validation. */
static int fit_joint(ctx *c, pfi_err *err)
{
    c->type = -1;
    problem pb = {.cost = sweep_cost, .arg = c, .starts = c->starts, .no_memo = c->no_memo};
    add_type_params(&pb, c, 0);
    add_type_params(&pb, c, 1);
    add_family_params(&pb, c, -1);
    return minimize(&pb, err);
}

/* Perseus's per-stage baseline (zeus_local.csv: a power limit per pipeline stage, the
 * heaviest stage at a higher one) of type `type`'s runs into c->rows, checked once: each row's
 * limits, time and energy, and its stages' layers from the row's own Merak partition, which
 * need not be its run's global sweep's (six A100 GPT-3 XL rows are `uniform_transformer`, the
 * sweep custom: another job).  A copy of the data without the file has none. */
static int load_rows(ctx *c, const char *dir, int type, pfi_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/perseus-sosp24/zeus_baseline/%s/zeus_local.csv", dir,
             type == 0 ? "A100" : "A40");
    pfi_perseus *t;
    int rc = pfi_perseus_open(path, 0, &t, err);
    if (rc == PFI_ENOENT)
        return PFI_OK; /* an older copy of the data without it: nothing to check */
    if (rc != PFI_OK)
        return rc;
    pfi_perseus_row row;
    while ((rc = pfi_perseus_next(t, &row, err)) == PFI_OK) {
        int run = -1;
        for (int i = 0; i < c->nruns; i++)
            if (c->runs[i].type == type && strcmp(c->runs[i].cfg.jobs[0].model, row.model) == 0)
                run = i;
        if (run < 0)
            continue; /* the CNN */
        const pfi_job_config *j = &c->runs[run].cfg.jobs[0];
        const pfi_gpu_model *g = &c->gpu[type]; /* its limits are no fitted constant */
        if (c->nrows >= MAX_ROWS) {
            rc = pfi_err_set(err, PFI_EINVAL, "%s: too many rows", path);
            break;
        }
        if (row.dp != j->dp || row.tp != j->tp || row.pp != j->pp) {
            rc = pfi_err_set(err, PFI_EINVAL, "%s: row %d is not its run's parallelism", path,
                             row.line);
            break;
        }
        vrow *r = &c->rows[c->nrows];
        int bad = 0;
        for (int s = 0; s < j->pp; s++) {
            r->limit_w[s] = row.limit_w[s];
            bad |= !(row.limit_w[s] >= g->min_limit_w && row.limit_w[s] <= g->max_limit_w);
        }
        if (bad || !(row.time_s > 0 && row.energy_j > 0)) {
            rc = pfi_err_set(err, PFI_EINVAL, "%s: row %d has a missing or bad value", path,
                             row.line);
            break;
        }
        r->run = run;
        r->time_s = row.time_s;
        r->energy_j = row.energy_j;
        memcpy(r->stage_layers, j->stage_layers, sizeof r->stage_layers);
        if (j->pp > 1 &&
            (rc = pfi_sim_merak_stage_layers(row.partition, j, r->stage_layers, err)) != PFI_OK)
            break;
        c->nrows++;
    }
    pfi_perseus_close(t);
    return rc == PFI_CSV_END ? PFI_OK : rc;
}

/* Row r of run v simulated with the context's constants (its limits on its stages' GPUs, its
 * stages' layers): the signed errors of relative throughput and power, relative to the run's
 * simulation and measurement at the global maximum limit (simulate() must have run at these
 * constants), as the global sweep's. */
static int row_errors(const ctx *c, vrun *v, const vrow *r, double *et, double *ep,
                      pfi_err *err)
{
    pfi_node_config nc;
    run_config(c, v, &nc);
    pfi_job_config *j = &nc.jobs[0];
    for (int g = 0; g < nc.n_gpus; g++)
        nc.initial_limit_w[g] = r->limit_w[g / (j->tp * j->dp)];
    memcpy(j->stage_layers, r->stage_layers, sizeof j->stage_layers);
    pfi_sim_node *node;
    int rc = pfi_sim_node_new(&nc, &node, err);
    if (rc != PFI_OK)
        return rc;
    pfi_sim_job_status st;
    rc = pfi_sim_job_status_at(node, 0, 1.0, &st, err);
    pfi_sim_node_free(node);
    if (rc != PFI_OK)
        return rc;
    const pfi_sim_val_run *o = &v->out;
    double tm = r->time_s, en = r->energy_j;
    *et = o->sim_time0 / st.step_time_s - v->meas_time0 / tm;
    *ep = st.power_w / o->sim_power_w0 - en / tm / nc.n_gpus / o->meas_power_w0;
    return PFI_OK;
}

/* The per-stage rows, used by no fit unless PFI_SIM_VAL_STAGE_ROWS: with the fitted
 * constants, each row is simulated (with its own partition) and compared like the global
 * sweep.  A check of the pipeline's stages (which one paces it, how the others' slack absorbs
 * a lower limit). */
static int per_stage_check(ctx *c, pfi_err *err)
{
    for (int k = 0; k < c->nrows; k++) {
        const vrow *r = &c->rows[k];
        vrun *v = &c->runs[r->run];
        double et, ep;
        int rc = row_errors(c, v, r, &et, &ep, err);
        if (rc != PFI_OK)
            return rc;
        pfi_sim_val_run *o = &v->out;
        o->n_per_stage++;
        o->per_stage_err_tput = fmax(o->per_stage_err_tput, fabs(et));
        o->per_stage_err_power = fmax(o->per_stage_err_power, fabs(ep));
    }
    return PFI_OK;
}

/* Each run's model family, and the GPU type whose fit runs fit the family's constants. */
static void assign_families(ctx *c)
{
    for (int i = 0; i < c->nruns; i++) {
        vrun *v = &c->runs[i];
        const char *name = v->cfg.jobs[0].family;
        int f = 0;
        while (f < c->nfam && strcmp(c->fam[f].name, name) != 0)
            f++;
        if (f == c->nfam) {
            /* same size as the job's family field, NUL-terminated there */
            memcpy(c->fam[f].name, name, sizeof c->fam[f].name);
            c->fam[f].fit_type = -1;
            c->nfam++;
        }
        v->fam = f;
        /* The first type (in file order) with a fit run of the family fits its constants. */
        if (!v->out.held_out && c->fam[f].fit_type < 0)
            c->fam[f].fit_type = v->type;
    }
}

/* The fitted constants and every run's errors into *out. */
static void report(const ctx *c, int fit_all, int split, pfi_sim_validation *out)
{
    out->n_runs = c->nruns;
    for (int i = 0; i < c->nruns; i++) {
        const pfi_sim_val_run *o = &c->runs[i].out;
        out->runs[i] = *o;
        double *mt = o->held_out ? &out->held_out_max_err_tput : &out->fit_max_err_tput;
        double *mp = o->held_out ? &out->held_out_max_err_power : &out->fit_max_err_power;
        *mt = fmax(*mt, o->max_abs_err_tput);
        *mp = fmax(*mp, o->max_abs_err_power);
        out->max_abs_err_tput = fmax(out->max_abs_err_tput, o->max_abs_err_tput);
        out->max_abs_err_power = fmax(out->max_abs_err_power, o->max_abs_err_power);
    }
    out->fitted[0] = c->gpu[0];
    out->fitted[1] = c->gpu[1];
    out->fitted_net_gbs[0] = c->net[0];
    out->fitted_net_gbs[1] = c->net[1];
    out->fitted_host_ms[0] = c->host[0];
    out->fitted_host_ms[1] = c->host[1];
    out->fitted_net_jitter[0] = c->jit[0];
    out->fitted_net_jitter[1] = c->jit[1];
    out->split = split;
    out->target_met = out->max_abs_err_tput <= PFI_SIM_VAL_TARGET &&
                      out->max_abs_err_power <= PFI_SIM_VAL_TARGET;
    out->n_families = c->fam_mode ? c->nfam : 0;
    for (int f = 0; f < out->n_families; f++) {
        struct pfi_sim_val_family *o = &out->families[f];
        const vfam *fm = &c->fam[f];
        double act, mem, gemm;
        fam_scales(c, f, &act, &mem, &gemm);
        snprintf(o->family, sizeof o->family, "%s", fm->name);
        snprintf(o->fitted_on, sizeof o->fitted_on, "%s",
                 fm->fit_type < 0 ? "" : fit_all ? "all runs" : c->gpu[fm->fit_type].name);
        const pfi_job_config *j = NULL;
        for (int i = 0; i < c->nruns && !j; i++)
            if (c->runs[i].fam == f)
                j = &c->runs[i].cfg.jobs[0];
        o->act_compute = default_act(j) * act;
        o->input_stall = (c->fam_mode & PFI_SIM_VAL_FAM_STALL) && fm->fit_type >= 0 ? fm->stall : 0;
        o->mem_traffic = mem;
        o->gemm_eff = gemm;
    }
}

/* Splits fitted at once share one count, reported outside its lock (util/progress.h). */
typedef pfi_progress_count val_progress;
#define VAL_STEP "validating the simulator against the measured sweeps"

enum { VAL_STAGES = 4 }; /* load, fit the clocks, fit the constants, simulate and check */

static void stage_done(val_progress *vp)
{
    pfi_progress_count_step(vp);
}

static int validate(const char *data_dir, int flags, val_progress *vp, pfi_sim_validation *out,
                    pfi_err *err)
{
    memset(out, 0, sizeof *out);
    ctx *c = calloc(1, sizeof *c);
    if (!c)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    /* Starting points: the modelled constants of core/gpu.c and sim/job.c. */
    c->gpu[0] = *pfi_gpu_model_find("A100-PCIE-80GB");
    c->gpu[1] = *pfi_gpu_model_find("A40");
    c->net[0] = 3;
    c->net[1] = 3;
    c->host[0] = c->host[1] = 0.2;
    c->jit[0] = c->jit[1] = PFI_SIM_KERNEL_JITTER;
    int fit_all = (flags & PFI_SIM_VAL_FIT_ALL) != 0;
    int split = (flags >> 8) & 0xff;
    c->starts = (flags >> 16) & 0xff;
    if (c->starts == 0)
        c->starts = PFI_SIM_VAL_DEFAULT_STARTS;
    c->no_memo = (flags & PFI_SIM_VAL_NO_MEMO) != 0;
    if (split >= PFI_SIM_VAL_SPLITS) {
        free(c);
        return pfi_err_set(err, PFI_EINVAL, "split %d: there are %d (0..%d)", split,
                           PFI_SIM_VAL_SPLITS, PFI_SIM_VAL_SPLITS - 1);
    }
    int rc = load_type(c, data_dir, 0, fit_all, split, err);
    if (rc == PFI_OK)
        rc = load_type(c, data_dir, 1, fit_all, split, err);
    for (int i = 0; rc == PFI_OK && i < c->nruns; i++) {
        measured(&c->runs[i]);
        c->runs[i].cfg.pace =
            flags & PFI_SIM_VAL_PACE_EXPECTED ? PFI_SIM_PACE_EXPECTED : PFI_SIM_PACE_MAX;
    }
    c->stage_rows = (flags & PFI_SIM_VAL_STAGE_ROWS) != 0;
    for (int type = 0; rc == PFI_OK && type < 2; type++)
        rc = load_rows(c, data_dir, type, err);
    if (rc == PFI_OK)
        stage_done(vp);
    c->fam_mode = flags & (PFI_SIM_VAL_FAM_ACT | PFI_SIM_VAL_FAM_STALL | PFI_SIM_VAL_FAM_MEM |
                           PFI_SIM_VAL_FAM_GEMM);
    if (rc == PFI_OK)
        assign_families(c);
    for (int type = 0; rc == PFI_OK && type < 2; type++)
        rc = fit_vf(c, data_dir, type, err);
    if (rc == PFI_OK)
        stage_done(vp);
    for (int type = 0; rc == PFI_OK && type < 2; type++)
        rc = fit_type(c, type, err);
    if (rc == PFI_OK && fit_all && c->fam_mode)
        rc = fit_joint(c, err);
    if (rc == PFI_OK)
        stage_done(vp);
    for (int i = 0; rc == PFI_OK && i < c->nruns; i++)
        rc = simulate(c, &c->runs[i], err);
    if (rc == PFI_OK)
        rc = per_stage_check(c, err);
    if (rc == PFI_OK) {
        report(c, fit_all, split, out);
        stage_done(vp);
    }
    free(c->prof[0]);
    free(c->prof[1]);
    free(c);
    return rc;
}

int pfi_sim_validate(const char *data_dir, int flags, pfi_sim_val_progress progress,
                     void *progress_ctx, pfi_sim_validation *out, pfi_err *err)
{
    gsl_set_error_handler_off();
    val_progress vp;
    pfi_progress_count_init(&vp, progress, progress_ctx, VAL_STEP, VAL_STAGES);
    int rc = validate(data_dir, flags, &vp, out, err);
    pfi_progress_count_destroy(&vp);
    return rc;
}

/* One split's fit and check, on a thread of its own. */
typedef struct split_job {
    const char *data_dir;
    int flags;
    val_progress *vp;
    pfi_sim_validation *out;
    pfi_err err;
    int rc;
} split_job;

static void *split_thread(void *arg)
{
    split_job *j = arg;
    j->rc = validate(j->data_dir, j->flags, j->vp, j->out, &j->err);
    return NULL;
}

int pfi_sim_validate_splits(const char *data_dir, int flags, pfi_sim_val_progress progress,
                            void *progress_ctx, pfi_sim_val_splits *out, pfi_err *err)
{
    memset(out, 0, sizeof *out);
    if (flags & PFI_SIM_VAL_FIT_ALL)
        return pfi_err_set(err, PFI_EINVAL, "every split with --fit-all: nothing is held out");
    /* The splits share nothing but the read-only data: each is fitted on a thread of its own
     * (the same operations in the same order as one after the other, so the same results bit
     * for bit), and a split whose thread cannot start runs here. */
    gsl_set_error_handler_off();
    val_progress vp;
    pfi_progress_count_init(&vp, progress, progress_ctx, VAL_STEP,
                            VAL_STAGES * PFI_SIM_VAL_SPLITS);
    split_job job[PFI_SIM_VAL_SPLITS];
    pthread_t th[PFI_SIM_VAL_SPLITS];
    int started[PFI_SIM_VAL_SPLITS];
    for (int n = 0; n < PFI_SIM_VAL_SPLITS; n++) {
        job[n] = (split_job){data_dir, (flags & ~(0xff << 8)) | PFI_SIM_VAL_SPLIT(n), &vp,
                             &out->split[n], {0}, PFI_OK};
        started[n] = n > 0 && pthread_create(&th[n], NULL, split_thread, &job[n]) == 0;
    }
    for (int n = 0; n < PFI_SIM_VAL_SPLITS; n++)
        if (!started[n])
            split_thread(&job[n]);
    for (int n = 0; n < PFI_SIM_VAL_SPLITS; n++)
        if (started[n])
            pthread_join(th[n], NULL);
    pfi_progress_count_destroy(&vp);
    out->target_met = 1;
    for (int n = 0; n < PFI_SIM_VAL_SPLITS; n++) {
        pfi_sim_validation *v = &out->split[n];
        if (job[n].rc != PFI_OK) {
            if (err)
                *err = job[n].err; /* the first failing split's, as one after the other */
            return job[n].rc;
        }
        double w = fmax(v->held_out_max_err_tput, v->held_out_max_err_power);
        if (n == 0 || w > out->worst_over_splits) {
            out->worst_over_splits = w;
            out->worst_split = n;
        }
        out->target_met &= v->target_met;
    }
    return PFI_OK;
}
