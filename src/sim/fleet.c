/* SPDX-License-Identifier: Apache-2.0 */
/* fleet.c: the seeded generator of simulated runs shaped like the paper's data: 131 H200 runs,
 * 24 H200 validation runs, 34 H100 runs matched to H200 ones; dense and MoE; pretraining,
 * full fine-tuning and LoRA; 1 to 32 GPUs with model sizes and parallelism that fit them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/physics.h"

/* Which models a job of a given GPU count trains, and how it is split.  Sizes follow what fits
 * in memory with a distributed optimizer; tp stays inside a host, pp only when tp is not enough. */
typedef struct recipe {
    const char *model;
    int min_gpus, max_gpus;
    int tp8, pp8;  /* tp and pp at 8+ GPUs (clamped to the GPU count) */
    int kinds;     /* bit 0 pretrain, bit 1 finetune, bit 2 LoRA */
} recipe;

static const recipe recipes[] = {
    {"qwen2.5-0.5b", 1, 4, 1, 1, 7},  {"llama3.2-1b", 1, 8, 1, 1, 7},
    {"qwen2.5-1.5b", 1, 8, 1, 1, 7},  {"llama3.2-3b", 1, 16, 1, 1, 7},
    {"llama3-8b", 1, 32, 1, 1, 7},    {"mistral-7b", 2, 16, 1, 1, 6},
    {"qwen2.5-7b", 2, 32, 2, 1, 7},   {"llama2-13b", 4, 32, 2, 1, 7},
    {"qwen2.5-14b", 4, 32, 4, 1, 6},  {"qwen2.5-32b", 8, 32, 8, 1, 6},
    {"llama3-70b", 8, 32, 8, 2, 5},   {"olmoe-1b-7b", 1, 16, 1, 1, 7},
    {"qwen1.5-moe-a2.7b", 2, 16, 1, 1, 7}, {"deepseek-moe-16b", 4, 32, 1, 1, 7},
    {"mixtral-8x7b", 8, 32, 2, 1, 5}, {"mixtral-8x22b", 32, 32, 8, 2, 1},
};
#define NRECIPES ((int)(sizeof recipes / sizeof recipes[0]))

static const int gpu_counts[] = {1, 2, 4, 8, 8, 8, 16, 16, 32, 4, 1, 8};

typedef struct rng {
    uint64_t seed, n;
} rng;
static double unif(rng *r) { return pfi_sim_uniform(r->seed, 77, r->n++); }
static int pick(rng *r, int n) { return (int)(unif(r) * n) % n; }

/* One job on an n-GPU node of gpu type; returns 0 when the draw does not fit (caller redraws). */
static int draw_job(rng *r, const char *gpu, const char *also_fits, pfi_fleet_entry *e,
                    pfi_err *err)
{
    int n = gpu_counts[pick(r, (int)(sizeof gpu_counts / sizeof gpu_counts[0]))];
    const recipe *rc = &recipes[pick(r, NRECIPES)];
    if (n < rc->min_gpus || n > rc->max_gpus)
        return 0;
    /* Pretraining, full fine-tuning and LoRA in about 5:3:2. */
    double u = unif(r);
    int kind = u < 0.5 ? PFI_JOB_PRETRAIN : u < 0.8 ? PFI_JOB_FINETUNE : PFI_JOB_LORA;
    if (!(rc->kinds & (1 << kind)))
        return 0;
    pfi_node_config *c = &e->node;
    memset(c, 0, sizeof *c);
    snprintf(c->gpu.name, sizeof c->gpu.name, "%s", gpu);
    c->n_gpus = n;
    c->gpus_per_host = 8;
    /* 400 or 200 Gb/s InfiniBand per GPU: clusters differ. */
    c->net_gbs = unif(r) < 0.7 ? 50 : 25;
    c->seed = (uint64_t)(unif(r) * 4294967296.0);
    c->variation = 0.015 + 0.01 * unif(r);
    c->noise_w = 4;
    c->ambient_c = 28 + 6 * unif(r);
    c->n_jobs = 1;
    pfi_job_config *j = &c->jobs[0];
    if (pfi_sim_job_from_model(j, rc->model, err) != PFI_OK)
        return -1;
    snprintf(j->name, sizeof j->name, "train");
    j->kind = kind;
    int tp = n >= 8 ? rc->tp8 : (rc->tp8 < n ? rc->tp8 : n);
    if (kind == PFI_JOB_LORA && tp > 1 && j->params_b < 40)
        tp /= 2; /* frozen weights need no optimizer state: less splitting */
    int pp = n >= 16 ? rc->pp8 : 1;
    if (tp * pp > n)
        return 0;
    j->tp = tp;
    j->pp = pp;
    j->dp = n / (tp * pp);
    if (j->moe) {
        int ep = 1;
        while (ep * 2 <= j->dp * tp && ep * 2 <= j->experts && j->experts % (ep * 2) == 0)
            ep *= 2;
        j->ep = ep;
    }
    /* Memory: ~16 bytes per parameter for full training sharded over the GPUs it can use. */
    double per_gpu = j->params_b * 1e9 * (kind == PFI_JOB_LORA ? 2.2 : 4.0) / (tp * pp) +
                     (kind == PFI_JOB_LORA ? 0 : 12.0 * j->params_b * 1e9 / n);
    const pfi_gpu_model *gm = pfi_gpu_model_find(also_fits ? also_fits : gpu);
    if (per_gpu > gm->mem_gib * 1073741824.0 * 0.75)
        return 0;
    static const int seqs_pre[] = {2048, 4096, 4096, 8192, 8192};
    static const int seqs_ft[] = {1024, 2048, 4096, 4096};
    j->seq_len = kind == PFI_JOB_PRETRAIN ? seqs_pre[pick(r, 5)] : seqs_ft[pick(r, 4)];
    j->micro_batch = j->params_b < 4 ? 1 << pick(r, 3) : 1 << pick(r, 2);
    /* Tokens per step: 0.5-4M for pretraining, 64k-1M for fine-tuning (power of two steps). */
    double toks = kind == PFI_JOB_PRETRAIN ? 524288.0 * (1 << pick(r, 4))
                                           : 65536.0 * (1 << pick(r, 5));
    int unit = j->dp * j->micro_batch;
    int gb = (int)(toks / j->seq_len);
    gb = (gb + unit - 1) / unit * unit;
    if (gb / unit < (pp > 1 ? 2 * pp : 1))
        gb = unit * (pp > 1 ? 2 * pp : 1);
    j->global_batch = gb;
    j->precision = gpu[0] == 'H' && unif(r) < 0.12 ? PFI_PREC_FP8 : PFI_PREC_BF16;
    /* Most jobs keep their GPUs fed; some wait on data loading, checkpoint or evaluation
     * hooks, small fine-tuning jobs more often (fast steps, tokenization on the fly). */
    double us = unif(r);
    double stall_p = kind == PFI_JOB_PRETRAIN ? 0.25 : 0.5;
    j->input_stall = us < stall_p ? 0.05 + 0.6 * pow(unif(r), 2) : 0;
    /* Host launch overhead per layer and microbatch varies with the framework and CPU. */
    j->host_ms = 0.05 + 0.6 * unif(r);
    if (kind == PFI_JOB_LORA)
        j->lora_rank = 8 << pick(r, 4);
    snprintf(c->name, sizeof c->name, "%s-%d", gpu, n);
    return pfi_sim_config_check(c, err) == PFI_OK ? 1 : -1;
}

static void name_entry(pfi_fleet_entry *e, int idx)
{
    const pfi_job_config *j = &e->node.jobs[0];
    static const char *const kinds[] = {"pretrain", "finetune", "lora"};
    char gpu[16];
    snprintf(gpu, sizeof gpu, "%s", e->node.gpu.name[1] == '2' ? "h200" : "h100");
    snprintf(e->run, sizeof e->run, "%s/%s/%03d %s %s %dgpu dp%dtp%dpp%d%s", gpu, e->set, idx,
             j->model, kinds[j->kind], j->n_gpus, j->dp, j->tp, j->pp, j->moe ? "ep" : "");
    if (j->moe) {
        size_t l = strlen(e->run);
        snprintf(e->run + l, sizeof e->run - l, "%d", j->ep);
    }
    pfi_sim_job_meta(j, &e->meta);
}

/* also_fits: draw only jobs that would also fit on that (smaller) GPU. */
static int draw_set(rng *r, const char *gpu, const char *also_fits, const char *set, int count,
                    pfi_fleet_entry *out, pfi_err *err)
{
    for (int i = 0; i < count; i++) {
        pfi_fleet_entry *e = &out[i];
        int ok = 0;
        for (int tries = 0; tries < 10000 && ok == 0; tries++) {
            ok = draw_job(r, gpu, also_fits, e, err);
            if (ok < 0)
                return err ? err->code : PFI_EINTERNAL;
        }
        if (ok != 1)
            return pfi_err_set(err, PFI_EINTERNAL, "fleet: no job fits");
        snprintf(e->set, sizeof e->set, "%s", set);
        e->match = -1;
        name_entry(e, i);
    }
    return PFI_OK;
}

int pfi_sim_fleet(const char *which, uint64_t seed, pfi_fleet_entry **out, int *n, pfi_err *err)
{
    *out = NULL;
    *n = 0;
    int main_n, val_n, h100_n;
    if (which && strcmp(which, "small") == 0) {
        main_n = 8, val_n = 0, h100_n = 4;
    } else if (!which || strcmp(which, "paper") == 0) {
        main_n = 131, val_n = 24, h100_n = 34;
    } else {
        return pfi_err_set(err, PFI_EINVAL, "unknown fleet '%s' (paper or small)", which);
    }
    int total = main_n + val_n + h100_n;
    pfi_fleet_entry *f = calloc((size_t)total, sizeof *f);
    if (!f)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    rng r = {seed, 0};
    /* The small fleet is all H100-sized so that half of it can be matched. */
    const char *fits = main_n < 2 * h100_n + 8 ? "H100-SXM" : NULL;
    int rc = draw_set(&r, "H200-SXM", fits, "main", main_n, f, err);
    if (rc == PFI_OK)
        rc = draw_set(&r, "H200-SXM", NULL, "validation", val_n, f + main_n, err);
    /* H100 runs repeat H200 main runs that also fit in 80 GB, spread over the main set. */
    int k = 0;
    for (int i = 0; rc == PFI_OK && k < h100_n && i < main_n * 4; i++) {
        int src = (int)((i * 37L + 11) % main_n);
        if (i >= main_n) /* second pass: anything not yet used */
            src = i % main_n;
        int used = 0;
        for (int q = 0; q < k; q++)
            used |= f[main_n + val_n + q].match == src;
        if (used)
            continue;
        pfi_fleet_entry *e = &f[main_n + val_n + k];
        *e = f[src];
        pfi_node_config *c = &e->node;
        const pfi_gpu_model *h100 = pfi_gpu_model_find("H100-SXM");
        c->gpu = *h100;
        c->seed = (uint64_t)(pfi_sim_uniform(seed, 78, (uint64_t)k) * 4294967296.0);
        int room = 1;
        for (int st = 0; st < c->jobs[0].pp && room; st++) {
            pfi_sim_work w;
            room = pfi_sim_job_work(c, &c->jobs[0], st, &w, NULL) == PFI_OK &&
                   w.mem_used_mib <= h100->mem_gib * 1024 * 0.9;
        }
        if (!room)
            continue; /* a stage does not fit on an 80 GB part */
        snprintf(c->name, sizeof c->name, "H100-SXM-%d", c->n_gpus);
        snprintf(e->set, sizeof e->set, "h100");
        e->match = src;
        name_entry(e, k);
        k++;
    }
    if (rc == PFI_OK && k < h100_n)
        rc = pfi_err_set(err, PFI_EINTERNAL, "fleet: only %d H100 matches", k);
    if (rc != PFI_OK) {
        free(f);
        return rc;
    }
    *out = f;
    *n = total;
    return PFI_OK;
}
