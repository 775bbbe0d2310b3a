/* SPDX-License-Identifier: Apache-2.0 */
/* config.c: node and job configuration: validation with defaults, built-in presets, and the
 * JSON format of docs/simulator.md (strict: an unknown key is an error, so a typo never
 * silently falls back to a default). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/physics.h"
#include "util/fs.h"
#include "util/text.h"

static const char *const kind_names[] = {"pretrain", "finetune", "lora"};
static const char *const prec_names[] = {"bf16", "fp16", "fp8", "fp32"};

static int check_job(pfi_node_config *c, int idx, pfi_err *err)
{
    pfi_job_config *j = &c->jobs[idx];
    if (!j->name[0])
        snprintf(j->name, sizeof j->name, "job%d", idx);
    const char *nm = j->name;
    for (int k = 0; k < idx; k++)
        if (strcmp(c->jobs[k].name, nm) == 0)
            return pfi_err_set(err, PFI_EINVAL, "two jobs are named '%s'", nm);
    if (j->model[0] && j->layers == 0) {
        pfi_job_config arch = *j;
        int rc = pfi_sim_job_from_model(&arch, j->model, err);
        if (rc != PFI_OK)
            return pfi_err_prefix(err, "job '%s': ", nm);
        double keep_params = j->params_b;
        *j = arch;
        if (keep_params > 0)
            j->params_b = keep_params;
    }
    if (!j->model[0])
        snprintf(j->model, sizeof j->model, "custom");
    if (j->params_b <= 0 || !isfinite(j->params_b))
        return pfi_err_set(err, PFI_EINVAL, "job '%s': params_b must be > 0 (or give a known model)", nm);
    if (j->layers <= 0 || j->hidden <= 0)
        return pfi_err_set(err, PFI_EINVAL, "job '%s': layers and hidden must be > 0", nm);
    if (j->ffn_hidden <= 0)
        j->ffn_hidden = 4 * j->hidden;
    if (j->heads <= 0)
        j->heads = j->hidden >= 128 ? j->hidden / 128 : 1;
    if (j->vocab <= 0)
        j->vocab = 50257;
    if (j->seq_len <= 0 || j->seq_len > 1048576)
        return pfi_err_set(err, PFI_EINVAL, "job '%s': seq_len must be 1..1048576", nm);
    if (j->micro_batch <= 0)
        j->micro_batch = 1;
    if (j->dp <= 0) j->dp = 1;
    if (j->tp <= 0) j->tp = 1;
    if (j->pp <= 0) j->pp = 1;
    if (j->ep <= 0) j->ep = 1;
    int n = j->dp * j->tp * j->pp;
    if (j->n_gpus == 0)
        j->n_gpus = n;
    if (j->n_gpus != n)
        return pfi_err_set(err, PFI_EINVAL, "job '%s': gpus=%d but dp*tp*pp=%d*%d*%d=%d", nm,
                           j->n_gpus, j->dp, j->tp, j->pp, n);
    if (j->first_gpu < 0 || j->first_gpu + n > c->n_gpus)
        return pfi_err_set(err, PFI_EINVAL, "job '%s' needs GPUs %d-%d but the node has %d", nm,
                           j->first_gpu, j->first_gpu + n - 1, c->n_gpus);
    if (j->global_batch < j->dp * j->micro_batch)
        return pfi_err_set(err, PFI_EINVAL,
                           "job '%s': global_batch %d is smaller than dp*micro_batch = %d", nm,
                           j->global_batch, j->dp * j->micro_batch);
    if (j->pp > j->layers)
        return pfi_err_set(err, PFI_EINVAL, "job '%s': pp=%d exceeds its %d layers", nm, j->pp,
                           j->layers);
    if (j->pp > PFI_SIM_MAX_STAGES)
        return pfi_err_set(err, PFI_EINVAL, "job '%s': pp=%d exceeds %d pipeline stages", nm,
                           j->pp, PFI_SIM_MAX_STAGES);
    int parts = 0;
    double in_stages = 0;
    for (int s = 0; s < PFI_SIM_MAX_STAGES; s++) {
        if (!(j->stage_layers[s] >= 0 && isfinite(j->stage_layers[s])))
            return pfi_err_set(err, PFI_EINVAL, "job '%s': stage_layers[%d] must be >= 0", nm, s);
        if (j->stage_layers[s] > 0)
            parts = s + 1;
        in_stages += j->stage_layers[s];
    }
    if (parts > j->pp)
        return pfi_err_set(err, PFI_EINVAL, "job '%s': stage_layers has %d stages but pp=%d", nm,
                           parts, j->pp);
    if (parts > 0 && fabs(in_stages - j->layers) > 1e-6 * j->layers)
        return pfi_err_set(err, PFI_EINVAL,
                           "job '%s': stage_layers add up to %g layers but the model has %d", nm,
                           in_stages, j->layers);
    if (j->moe) {
        if (j->experts < 2 || j->top_k < 1 || j->top_k > j->experts)
            return pfi_err_set(err, PFI_EINVAL,
                               "job '%s': MoE needs experts >= 2 and 1 <= top_k <= experts", nm);
        if (j->ep > n || j->experts % j->ep != 0)
            return pfi_err_set(err, PFI_EINVAL,
                               "job '%s': ep=%d must divide experts=%d and be <= its %d GPUs", nm,
                               j->ep, j->experts, n);
    } else if (j->ep != 1) {
        return pfi_err_set(err, PFI_EINVAL, "job '%s': ep=%d on a dense model", nm, j->ep);
    }
    if (j->kind < 0 || j->kind > PFI_JOB_LORA)
        return pfi_err_set(err, PFI_EINVAL, "job '%s': bad kind", nm);
    if (j->precision < 0 || j->precision > PFI_PREC_FP32)
        return pfi_err_set(err, PFI_EINVAL, "job '%s': bad precision", nm);
    if (!(j->input_stall >= 0 && j->input_stall <= 10))
        return pfi_err_set(err, PFI_EINVAL, "job '%s': input_stall must be 0..10", nm);
    if (!j->family[0])
        snprintf(j->family, sizeof j->family, "gpt");
    pfi_sim_job_defaults(j);
    for (int k = 0; k < idx; k++) {
        const pfi_job_config *o = &c->jobs[k];
        if (j->first_gpu < o->first_gpu + o->n_gpus && o->first_gpu < j->first_gpu + n)
            return pfi_err_set(err, PFI_EINVAL, "jobs '%s' and '%s' share GPUs", o->name, nm);
    }
    return PFI_OK;
}

int pfi_sim_config_check(pfi_node_config *c, pfi_err *err)
{
    if (!c->gpu.name[0])
        return pfi_err_set(err, PFI_EINVAL, "the node has no GPU type");
    if (c->gpu.sm_clock_max_mhz <= 0) {
        const pfi_gpu_model *m = pfi_gpu_model_find(c->gpu.name);
        if (!m)
            return pfi_err_set(err, PFI_EINVAL, "unknown GPU type '%s'", c->gpu.name);
        c->gpu = *m;
    }
    const pfi_gpu_model *g = &c->gpu;
    if (!(g->min_limit_w > 0 && g->min_limit_w <= g->default_limit_w &&
          g->default_limit_w <= g->max_limit_w && g->dyn_w > 0 && g->tau_s > 0 &&
          g->v_floor > 0 && g->v_floor <= 1 && g->f_knee >= 0 && g->f_knee < 1 &&
          g->sm_clock_min_mhz > 0 && g->sm_clock_min_mhz < g->sm_clock_max_mhz))
        return pfi_err_set(err, PFI_EINVAL, "GPU model '%s' has inconsistent constants", g->name);
    if (c->n_gpus < 1 || c->n_gpus > PFI_MAX_GPUS)
        return pfi_err_set(err, PFI_EINVAL, "gpus must be 1..%d, not %d", PFI_MAX_GPUS, c->n_gpus);
    if (c->gpus_per_host <= 0)
        c->gpus_per_host = c->n_gpus < 8 ? c->n_gpus : 8;
    if (c->net_gbs <= 0)
        c->net_gbs = 50;
    /* A network transfer varies like a kernel (10%) unless the cluster says otherwise. */
    if (c->net_jitter <= 0)
        c->net_jitter = PFI_SIM_KERNEL_JITTER;
    if (c->ambient_c <= 0)
        c->ambient_c = 30;
    if (c->pace != PFI_SIM_PACE_MAX && c->pace != PFI_SIM_PACE_EXPECTED)
        return pfi_err_set(err, PFI_EINVAL, "pace must be max or expected");
    if (c->variation < 0 || c->variation > 0.2)
        return pfi_err_set(err, PFI_EINVAL, "variation must be 0..0.2, not %g", c->variation);
    if (c->noise_w < 0 || c->noise_w > 100)
        return pfi_err_set(err, PFI_EINVAL, "noise_w must be 0..100, not %g", c->noise_w);
    if (!c->name[0])
        snprintf(c->name, sizeof c->name, "node");
    for (int i = 0; i < c->n_gpus; i++) {
        double L = c->initial_limit_w[i];
        if (L != 0 && (L < g->min_limit_w - 0.5 || L > g->max_limit_w + 0.5))
            return pfi_err_set(err, PFI_ERANGE,
                               "initial limit %.0f W of GPU %d is outside %.0f-%.0f W", L, i,
                               g->min_limit_w, g->max_limit_w);
    }
    if (c->n_jobs < 0 || c->n_jobs > PFI_SIM_MAX_JOBS)
        return pfi_err_set(err, PFI_EINVAL, "at most %d jobs per node", PFI_SIM_MAX_JOBS);
    for (int j = 0; j < c->n_jobs; j++) {
        int rc = check_job(c, j, err);
        if (rc != PFI_OK)
            return rc;
    }
    return PFI_OK;
}

/* ---------------------------------------------------------------- presets */

typedef struct preset {
    const char *name, *summary, *gpu;
    int gpus, gph;
    struct { const char *model; int kind, gpus, dp, tp, pp, ep, seq, gbs, mb; } jobs[4];
} preset;

static const preset presets[] = {
    {"h200x8-dense", "8x H200, Llama-3 8B pretraining (DP8), the default", "H200-SXM", 8, 8,
     {{"llama3-8b", PFI_JOB_PRETRAIN, 8, 8, 1, 1, 1, 8192, 64, 1}}},
    {"h200x8-moe", "8x H200, Mixtral 8x7B pretraining (DP8, EP8)", "H200-SXM", 8, 8,
     {{"mixtral-8x7b", PFI_JOB_PRETRAIN, 8, 8, 1, 1, 8, 4096, 128, 1}}},
    {"h200x8-tp", "8x H200, Llama-3 70B LoRA fine-tuning (TP8)", "H200-SXM", 8, 8,
     {{"llama3-70b", PFI_JOB_LORA, 8, 1, 8, 1, 1, 4096, 32, 1}}},
    {"h200x8-mixed", "8x H200 shared by three jobs: Llama-3 8B (4 GPUs), Qwen2.5 7B "
     "fine-tuning (2), OLMoE LoRA (2)", "H200-SXM", 8, 8,
     {{"llama3-8b", PFI_JOB_PRETRAIN, 4, 4, 1, 1, 1, 8192, 32, 1},
      {"qwen2.5-7b", PFI_JOB_FINETUNE, 2, 2, 1, 1, 1, 4096, 32, 2},
      {"olmoe-1b-7b", PFI_JOB_LORA, 2, 2, 1, 1, 2, 4096, 64, 4}}},
    {"h100x8-dense", "8x H100, Llama-3 8B pretraining (DP8)", "H100-SXM", 8, 8,
     {{"llama3-8b", PFI_JOB_PRETRAIN, 8, 8, 1, 1, 1, 8192, 64, 1}}},
    {"h200x32-llama70b", "32x H200 on 4 hosts, Llama-3 70B pretraining (TP8 PP4)", "H200-SXM",
     32, 8, {{"llama3-70b", PFI_JOB_PRETRAIN, 32, 1, 8, 4, 1, 8192, 256, 1}}},
    {"h200x1-small", "1x H200, Qwen2.5 1.5B fine-tuning: the smallest node", "H200-SXM", 1, 1,
     {{"qwen2.5-1.5b", PFI_JOB_FINETUNE, 1, 1, 1, 1, 1, 4096, 16, 4}}},
    {"h200x8-idle", "8x H200 with no job (idle telemetry)", "H200-SXM", 8, 8, {{0}}},
    {"a100x4-gpt3xl", "4x A100 PCIe 80GB, GPT-3 XL PP4 (the Perseus setup)", "A100-PCIE-80GB",
     4, 4, {{"gpt3-xl", PFI_JOB_PRETRAIN, 4, 1, 1, 4, 1, 1024, 1024, 8}}},
    {"a40x8-gpt3-2.7b", "8x A40 on 2 hosts, GPT-3 2.7B PP8 (the Perseus setup)", "A40", 8, 4,
     {{"gpt3-2.7b", PFI_JOB_PRETRAIN, 8, 1, 1, 8, 1, 1024, 1024, 4}}},
};
#define NPRESETS ((int)(sizeof presets / sizeof presets[0]))

int pfi_sim_preset_count(void) { return NPRESETS; }
const char *pfi_sim_preset_name(int i) { return i >= 0 && i < NPRESETS ? presets[i].name : NULL; }
const char *pfi_sim_preset_summary(int i)
{
    return i >= 0 && i < NPRESETS ? presets[i].summary : NULL;
}

int pfi_sim_preset(const char *name, pfi_node_config *c, pfi_err *err)
{
    const preset *p = NULL;
    for (int i = 0; i < NPRESETS; i++)
        if (strcasecmp(name, presets[i].name) == 0)
            p = &presets[i];
    if (!p) {
        char known[512] = "";
        size_t n = 0;
        for (int i = 0; i < NPRESETS; i++)
            n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "",
                                  presets[i].name);
        return pfi_err_set(err, PFI_ENOENT, "unknown simulator preset '%s' (presets: %s)", name,
                           known);
    }
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", p->name);
    snprintf(c->gpu.name, sizeof c->gpu.name, "%s", p->gpu);
    c->n_gpus = p->gpus;
    c->gpus_per_host = p->gph;
    c->net_gbs = p->gpu[0] == 'A' ? 3 : 50;
    c->seed = 1;
    c->variation = 0.02;
    c->noise_w = p->gpu[0] == 'H' ? 4 : 2;
    c->ambient_c = 30;
    int first = 0;
    for (int j = 0; j < 4 && p->jobs[j].model; j++) {
        pfi_job_config *job = &c->jobs[c->n_jobs++];
        int rc = pfi_sim_job_from_model(job, p->jobs[j].model, err);
        if (rc != PFI_OK)
            return rc;
        snprintf(job->name, sizeof job->name, "%s", c->n_jobs == 1 ? "train" : p->jobs[j].model);
        job->kind = p->jobs[j].kind;
        job->dp = p->jobs[j].dp;
        job->tp = p->jobs[j].tp;
        job->pp = p->jobs[j].pp;
        job->ep = p->jobs[j].ep;
        job->seq_len = p->jobs[j].seq;
        job->global_batch = p->jobs[j].gbs;
        job->micro_batch = p->jobs[j].mb;
        job->first_gpu = first;
        first += p->jobs[j].gpus;
    }
    return pfi_sim_config_check(c, err);
}

/* ---------------------------------------------------------------- JSON */

static int get_num(json_t *v, const char *what, const char *key, double lo, double hi,
                   double *out, pfi_err *err)
{
    if (!json_is_number(v))
        return pfi_err_set(err, PFI_EINVAL, "%s: '%s' must be a number", what, key);
    double x = json_number_value(v);
    if (!(x >= lo && x <= hi))
        return pfi_err_set(err, PFI_EINVAL, "%s: '%s' = %g is outside %g..%g", what, key, x, lo,
                           hi);
    *out = x;
    return PFI_OK;
}

static int get_int(json_t *v, const char *what, const char *key, int lo, int hi, int *out,
                   pfi_err *err)
{
    double x = 0;
    int rc = get_num(v, what, key, lo, hi, &x, err);
    if (rc != PFI_OK)
        return rc;
    if (x != floor(x))
        return pfi_err_set(err, PFI_EINVAL, "%s: '%s' must be a whole number", what, key);
    *out = (int)x;
    return PFI_OK;
}

static int get_str(json_t *v, const char *what, const char *key, char *out, size_t cap,
                   pfi_err *err)
{
    if (!json_is_string(v))
        return pfi_err_set(err, PFI_EINVAL, "%s: '%s' must be a string", what, key);
    if (strlen(json_string_value(v)) >= cap)
        return pfi_err_set(err, PFI_EINVAL, "%s: '%s' is too long", what, key);
    snprintf(out, cap, "%s", json_string_value(v));
    return PFI_OK;
}

static int pick(const char *const *names, int n, json_t *v, const char *what, const char *key,
                int *out, pfi_err *err)
{
    if (json_is_string(v))
        for (int i = 0; i < n; i++)
            if (strcasecmp(json_string_value(v), names[i]) == 0) {
                *out = i;
                return PFI_OK;
            }
    return pfi_err_set(err, PFI_EINVAL, "%s: '%s' must be one of %s, %s, %s%s%s", what, key,
                       names[0], names[1], names[2], n > 3 ? ", " : "", n > 3 ? names[3] : "");
}

#define INT_FIELD(k, dst, lo, hi) \
    else if (strcmp(key, k) == 0) rc = get_int(v, what, key, lo, hi, &(dst), err)
#define NUM_FIELD(k, dst, lo, hi) \
    else if (strcmp(key, k) == 0) rc = get_num(v, what, key, lo, hi, &(dst), err)

static int parse_job(json_t *o, int idx, pfi_job_config *j, pfi_err *err)
{
    char what[96];
    snprintf(what, sizeof what, "job %d", idx);
    if (!json_is_object(o))
        return pfi_err_set(err, PFI_EINVAL, "%s must be an object", what);
    json_t *name = json_object_get(o, "name");
    if (json_is_string(name))
        snprintf(what, sizeof what, "job '%.60s'", json_string_value(name));
    /* The model card first, so explicit fields override it whatever the key order. */
    json_t *model = json_object_get(o, "model");
    if (model) {
        int rc = get_str(model, what, "model", j->model, sizeof j->model, err);
        if (rc == PFI_OK && json_object_get(o, "layers") == NULL)
            rc = pfi_sim_job_from_model(j, j->model, err);
        if (rc != PFI_OK) {
            /* An unknown model is a mistake in the file: a usage error, not a missing file. */
            pfi_err_prefix(err, "%s: ", what);
            if (err)
                err->code = PFI_EINVAL;
            return PFI_EINVAL;
        }
    }
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        int rc = PFI_OK, moe = 0;
        if (strcmp(key, "model") == 0)
            continue;
        else if (strcmp(key, "name") == 0)
            rc = get_str(v, what, key, j->name, sizeof j->name, err);
        else if (strcmp(key, "family") == 0)
            rc = get_str(v, what, key, j->family, sizeof j->family, err);
        NUM_FIELD("params_b", j->params_b, 1e-3, 1e5);
        INT_FIELD("layers", j->layers, 1, 1000);
        INT_FIELD("hidden", j->hidden, 16, 1 << 17);
        INT_FIELD("ffn_hidden", j->ffn_hidden, 16, 1 << 19);
        INT_FIELD("heads", j->heads, 1, 1024);
        INT_FIELD("vocab", j->vocab, 2, 1 << 22);
        INT_FIELD("experts", j->experts, 2, 1024);
        INT_FIELD("top_k", j->top_k, 1, 1024);
        INT_FIELD("seq_len", j->seq_len, 1, 1 << 20);
        INT_FIELD("global_batch", j->global_batch, 1, 1 << 24);
        INT_FIELD("micro_batch", j->micro_batch, 1, 1 << 16);
        INT_FIELD("dp", j->dp, 1, PFI_MAX_GPUS);
        INT_FIELD("tp", j->tp, 1, PFI_MAX_GPUS);
        INT_FIELD("pp", j->pp, 1, PFI_MAX_GPUS);
        INT_FIELD("ep", j->ep, 1, PFI_MAX_GPUS);
        INT_FIELD("gpus", j->n_gpus, 1, PFI_MAX_GPUS);
        INT_FIELD("first_gpu", j->first_gpu, 0, PFI_MAX_GPUS - 1);
        NUM_FIELD("lora_rank", j->lora_rank, 1, 65536);
        NUM_FIELD("act_compute", j->act_compute, 0.05, 2);
        NUM_FIELD("host_ms", j->host_ms, 1e-6, 1000);
        NUM_FIELD("input_stall", j->input_stall, 0, 10);
        else if (strcmp(key, "stage_layers") == 0) {
            if (!json_is_array(v) || json_array_size(v) > PFI_SIM_MAX_STAGES)
                rc = pfi_err_set(err, PFI_EINVAL,
                                 "%s: 'stage_layers' must be an array of at most %d numbers",
                                 what, PFI_SIM_MAX_STAGES);
            for (size_t i = 0; rc == PFI_OK && i < json_array_size(v); i++)
                rc = get_num(json_array_get(v, i), what, key, 0, 1000, &j->stage_layers[i], err);
        }
        else if (strcmp(key, "moe") == 0 || strcmp(key, "encdec") == 0) {
            if (!json_is_boolean(v))
                rc = pfi_err_set(err, PFI_EINVAL, "%s: '%s' must be true or false", what, key);
            moe = json_is_true(v);
            if (key[0] == 'm')
                j->moe = moe;
            else
                j->encdec = moe;
        } else if (strcmp(key, "attention") == 0) {
            const char *a = json_is_string(v) ? json_string_value(v) : "";
            if (strcasecmp(a, "fused") == 0 || strcasecmp(a, "eager") == 0)
                j->attn_eager = strcasecmp(a, "eager") == 0;
            else
                rc = pfi_err_set(err, PFI_EINVAL, "%s: 'attention' must be fused or eager", what);
        } else if (strcmp(key, "kind") == 0)
            rc = pick(kind_names, 3, v, what, key, &j->kind, err);
        else if (strcmp(key, "precision") == 0)
            rc = pick(prec_names, 4, v, what, key, &j->precision, err);
        else
            rc = pfi_err_set(err, PFI_EINVAL, "%s: unknown key '%s'", what, key);
        if (rc != PFI_OK)
            return rc;
    }
    return PFI_OK;
}

static int parse_gpu(json_t *spec, pfi_node_config *c, pfi_err *err)
{
    json_t *type = json_is_object(spec) ? json_object_get(spec, "type") : spec;
    if (!json_is_string(type))
        return pfi_err_set(err, PFI_EINVAL, "'gpu' must be a GPU type or {\"type\": ...}");
    const pfi_gpu_model *m = pfi_gpu_model_find(json_string_value(type));
    if (!m) {
        char known[256] = "";
        size_t n = 0;
        for (int i = 0; i < pfi_gpu_model_count(); i++)
            n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "",
                                  pfi_gpu_model_at(i)->name);
        return pfi_err_set(err, PFI_EINVAL, "unknown GPU type '%s' (known: %s)",
                           json_string_value(type), known);
    }
    c->gpu = *m;
    if (!json_is_object(spec))
        return PFI_OK;
    /* Overrides of the modelled constants (e.g. the ones `pfi sim validate` fits). */
    const char *key;
    json_t *v;
    pfi_gpu_model *g = &c->gpu;
    json_object_foreach(spec, key, v)
    {
        int rc = PFI_OK;
        const char *what = "gpu";
        if (strcmp(key, "type") == 0)
            continue;
        NUM_FIELD("idle_w", g->idle_w, 0, 2000);
        NUM_FIELD("busy_static_w", g->busy_static_w, 0, 2000);
        NUM_FIELD("hbm_w", g->hbm_w, 0, 2000);
        NUM_FIELD("dyn_w", g->dyn_w, 1, 5000);
        NUM_FIELD("v_floor", g->v_floor, 0.1, 1);
        NUM_FIELD("f_knee", g->f_knee, 0, 0.99);
        NUM_FIELD("v_gamma", g->v_gamma, 0.2, 5);
        NUM_FIELD("gemm_eff", g->gemm_eff, 0.005, 1);
        NUM_FIELD("mem_eff", g->mem_eff, 0.005, 1);
        /* 0: memory kernels never slow with the clock; 1: below f_max they do. */
        NUM_FIELD("sat_frac", g->sat_frac, 0, 1);
        NUM_FIELD("tau_s", g->tau_s, 1e-3, 60);
        NUM_FIELD("min_limit_w", g->min_limit_w, 1, 5000);
        NUM_FIELD("max_limit_w", g->max_limit_w, 1, 5000);
        NUM_FIELD("default_limit_w", g->default_limit_w, 1, 5000);
        else rc = pfi_err_set(err, PFI_EINVAL, "gpu: unknown key '%s'", key);
        if (rc != PFI_OK)
            return rc;
    }
    return PFI_OK;
}

int pfi_sim_config_parse(const char *text, pfi_node_config *out, pfi_err *err)
{
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    if (!root)
        return pfi_err_set(err, PFI_EINVAL, "malformed JSON at line %d column %d: %s", je.line,
                           je.column, je.text);
    pfi_node_config c;
    memset(&c, 0, sizeof c);
    c.seed = 1;
    c.variation = 0.02;
    c.noise_w = 3;
    int rc = PFI_OK;
    if (!json_is_object(root)) {
        rc = pfi_err_set(err, PFI_EINVAL, "the configuration must be a JSON object");
        goto out;
    }
    json_t *gpu = json_object_get(root, "gpu");
    if (!gpu) {
        rc = pfi_err_set(err, PFI_EINVAL, "the configuration has no 'gpu' (e.g. \"H200-SXM\")");
        goto out;
    }
    if ((rc = parse_gpu(gpu, &c, err)) != PFI_OK)
        goto out;
    const char *key;
    json_t *v;
    const char *what = "node";
    json_object_foreach(root, key, v)
    {
        double seed = 0;
        if (strcmp(key, "gpu") == 0)
            continue;
        else if (strcmp(key, "name") == 0)
            rc = get_str(v, what, key, c.name, sizeof c.name, err);
        INT_FIELD("gpus", c.n_gpus, 1, PFI_MAX_GPUS);
        INT_FIELD("gpus_per_host", c.gpus_per_host, 1, PFI_MAX_GPUS);
        NUM_FIELD("net_gbs", c.net_gbs, 0.01, 10000);
        NUM_FIELD("net_jitter", c.net_jitter, 0.01, 1);
        NUM_FIELD("variation", c.variation, 0, 0.2);
        NUM_FIELD("noise_w", c.noise_w, 0, 100);
        NUM_FIELD("ambient_c", c.ambient_c, 1, 80);
        else if (strcmp(key, "pace") == 0) {
            char a[16];
            rc = get_str(v, what, key, a, sizeof a, err);
            if (rc == PFI_OK && (strcasecmp(a, "max") == 0 || strcasecmp(a, "expected") == 0))
                c.pace = strcasecmp(a, "expected") == 0 ? PFI_SIM_PACE_EXPECTED : PFI_SIM_PACE_MAX;
            else if (rc == PFI_OK)
                rc = pfi_err_set(err, PFI_EINVAL, "%s: 'pace' must be max or expected", what);
        }
        else if (strcmp(key, "seed") == 0) {
            rc = get_num(v, what, key, 0, 9007199254740992.0, &seed, err);
            c.seed = (uint64_t)seed;
        } else if (strcmp(key, "limits_w") == 0) {
            if (json_is_number(v)) {
                for (int i = 0; i < PFI_MAX_GPUS; i++)
                    c.initial_limit_w[i] = json_number_value(v);
            } else if (json_is_array(v) && json_array_size(v) <= PFI_MAX_GPUS) {
                for (size_t i = 0; i < json_array_size(v) && rc == PFI_OK; i++)
                    rc = get_num(json_array_get(v, i), what, key, 1, 5000,
                                 &c.initial_limit_w[i], err);
            } else {
                rc = pfi_err_set(err, PFI_EINVAL, "'limits_w' must be a number or an array");
            }
        } else if (strcmp(key, "jobs") == 0) {
            if (!json_is_array(v) || json_array_size(v) > PFI_SIM_MAX_JOBS) {
                rc = pfi_err_set(err, PFI_EINVAL, "'jobs' must be an array of at most %d jobs",
                                 PFI_SIM_MAX_JOBS);
            } else {
                c.n_jobs = (int)json_array_size(v);
                for (int i = 0; i < c.n_jobs && rc == PFI_OK; i++)
                    rc = parse_job(json_array_get(v, i), i, &c.jobs[i], err);
            }
        } else
            rc = pfi_err_set(err, PFI_EINVAL, "unknown key '%s' in the node configuration", key);
        if (rc != PFI_OK)
            goto out;
    }
    if (c.n_gpus == 0) {
        rc = pfi_err_set(err, PFI_EINVAL, "the configuration has no 'gpus' (GPU count)");
        goto out;
    }
    /* Limits given as one number apply to every GPU that exists. */
    for (int i = c.n_gpus; i < PFI_MAX_GPUS; i++)
        c.initial_limit_w[i] = 0;
    rc = pfi_sim_config_check(&c, err);
    if (rc == PFI_OK)
        *out = c;
out:
    json_decref(root);
    return rc;
}

int pfi_sim_config_load(const char *arg, pfi_node_config *out, pfi_err *err)
{
    if (!arg || !*arg)
        arg = PFI_SIM_DEFAULT_PRESET;
    if (!strchr(arg, '/') && !strstr(arg, ".json")) {
        int rc = pfi_sim_preset(arg, out, err);
        if (rc != PFI_ENOENT)
            return rc;
        FILE *probe = fopen(arg, "r");
        if (!probe) { /* neither a preset nor a file: a bad value (exit 2), as a bad --cap */
            if (err)
                err->code = PFI_EINVAL;
            return PFI_EINVAL;
        }
        fclose(probe);
    }
    int dir_rc = pfi_input_not_dir(arg, err);
    if (dir_rc != PFI_OK)
        return dir_rc;
    FILE *f = fopen(arg, "r");
    if (!f)
        return pfi_err_set(err, PFI_ENOENT, "cannot open simulator config '%s': %s", arg,
                           strerror(errno));
    char *buf = pfi_read_all(f, 1u << 24, NULL);
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        return pfi_err_set(err, bad ? PFI_EIO : PFI_ENOMEM, "cannot read '%s'", arg);
    }
    int rc = pfi_sim_config_parse(buf, out, err);
    free(buf);
    if (rc != PFI_OK)
        pfi_err_prefix(err, "%s: ", arg);
    return rc;
}

char *pfi_sim_config_dump(const pfi_node_config *c)
{
    const pfi_gpu_model *g = &c->gpu;
    json_t *gpu = json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}",
                            "type", g->name, "idle_w", g->idle_w, "busy_static_w",
                            g->busy_static_w, "hbm_w", g->hbm_w, "dyn_w", g->dyn_w, "v_floor",
                            g->v_floor, "f_knee", g->f_knee, "v_gamma", g->v_gamma, "gemm_eff",
                            g->gemm_eff, "mem_eff", g->mem_eff, "sat_frac", g->sat_frac,
                            "tau_s", g->tau_s);
    json_t *limits = json_array();
    for (int i = 0; i < c->n_gpus; i++)
        json_array_append_new(limits, json_real(c->initial_limit_w[i] > 0 ? c->initial_limit_w[i]
                                                                          : g->default_limit_w));
    json_t *jobs = json_array();
    for (int i = 0; i < c->n_jobs; i++) {
        const pfi_job_config *j = &c->jobs[i];
        json_t *o = json_pack(
            "{s:s, s:s, s:s, s:f, s:i, s:i, s:i, s:i, s:i, s:b, s:b, s:i, s:i, s:i, s:i, s:i, "
            "s:i, s:i, s:i, s:i, s:s, s:s, s:f, s:f}",
            "name", j->name, "model", j->model, "family", j->family, "params_b", j->params_b,
            "layers", j->layers, "hidden", j->hidden, "ffn_hidden", j->ffn_hidden, "heads",
            j->heads, "vocab", j->vocab, "moe", j->moe, "encdec", j->encdec, "seq_len",
            j->seq_len, "global_batch", j->global_batch, "micro_batch", j->micro_batch, "dp",
            j->dp, "tp", j->tp, "pp", j->pp, "ep", j->ep, "gpus", j->n_gpus, "first_gpu",
            j->first_gpu, "kind", kind_names[j->kind], "precision", prec_names[j->precision],
            "act_compute", j->act_compute, "host_ms", j->host_ms);
        if (j->moe) {
            json_object_set_new(o, "experts", json_integer(j->experts));
            json_object_set_new(o, "top_k", json_integer(j->top_k));
        }
        if (j->kind == PFI_JOB_LORA && j->lora_rank > 0)
            json_object_set_new(o, "lora_rank", json_real(j->lora_rank));
        if (j->input_stall > 0)
            json_object_set_new(o, "input_stall", json_real(j->input_stall));
        if (j->attn_eager)
            json_object_set_new(o, "attention", json_string("eager"));
        int split = 0;
        for (int st = 0; st < j->pp; st++)
            split |= j->stage_layers[st] > 0;
        if (split) {
            json_t *a = json_array();
            for (int st = 0; st < j->pp; st++)
                json_array_append_new(a, json_real(j->stage_layers[st]));
            json_object_set_new(o, "stage_layers", a);
        }
        json_array_append_new(jobs, o);
    }
    json_t *root = json_pack("{s:s, s:o, s:i, s:i, s:f, s:f, s:f, s:f, s:o, s:o}", "name",
                             c->name, "gpu", gpu, "gpus", c->n_gpus, "gpus_per_host",
                             c->gpus_per_host, "net_gbs", c->net_gbs, "variation", c->variation,
                             "noise_w", c->noise_w, "ambient_c", c->ambient_c, "limits_w", limits,
                             "jobs", jobs);
    json_object_set_new(root, "seed", json_integer((json_int_t)c->seed));
    json_object_set_new(root, "net_jitter", json_real(c->net_jitter));
    /* Only when not the default: configurations written before the setting read the same. */
    if (c->pace == PFI_SIM_PACE_EXPECTED)
        json_object_set_new(root, "pace", json_string("expected"));
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(root);
    return s;
}
