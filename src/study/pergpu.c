/* SPDX-License-Identifier: Apache-2.0 */
/* pergpu.c: per-GPU caps against one cap per job, measured in the simulator (pergpu.h). */
#include "study/pergpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/alloc_pergpu.h"
#include "sim/sim.h"
#include "store/codec.h"

#define PG_CAPS 64
#define PG_SETTLE_S 10.0 /* virtual seconds after a change: 40 firmware time constants */

typedef struct pg_job {
    pfi_sim_node *node;
    int sim_job, first, n;  /* the job on its node and its GPUs */
    char id[96];
    int ncaps;
    double caps[PG_CAPS], tput[PG_CAPS], clock[PFI_MAX_GPUS * PG_CAPS];
    double gcaps[PFI_MAX_GPUS * PG_CAPS], x[PG_CAPS]; /* per-GPU table */
    double xc[PG_CAPS], xt[PG_CAPS];                  /* per-GPU curve */
    int nx;
    double p0, min_w, max_w;
    pfi_pergpu_job table;
} pg_job;

struct pfi_pergpu_bench {
    int nnodes, njobs;
    pfi_sim_node *nodes[PFI_PERGPU_MAX_NODES];
    double t[PFI_PERGPU_MAX_NODES]; /* each node's clock: changes must move forward */
    pg_job jobs[PFI_PERGPU_MAX_JOBS];
    double caps[PFI_PERGPU_MAX_JOBS][PFI_MAX_GPUS]; /* what pg_apply sets next */
};

/* Sets every GPU of every job (B->caps[j][g]) and returns the tokens/s of each job once
 * settled. */
static int pg_apply(pfi_pergpu_bench *B, double *tput, pfi_err *err)
{
    for (int i = 0; i < B->nnodes; i++)
        B->t[i] += 1.0;
    for (int j = 0; j < B->njobs; j++) {
        pg_job *J = &B->jobs[j];
        int ni = 0;
        while (B->nodes[ni] != J->node)
            ni++;
        for (int g = 0; g < J->n; g++) {
            int rc = pfi_sim_set_limit(J->node, J->first + g, B->t[ni], B->caps[j][g], err);
            if (rc)
                return pfi_err_prefix(err, "%s GPU %d: ", J->id, g);
        }
    }
    for (int i = 0; i < B->nnodes; i++)
        B->t[i] += PG_SETTLE_S;
    for (int j = 0; j < B->njobs; j++) {
        pg_job *J = &B->jobs[j];
        int ni = 0;
        while (B->nodes[ni] != J->node)
            ni++;
        pfi_sim_job_status st;
        int rc = pfi_sim_job_status_at(J->node, J->sim_job, B->t[ni], &st, err);
        if (rc)
            return rc;
        tput[j] = st.tokens_per_s;
    }
    return PFI_OK;
}

int pfi_pergpu_bench_measure(pfi_pergpu_bench *B, double step_w, pfi_err *err)
{
    double tput[PFI_PERGPU_MAX_JOBS];
    int maxk = 0;
    for (int j = 0; j < B->njobs; j++) {
        pg_job *J = &B->jobs[j];
        J->ncaps = 0;
        for (double c = J->min_w; c <= J->max_w + 1e-9 && J->ncaps < PG_CAPS; c += step_w)
            J->caps[J->ncaps++] = c;
        if (J->caps[J->ncaps - 1] < J->max_w - 1e-9 && J->ncaps < PG_CAPS)
            J->caps[J->ncaps++] = J->max_w;
        if (J->ncaps > maxk)
            maxk = J->ncaps;
    }
    for (int k = 0; k < maxk; k++) {
        for (int j = 0; j < B->njobs; j++)
            for (int g = 0; g < B->jobs[j].n; g++)
                B->caps[j][g] = B->jobs[j].caps[k < B->jobs[j].ncaps ? k : B->jobs[j].ncaps - 1];
        int rc = pg_apply(B, tput, err);
        if (rc)
            return rc;
        for (int j = 0; j < B->njobs; j++) {
            pg_job *J = &B->jobs[j];
            if (k >= J->ncaps)
                continue;
            J->tput[k] = tput[j];
            int ni = 0;
            while (B->nodes[ni] != J->node)
                ni++;
            for (int g = 0; g < J->n; g++) {
                pfi_sample s;
                if ((rc = pfi_sim_sample(J->node, J->first + g, B->t[ni], &s, err)))
                    return rc;
                J->clock[g * J->ncaps + k] = s.sm_clock_mhz;
                if (k == J->ncaps - 1)
                    J->p0 += s.power_w / J->n; /* the top cap is the default: the baseline */
            }
        }
    }
    /* A GPU's clock read at one instant can dip by a few MHz; the table wants it monotone. */
    for (int j = 0; j < B->njobs; j++) {
        pg_job *J = &B->jobs[j];
        for (int g = 0; g < J->n; g++)
            for (int k = 1; k < J->ncaps; k++) {
                double *f = &J->clock[g * J->ncaps + k];
                if (*f < f[-1])
                    *f = f[-1];
            }
        J->table = (pfi_pergpu_job){J->n, J->ncaps, J->caps, J->clock, J->tput};
        int rc = pfi_pergpu_table(&J->table, J->gcaps, J->x, err);
        if (rc)
            return pfi_err_prefix(err, "%s: ", J->id);
        J->nx = pfi_pergpu_curve(&J->table, J->x, J->xc, J->xt, NULL);
    }
    return PFI_OK;
}

int pfi_pergpu_bench_new(const char *presets, double variation, pfi_pergpu_bench **out,
                         pfi_err *err)
{
    pfi_pergpu_bench *B = calloc(1, sizeof *B);
    if (!B)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    int rc = PFI_OK;
    char list[512];
    snprintf(list, sizeof list, "%s", presets);
    for (char *sv = NULL, *name = strtok_r(list, ",", &sv); name && !rc;
         name = strtok_r(NULL, ",", &sv)) {
        if (B->nnodes == PFI_PERGPU_MAX_NODES) {
            rc = pfi_err_set(err, PFI_EINVAL, "at most 8 nodes");
            break;
        }
        pfi_node_config cfg;
        if ((rc = pfi_sim_config_load(name, &cfg, err)))
            break;
        if (!isnan(variation))
            cfg.variation = variation;
        cfg.seed += (uint64_t)B->nnodes; /* distinct GPUs on each node */
        if ((rc = pfi_sim_config_check(&cfg, err)) ||
            (rc = pfi_sim_node_new(&cfg, &B->nodes[B->nnodes], err)))
            break;
        pfi_sim_node *nd = B->nodes[B->nnodes++];
        for (int j = 0; j < cfg.n_jobs && B->njobs < PFI_PERGPU_MAX_JOBS; j++) {
            pg_job *J = &B->jobs[B->njobs++];
            J->node = nd;
            J->sim_job = j;
            J->first = cfg.jobs[j].first_gpu;
            J->n = cfg.jobs[j].n_gpus;
            J->min_w = cfg.gpu.min_limit_w;
            J->max_w = cfg.gpu.default_limit_w;
            snprintf(J->id, sizeof J->id, "%s/%s", name, cfg.jobs[j].name);
        }
    }
    if (rc) {
        pfi_pergpu_bench_free(B);
        return rc;
    }
    *out = B;
    return PFI_OK;
}

void pfi_pergpu_bench_free(pfi_pergpu_bench *B)
{
    if (!B)
        return;
    for (int i = 0; i < B->nnodes; i++)
        pfi_sim_node_free(B->nodes[i]);
    free(B);
}

void pfi_pergpu_bench_size(const pfi_pergpu_bench *B, int *jobs, int *nodes, long *gpus)
{
    *jobs = B->njobs;
    *nodes = B->nnodes;
    *gpus = 0;
    for (int j = 0; j < B->njobs; j++)
        *gpus += B->jobs[j].n;
}

int pfi_pergpu_bench_write_jobs(const pfi_pergpu_bench *B, const char *path, pfi_err *err)
{
    json_t *ja = json_array();
    for (int j = 0; j < B->njobs; j++) {
        const pg_job *J = &B->jobs[j];
        pfi_alloc_job a = {.id = J->id, .n_gpus = J->n, .min_cap_w = J->min_w,
                           .max_cap_w = J->max_w, .cap_w = J->caps, .tput = J->tput,
                           .n_points = J->ncaps, .p0_w = J->p0, .t0 = NAN, .sla = NAN,
                           .weight = NAN};
        json_array_append_new(ja, pfi_job_json_encode(&a, NULL, NAN, &J->table));
    }
    json_t *doc = json_pack("{s:s, s:o}", "note",
                            "measured by pfi bench pergpu on the simulator", "jobs", ja);
    int rc = PFI_OK;
    if (json_dump_file(doc, path, JSON_INDENT(1) | JSON_REAL_PRECISION(8)))
        rc = pfi_err_set(err, PFI_EIO, "cannot write %s", path);
    json_decref(doc);
    return rc;
}

int pfi_pergpu_bench_cut(pfi_pergpu_bench *B, double cut, pfi_pergpu_cut *out, pfi_err *err)
{
    pfi_alloc_job uni[PFI_PERGPU_MAX_JOBS], per[PFI_PERGPU_MAX_JOBS];
    double tput[PFI_PERGPU_MAX_JOBS];
    double budget = 0;
    for (int j = 0; j < B->njobs; j++) {
        pg_job *J = &B->jobs[j];
        budget += J->n * J->p0;
        uni[j] = (pfi_alloc_job){J->id, J->n, J->min_w, J->max_w, J->caps, J->tput, J->ncaps,
                                 J->p0, NAN, NAN, 1};
        /* flat above its last point: the device maximum stays the range's end */
        per[j] = (pfi_alloc_job){J->id, J->n, J->xc[0], J->max_w, J->xc, J->xt, J->nx,
                                 J->p0, NAN, NAN, 1};
    }
    budget *= 1 - cut;
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    pfi_alloc_result ru, rp;
    int rc;
    if ((rc = pfi_alloc_solve(uni, B->njobs, budget, &o, &ru, err)))
        return rc;
    if ((rc = pfi_alloc_solve(per, B->njobs, budget, &o, &rp, err))) {
        pfi_alloc_result_free(&ru);
        return rc;
    }
    double tu = 0, tp = 0, wu = 0, wp = 0;
    for (int j = 0; j < B->njobs; j++)
        for (int g = 0; g < B->jobs[j].n; g++)
            B->caps[j][g] = ru.cap_w[j], wu += ru.cap_w[j];
    if (!(rc = pg_apply(B, tput, err)))
        for (int j = 0; j < B->njobs; j++)
            tu += tput[j];
    for (int j = 0; !rc && j < B->njobs; j++) {
        pg_job *J = &B->jobs[j];
        pfi_pergpu_split(&J->table, J->gcaps, J->x, rp.cap_w[j], B->caps[j]);
        for (int g = 0; g < J->n; g++)
            wp += B->caps[j][g];
    }
    if (!rc && !(rc = pg_apply(B, tput, err)))
        for (int j = 0; j < B->njobs; j++)
            tp += tput[j];
    pfi_alloc_result_free(&ru);
    pfi_alloc_result_free(&rp);
    if (rc)
        return rc;
    *out = (pfi_pergpu_cut){budget, tu, tp, wu, wp};
    return PFI_OK;
}
