/* SPDX-License-Identifier: Apache-2.0 */
/* fleet.c: sweeping every run of the simulated fleet in virtual time (see fleet.h). */
#include "study/fleet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "hw/backend_sim.h"
#include "measure/measure.h"
#include "store/store.h"

pfi_fleet_opts pfi_fleet_defaults(void)
{
    pfi_fleet_opts o = {.n_levels = 7,
                        .levels = {1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4},
                        .settle_s = 5.0,
                        .window_s = 20.0,
                        .sample_hz = 2.0};
    return o;
}

/* Telemetry means over the job's GPUs and the window's samples; a field counts only over the
 * samples that had it (missing stays NAN). */
typedef struct tsum {
    double v[10];
    int c[10];
    int capped, n;
} tsum;

enum { T_POWER, T_ENF, T_CLOCK, T_UTIL, T_SM, T_TENSOR, T_DRAM, T_NVLINK, T_PCIE, T_LIMIT };

static void tadd(tsum *t, int k, double v, int have)
{
    if (have && isfinite(v)) {
        t->v[k] += v;
        t->c[k]++;
    }
}

static double tmean(const tsum *t, int k) { return t->c[k] ? t->v[k] / t->c[k] : NAN; }

static int measure_level(pfi_sim_node *node, int job, int first, int ngpu, double t_from,
                         const pfi_fleet_opts *o, pfi_level *lv, pfi_err *err)
{
    tsum t;
    memset(&t, 0, sizeof t);
    int nsamp = (int)floor(o->window_s * o->sample_hz + 1e-9);
    if (nsamp < 1)
        nsamp = 1;
    for (int i = 0; i <= nsamp; i++) {
        double ts = t_from + i / o->sample_hz;
        for (int g = first; g < first + ngpu; g++) {
            pfi_sample s;
            int rc = pfi_sim_sample(node, g, ts, &s, err);
            if (rc != PFI_OK)
                return rc;
            tadd(&t, T_POWER, s.power_w, s.have & PFI_F_POWER);
            tadd(&t, T_ENF, s.enforced_w, s.have & PFI_F_LIMIT);
            tadd(&t, T_CLOCK, s.sm_clock_mhz, s.have & PFI_F_SM_CLOCK);
            tadd(&t, T_UTIL, s.gpu_util, s.have & PFI_F_GPU_UTIL);
            tadd(&t, T_SM, s.sm_active, s.have & PFI_F_SM_ACTIVE);
            tadd(&t, T_TENSOR, s.tensor_active, s.have & PFI_F_TENSOR);
            tadd(&t, T_DRAM, s.dram_active, s.have & PFI_F_DRAM);
            tadd(&t, T_NVLINK, s.nvlink_tx_mibs + s.nvlink_rx_mibs, s.have & PFI_F_NVLINK);
            tadd(&t, T_PCIE, s.pcie_tx_mibs + s.pcie_rx_mibs, s.have & PFI_F_PCIE);
            if (s.have & PFI_F_REASONS) {
                t.capped += (s.clock_reasons & PFI_REASON_SW_POWERCAP) != 0;
                t.n++;
            }
        }
    }
    /* Throughput as a training log gives it: cumulative tokens at the window's ends, and five
     * sub-window rates for a batch-means interval. */
    enum { NB = 5 };
    double tok[NB + 1], rate[NB];
    for (int b = 0; b <= NB; b++) {
        pfi_sim_job_status st;
        int rc = pfi_sim_job_status_at(node, job, t_from + o->window_s * b / NB, &st, err);
        if (rc != PFI_OK)
            return rc;
        tok[b] = st.tokens;
    }
    double mean = 0, var = 0;
    for (int b = 0; b < NB; b++) {
        rate[b] = (tok[b + 1] - tok[b]) / (o->window_s / NB);
        mean += rate[b] / NB;
    }
    for (int b = 0; b < NB; b++)
        var += (rate[b] - mean) * (rate[b] - mean) / (NB - 1);
    double half = 2.776 * sqrt(var / NB); /* t(0.975, 4) */
    lv->tput = (tok[NB] - tok[0]) / o->window_s;
    lv->tput_lo = lv->tput - half;
    lv->tput_hi = lv->tput + half;
    lv->power_w = tmean(&t, T_POWER);
    lv->enforced_w = tmean(&t, T_ENF);
    lv->sm_clock_mhz = tmean(&t, T_CLOCK);
    lv->powercap_frac = t.n ? (double)t.capped / t.n : NAN;
    lv->gpu_util = tmean(&t, T_UTIL);
    lv->sm_active = tmean(&t, T_SM);
    lv->tensor_active = tmean(&t, T_TENSOR);
    lv->dram_active = tmean(&t, T_DRAM);
    lv->nvlink_mibs = tmean(&t, T_NVLINK);
    lv->pcie_mibs = tmean(&t, T_PCIE);
    lv->t_start_s = t_from;
    lv->t_end_s = t_from + o->window_s;
    lv->n_samples = (nsamp + 1) * ngpu;
    return PFI_OK;
}

/* The same characterization through pfi_sweep_run on a sim backend opened from the entry's
 * node config (written to a temporary file: the backend takes a preset or a file). */
static int characterize_sweep(const pfi_fleet_entry *e, const pfi_fleet_opts *o, pfi_run *out,
                              pfi_err *err)
{
    if (getenv("PFI_SIM_STATE"))
        return pfi_err_set(err, PFI_ESTATE,
                           "PFI_SIM_STATE is set: a fleet sweep needs its own virtual-time node");
    const char *tmp = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/pfi-fleet-XXXXXX.json", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemps(path, 5);
    if (fd < 0)
        return pfi_err_set(err, PFI_EIO, "cannot create a temporary file in %s",
                           tmp && *tmp ? tmp : "/tmp");
    char *js = pfi_sim_config_dump(&e->node);
    size_t len = js ? strlen(js) : 0;
    int ok = js && write(fd, js, len) == (ssize_t)len;
    close(fd);
    free(js);
    pfi_backend *b = NULL;
    pfi_tput_source *src = NULL;
    pfi_sweep_result *res = calloc(1, sizeof *res);
    int rc = ok && res ? PFI_OK : pfi_err_set(err, PFI_EIO, "cannot write %s", path);
    if (rc == PFI_OK)
        rc = pfi_hw_open("sim", path, 0, &b, err);
    unlink(path);
    if (rc == PFI_OK)
        rc = pfi_source_sim(0, &src, err);
    if (rc == PFI_OK) {
        const pfi_job_config *j = &e->node.jobs[0];
        pfi_sweep_cfg c;
        pfi_sweep_defaults(&c);
        c.n_gpus = j->n_gpus;
        for (int g = 0; g < j->n_gpus && g < PFI_MAX_GPUS; g++)
            c.gpus[g] = j->first_gpu + g;
        /* Same ladder as the direct path: floored at the device minimum, no repeats. */
        c.n_levels = 0;
        for (int l = 0; l < o->n_levels; l++) {
            double cap = o->levels[l] * e->node.gpu.default_limit_w;
            if (cap < e->node.gpu.min_limit_w)
                cap = e->node.gpu.min_limit_w;
            if (c.n_levels > 0 && cap >= c.levels[c.n_levels - 1] - 0.5)
                continue;
            c.levels[c.n_levels++] = cap;
        }
        c.levels_frac = 0;
        c.threaded_sampler = 0;
        c.dwell_s = o->window_s;
        c.steady.settle_s = o->settle_s;
        c.name = e->run;
        c.meta = e->meta;
        rc = pfi_sweep_run(b, src, &c, res, err);
    }
    if (rc == PFI_OK) {
        *out = res->run;
        snprintf(out->source, sizeof out->source, "sim");
    }
    free(res);
    if (src)
        pfi_source_free(src);
    if (b)
        pfi_hw_close(b);
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "%s: ", e->run);
    return PFI_OK;
}

int pfi_fleet_characterize(const pfi_fleet_entry *e, const pfi_fleet_opts *o, pfi_run *out,
                           pfi_err *err)
{
    if (o->n_levels < 3 || o->n_levels > PFI_FLEET_MAX_LEVELS || o->levels[0] != 1.0)
        return pfi_err_set(err, PFI_EINVAL,
                           "a fleet sweep needs 3-%d levels starting at 1.0 (the baseline)",
                           PFI_FLEET_MAX_LEVELS);
    if (!(o->window_s > 0) || !(o->sample_hz > 0) || !(o->settle_s >= 0))
        return pfi_err_set(err, PFI_EINVAL, "fleet sweep window, rate and settle time must be > 0");
    if (o->use_sweep)
        return characterize_sweep(e, o, out, err);
    pfi_sim_node *node;
    int rc = pfi_sim_node_new(&e->node, &node, err);
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "%s: ", e->run);
    const pfi_node_config *cfg = pfi_sim_node_config(node);
    const pfi_job_config *job = &cfg->jobs[0];
    const pfi_gpu_model *g = &cfg->gpu;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", e->run);
    snprintf(out->source, sizeof out->source, "sim");
    snprintf(out->gpu_type, sizeof out->gpu_type, "%s", g->name);
    out->n_gpus = job->n_gpus;
    out->unit = PFI_TOKENS_PER_S;
    out->min_limit_w = g->min_limit_w;
    out->max_limit_w = g->max_limit_w;
    out->default_limit_w = g->default_limit_w;
    out->meta = e->meta;
    /* The job runs from t = 0; let it warm up as a real one would before the baseline. */
    double t = 10.0;
    for (int l = 0; l < o->n_levels && rc == PFI_OK; l++) {
        double cap = o->levels[l] * g->default_limit_w;
        if (cap < g->min_limit_w)
            cap = g->min_limit_w;
        if (l > 0 && cap >= out->levels[out->n_levels - 1].cap_w - 0.5)
            continue; /* floored at the minimum: already measured */
        for (int i = job->first_gpu; i < job->first_gpu + job->n_gpus && rc == PFI_OK; i++)
            rc = pfi_sim_set_limit(node, i, t, cap, err);
        if (rc != PFI_OK)
            break;
        pfi_level *lv = &out->levels[out->n_levels];
        memset(lv, 0, sizeof *lv);
        lv->cap_w = cap;
        rc = measure_level(node, 0, job->first_gpu, job->n_gpus, t + o->settle_s, o, lv, err);
        lv->began_s = t; /* its caps set: settling, then the window */
        lv->ended_s = t + o->settle_s + o->window_s;
        if (rc == PFI_OK)
            out->n_levels++;
        t += o->settle_s + o->window_s + 1.0;
    }
    pfi_sim_node_free(node);
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "%s: ", e->run);
    return PFI_OK;
}

int pfi_same_job_config(const pfi_job_meta *a, int na, const pfi_job_meta *b, int nb)
{
    /* Case aside: a rerun tagged "Llama-3-8B" where the first said "llama-3-8b" is one job. */
    return a->model[0] && strcasecmp(a->model, b->model) == 0 && na == nb && a->dp == b->dp &&
           a->tp == b->tp && a->pp == b->pp && a->ep == b->ep && a->finetune == b->finetune &&
           a->lora == b->lora && a->seq_len == b->seq_len && a->global_batch == b->global_batch;
}

int pfi_fleet_build(const char *which, uint64_t seed, const pfi_fleet_opts *o,
                    pfi_fleet_run **out, int *n, pfi_err *err)
{
    pfi_fleet_entry *ent = NULL;
    int ne = 0;
    *out = NULL;
    *n = 0;
    int rc = pfi_sim_fleet(which, seed, &ent, &ne, err);
    if (rc != PFI_OK)
        return rc;
    pfi_fleet_run *runs = calloc((size_t)(ne > 0 ? ne : 1), sizeof *runs);
    if (!runs) {
        free(ent);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory for %d fleet runs", ne);
    }
    static const char step[] = "characterizing the simulated fleet (virtual time)";
    for (int i = 0; i < ne && rc == PFI_OK; i++) {
        if (o->progress)
            o->progress(o->progress_ctx, step, i, ne);
        rc = pfi_fleet_characterize(&ent[i], o, &runs[i].run, err);
        snprintf(runs[i].set, sizeof runs[i].set, "%s", ent[i].set);
        runs[i].match = ent[i].match;
        /* Runs of one job configuration (a validation rerun, the H100 run matched to an H200
         * one) share a group, so leaving a job out leaves all of its runs out. */
        runs[i].group = i;
        if (ent[i].match >= 0 && ent[i].match < i)
            runs[i].group = runs[ent[i].match].group;
        else
            for (int j = 0; j < i; j++)
                if (pfi_same_job_config(&ent[i].meta, ent[i].node.jobs[0].n_gpus, &ent[j].meta,
                                        ent[j].node.jobs[0].n_gpus)) {
                    runs[i].group = runs[j].group;
                    break;
                }
    }
    free(ent);
    if (rc != PFI_OK) {
        free(runs);
        return rc;
    }
    if (o->progress)
        o->progress(o->progress_ctx, step, ne, ne);
    *out = runs;
    *n = ne;
    return PFI_OK;
}

int pfi_fleet_store(pfi_store *st, const pfi_fleet_run *runs, int n, pfi_err *err)
{
    for (int i = 0; i < n; i++) {
        const pfi_fleet_run *r = &runs[i];
        char t_set[48], t_group[48], t_match[48];
        snprintf(t_set, sizeof t_set, "set=%s", r->set);
        snprintf(t_group, sizeof t_group, "group=%d", r->group);
        snprintf(t_match, sizeof t_match, "match=%d", r->match);
        const char *tags[3] = {t_set, t_group, t_match};
        int rc = pfi_store_save_run(st, &r->run, "sim", tags, 3, NULL, err);
        if (rc != PFI_OK)
            return rc;
    }
    return PFI_OK;
}
