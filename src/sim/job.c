/* SPDX-License-Identifier: Apache-2.0 */
/* job.c: the training-job cost model.  From a job's configuration (architecture, parallelism,
 * batch, kind, precision) and the node it runs on, the standard cost formulas give one GPU's
 * step split into compute, memory-bound and communication time (pfi_sim_work). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sim/physics.h"

/* Public model cards (parameters, layers, hidden, FFN, heads, vocab, experts).  bert-huge is
 * the Perseus artifact's BERT of 24 layers x 2048 (assumed from its 26-unit partition). */
typedef struct model_card {
    const char *name, *family;
    double params_b;
    int layers, hidden, ffn, heads, vocab, experts, top_k, encdec;
} model_card;

static const model_card cards[] = {
    {"gpt3-xl", "gpt", 1.32, 24, 2048, 8192, 16, 50257, 0, 0, 0},
    {"gpt3-2.7b", "gpt", 2.65, 32, 2560, 10240, 32, 50257, 0, 0, 0},
    {"gpt3-6.7b", "gpt", 6.66, 32, 4096, 16384, 32, 50257, 0, 0, 0},
    {"gpt3-13b", "gpt", 12.85, 40, 5140, 20560, 40, 50257, 0, 0, 0},
    {"bloom-3b", "bloom", 3.0, 30, 2560, 10240, 32, 250880, 0, 0, 0},
    {"bloom-7b1", "bloom", 7.07, 30, 4096, 16384, 32, 250880, 0, 0, 0},
    {"bert-huge-uncased", "bert", 1.27, 24, 2048, 8192, 32, 30522, 0, 0, 0},
    {"bert-large-uncased", "bert", 0.34, 24, 1024, 4096, 16, 30522, 0, 0, 0},
    {"t5-3b", "t5", 2.85, 48, 1024, 16384, 32, 32128, 0, 0, 1},
    {"llama3.2-1b", "llama", 1.24, 16, 2048, 8192, 32, 128256, 0, 0, 0},
    {"llama3.2-3b", "llama", 3.21, 28, 3072, 8192, 24, 128256, 0, 0, 0},
    {"llama3-8b", "llama", 8.03, 32, 4096, 14336, 32, 128256, 0, 0, 0},
    {"llama2-7b", "llama", 6.74, 32, 4096, 11008, 32, 32000, 0, 0, 0},
    {"llama2-13b", "llama", 13.0, 40, 5120, 13824, 40, 32000, 0, 0, 0},
    {"llama3-70b", "llama", 70.6, 80, 8192, 28672, 64, 128256, 0, 0, 0},
    {"mistral-7b", "mistral", 7.24, 32, 4096, 14336, 32, 32000, 0, 0, 0},
    {"qwen2.5-0.5b", "qwen", 0.49, 24, 896, 4864, 14, 151936, 0, 0, 0},
    {"qwen2.5-1.5b", "qwen", 1.54, 28, 1536, 8960, 12, 151936, 0, 0, 0},
    {"qwen2.5-7b", "qwen", 7.62, 28, 3584, 18944, 28, 152064, 0, 0, 0},
    {"qwen2.5-14b", "qwen", 14.7, 48, 5120, 13824, 40, 152064, 0, 0, 0},
    {"qwen2.5-32b", "qwen", 32.5, 64, 5120, 27648, 40, 152064, 0, 0, 0},
    {"mixtral-8x7b", "mixtral", 46.7, 32, 4096, 14336, 32, 32000, 8, 2, 0},
    {"mixtral-8x22b", "mixtral", 141.0, 56, 6144, 16384, 48, 32768, 8, 2, 0},
    {"olmoe-1b-7b", "olmoe", 6.92, 16, 2048, 1024, 16, 50304, 64, 8, 0},
    {"qwen1.5-moe-a2.7b", "qwen-moe", 14.3, 24, 2048, 1408, 16, 151936, 60, 4, 0},
    {"deepseek-moe-16b", "deepseek-moe", 16.4, 28, 2048, 1408, 16, 102400, 64, 6, 0},
};
#define NCARDS ((int)(sizeof cards / sizeof cards[0]))

int pfi_sim_job_from_model(pfi_job_config *job, const char *model, pfi_err *err)
{
    for (int i = 0; i < NCARDS; i++) {
        const model_card *c = &cards[i];
        if (strcasecmp(model, c->name) != 0)
            continue;
        snprintf(job->model, sizeof job->model, "%s", c->name);
        if (!job->family[0])
            snprintf(job->family, sizeof job->family, "%s", c->family);
        job->params_b = c->params_b;
        job->layers = c->layers;
        job->hidden = c->hidden;
        job->ffn_hidden = c->ffn;
        job->heads = c->heads;
        job->vocab = c->vocab;
        job->moe = c->experts > 0;
        job->experts = c->experts;
        job->top_k = c->top_k;
        job->encdec = c->encdec;
        return PFI_OK;
    }
    char known[1024] = "";
    size_t n = 0;
    for (int i = 0; i < NCARDS && n + 40 < sizeof known; i++)
        n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "", cards[i].name);
    return pfi_err_set(err, PFI_ENOENT, "unknown model '%s' (known: %s)", model, known);
}

/* Family constants: SM switching activity of the family's GEMM phases and host time per
 * microbatch per layer (kernel launches the GPU can hide).  Modelled, not fitted: the measured
 * sweeps show no family effect that holds across GPU types (docs/simulator.md). */
typedef struct family_consts { const char *family; double act_compute, host_ms; } family_consts;
static const family_consts families[] = {
    {"gpt", 0.95, 0.20},     {"llama", 0.95, 0.20},  {"mistral", 0.95, 0.20},
    {"qwen", 0.95, 0.20},    {"bloom", 0.95, 0.20},  {"bert", 0.95, 0.20},
    {"t5", 0.95, 0.20},      {"mixtral", 0.90, 0.30}, {"olmoe", 0.85, 0.35},
    {"qwen-moe", 0.85, 0.35}, {"deepseek-moe", 0.85, 0.35},
};

void pfi_sim_job_defaults(pfi_job_config *job)
{
    double act = 0.95, host = 0.20;
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (strcasecmp(job->family, families[i].family) == 0) {
            act = families[i].act_compute;
            host = families[i].host_ms;
        }
    if (job->act_compute <= 0)
        job->act_compute = act;
    if (job->host_ms <= 0)
        job->host_ms = host;
}

/* Ring collectives move 2(k-1)/k of the buffer per GPU (all-reduce), (k-1)/k for all-to-all. */
static double ring(int k) { return k > 1 ? 2.0 * (k - 1) / k : 0.0; }

void pfi_sim_job_stage_layers(const pfi_job_config *j, double *out)
{
    int pp = j->pp > 0 ? j->pp : 1;
    int given = 0;
    for (int s = 0; s < pp && s < PFI_SIM_MAX_STAGES; s++)
        given |= j->stage_layers[s] > 0;
    for (int s = 0; s < pp && s < PFI_SIM_MAX_STAGES; s++)
        out[s] = given ? j->stage_layers[s]
                       : floor((double)(s + 1) * j->layers / pp) - floor((double)s * j->layers / pp);
}

/* Memory traffic of eager attention per score element and layer, forward and backward (no
 * activation recomputation: the Perseus stage profiles' backward takes 1.9x the forward,
 * not the ~3x a recomputed forward would add). */
#define EAGER_ATTN_BYTES 68.0

/* Fraction of GEMM peak a GEMM of geometric width x (per TP rank) reaches on microbatches of
 * tok tokens: small GEMMs fill fewer tiles. */
static double gemm_size_eff(double x, double tok) { return (x / (x + 800)) * (tok / (tok + 128)); }

/* What a job's stages share: everything of the cost model that does not depend on the stage,
 * computed once for all of a node's stages (pfi_sim_job_works) by the very expressions the
 * stage's work uses. */
typedef struct job_common {
    double lay[PFI_SIM_MAX_STAGES];
    double S, h, L, mb, N, m, tokens, vh, n_act, expert_params, fl_layer, fl_head, tok_gpu, peak;
    double ffn_w, eff_l, eff_h, pow_l, pow_h; /* pow_*: eff_*^1.5 */
    int n;
} job_common;

static int job_common_of(const pfi_node_config *cfg, const pfi_job_config *j, job_common *c,
                         pfi_err *err)
{
    const pfi_gpu_model *g = &cfg->gpu;
    int n = j->dp * j->tp * j->pp;
    if (n <= 0 || j->seq_len <= 0 || j->global_batch <= 0 || j->micro_batch <= 0 ||
        j->layers <= 0 || j->hidden <= 0 || j->params_b <= 0 || j->pp > PFI_SIM_MAX_STAGES)
        return pfi_err_set(err, PFI_EINVAL, "job '%s': incomplete configuration", j->name);
    c->n = n;
    pfi_sim_job_stage_layers(j, c->lay);
    double S = j->seq_len, h = j->hidden, L = j->layers, mb = j->micro_batch;
    double N = j->params_b * 1e9;
    double m = (double)j->global_batch / (j->dp * mb); /* microbatches per pipeline per step */
    if (m < 1)
        m = 1;
    double tokens = (double)j->global_batch * S;
    double vh = (double)j->vocab * h; /* the output head (tied or not): one V x h matrix */

    /* Active parameters: a token meets only top_k of the experts. */
    double n_act = N, expert_params = 0;
    if (j->moe && j->experts > 0) {
        double ffn = j->ffn_hidden > 0 ? j->ffn_hidden : 4 * h;
        double dense = L * 4 * h * h + 2.0 * j->vocab * h;
        expert_params = L * j->experts * 3 * h * ffn;
        double share = expert_params / (dense + expert_params);
        expert_params = N * share;
        n_act = N * (1 - share) + expert_params * j->top_k / j->experts;
    }
    /* Training FLOPs per token: 6 per weight (2 forward, 4 backward) plus attention scores and
     * values, 6*L*h*S with a causal mask; LoRA skips weight gradients (4 per weight).  The
     * output head's V x h GEMM runs on the last stage; the other weights are the layers' (an
     * untied input embedding, a lookup, is counted with them: a small overcount). */
    double per_w = j->kind == PFI_JOB_LORA ? 4 : 6;
    double head_w = vh < 0.5 * n_act ? vh : 0.5 * n_act;
    c->fl_layer = (per_w * (n_act - head_w) + 6 * L * h * S) / L;
    c->fl_head = per_w * head_w;
    c->tok_gpu = tokens / (j->dp * j->tp); /* tokens through one GPU of a stage, per TP share */
    double peak = g->bf16_tflops * 1e12;
    if (j->precision == PFI_PREC_FP8 && g->name[0] == 'H')
        peak *= 2;
    else if (j->precision == PFI_PREC_FP32)
        peak *= 0.5; /* TF32 tensor cores */
    /* A layer's typical GEMM is h x ffn (sharded by TP): its geometric size sets the tile
     * occupancy; T5's narrow d_model with a wide FFN still makes large GEMMs.  The head is a
     * wide h x V GEMM. */
    double ffn_w = j->ffn_hidden > 0 ? j->ffn_hidden : 4 * h;
    double tok = mb * S;
    c->eff_l = gemm_size_eff(sqrt(h * ffn_w) / j->tp, tok);
    c->eff_h = gemm_size_eff(sqrt(vh) / j->tp, tok);
    /* Small GEMMs also keep fewer of the tensor cores switching: less power per cycle. */
    c->pow_l = pow(c->eff_l, 1.5);
    c->pow_h = pow(c->eff_h, 1.5);
    c->S = S;
    c->h = h;
    c->L = L;
    c->mb = mb;
    c->N = N;
    c->m = m;
    c->tokens = tokens;
    c->vh = vh;
    c->n_act = n_act;
    c->expert_params = expert_params;
    c->peak = peak;
    c->ffn_w = ffn_w;
    return PFI_OK;
}

/* The work of stage `stage` from what the stages share. */
static void stage_work(const pfi_node_config *cfg, const pfi_job_config *j, const job_common *c,
                       int stage, pfi_sim_work *w)
{
    memset(w, 0, sizeof *w);
    const pfi_gpu_model *g = &cfg->gpu;
    int n = c->n;
    double l_st = c->lay[stage];
    int first = stage == 0, last = stage == j->pp - 1;
    double S = c->S, h = c->h, L = c->L, mb = c->mb, N = c->N, m = c->m, tokens = c->tokens;
    double vh = c->vh, expert_params = c->expert_params;
    double fl_layer = c->fl_layer, fl_head = c->fl_head, tok_gpu = c->tok_gpu, peak = c->peak;
    double ffn_w = c->ffn_w, eff_l = c->eff_l, eff_h = c->eff_h;
    w->microbatches = m;
    w->tokens_per_step = tokens;
    double t_l = tok_gpu * l_st * fl_layer / (peak * g->gemm_eff * eff_l);
    double t_h = last ? tok_gpu * fl_head / (peak * g->gemm_eff * eff_h) : 0;
    w->t_comp = t_l + t_h;
    if (w->t_comp > 0) {
        w->tensor_comp = 0.92 * (t_l * eff_l + t_h * eff_h) / w->t_comp;
        w->act_comp = j->act_compute * (0.15 + 0.85 * (t_l * c->pow_l + t_h * c->pow_h) /
                                                   w->t_comp);
    } else {
        w->tensor_comp = 0.92 * eff_l;
        w->act_comp = j->act_compute * (0.15 + 0.85 * c->pow_l);
    }
    /* Memory-bound kernels (norms, activations, residuals, dropout, rotary, softmax outside
     * fused attention) stream activations: ~200 h + 12 ffn bytes per token per layer forward
     * and backward, split by sequence parallelism.  The last stage's loss reads and writes the
     * logits (~12 bytes per vocabulary entry per token); the first stage's embedding backward
     * builds a dense V x h gradient and adds it to the accumulated one in every microbatch
     * (~12 bytes per entry).  The optimizer step (Adam in mixed precision, ~18 bytes per
     * trained parameter, sharded over DP) and gradient traffic.  Small elementwise kernels
     * reach only part of the bandwidth (gpu.mem_eff). */
    double ffn = ffn_w;
    double ffn_act = j->moe && j->experts > 0 ? ffn * j->top_k : ffn;
    double tok_local = tokens / j->dp;
    /* Weights of the stage: its layers, the embedding (first) and the head (last; with
     * pp > 1 a tied head is a second copy). */
    double p_layer = (N - expert_params - vh > 0 ? N - expert_params - vh : 0) / L;
    double p_extra = (first || last ? vh : 0) + (last && j->pp > 1 ? vh : 0);
    double p_local = (l_st * p_layer + p_extra) / j->tp +
                     l_st * expert_params / L / (j->tp * (j->ep > 0 ? j->ep : 1));
    double act_bytes = tok_local * l_st * (200 * h + 12 * ffn_act) / j->tp;
    /* Eager attention streams the heads x S x S scores through memory: ~29 bytes per score
     * forward (bf16 scores written; scale, mask: read and written; fp32 softmax; cast back;
     * dropout with its mask; read by the second GEMM) and ~39 backward (EAGER_ATTN_BYTES).
     * An encoder-decoder layer averages 1.5 attentions (the decoder's self and cross
     * attention). */
    if (j->attn_eager)
        act_bytes += tok_local * l_st * (double)j->heads / j->tp * S * EAGER_ATTN_BYTES *
                     (j->encdec ? 1.5 : 1.0);
    if (last)
        act_bytes += tok_local * (double)j->vocab * 12 / j->tp;
    if (first)
        act_bytes += m * vh / j->tp * 12;
    double train_params = p_local;
    if (j->kind == PFI_JOB_LORA) {
        double r = j->lora_rank > 0 ? j->lora_rank : 16;
        train_params = l_st * 4 * 2 * r * h / j->tp;
    }
    double opt_bytes = 18 * train_params / j->dp + 4 * train_params;
    w->t_mem = (act_bytes + opt_bytes) / (g->hbm_tbs * 1e12 * (g->mem_eff > 0 ? g->mem_eff : 0.6));

    /* Links: TP innermost, then DP, then PP (Megatron's order).  Within a host NVLink (or PCIe
     * peer-to-peer), across hosts the network. */
    int gph = cfg->gpus_per_host > 0 ? cfg->gpus_per_host : 8;
    double intra = (g->nvlink_gbs > 0 ? g->nvlink_gbs * 0.8 : g->pcie_gbs * 0.8) * 1e9;
    double inter = (cfg->net_gbs > 0 ? cfg->net_gbs : 25) * 1e9;
    double bw_tp = j->tp <= gph ? intra : inter;
    double bw_dp = j->tp * j->dp <= gph ? intra : inter;
    double lat_intra = 15e-6, lat_inter = 40e-6;
    double jit_net = cfg->net_jitter > 0 ? cfg->net_jitter : PFI_SIM_KERNEL_JITTER;
    double nvl = 0, pcie = 0;

    /* Tensor parallel: 4 all-reduces of the microbatch activations per layer (2 fwd, 2 bwd). */
    if (j->tp > 1) {
        double bytes = m * l_st * 4 * ring(j->tp) * mb * S * h * 2;
        w->t_comm += bytes / bw_tp + m * l_st * 4 * (j->tp <= gph ? lat_intra : lat_inter);
        if (j->tp <= gph && g->nvlink_gbs > 0) nvl += bytes; else pcie += bytes;
    }
    /* Expert parallel: dispatch and combine, forward and backward, of top_k copies. */
    if (j->moe && j->ep > 1) {
        double bytes = m * l_st * 4 * (j->ep - 1.0) / j->ep * mb * S * h * j->top_k * 2;
        double bw = j->ep * j->tp <= gph ? intra : inter;
        w->t_comm += bytes / bw + m * l_st * 4 * lat_intra;
        if (bw == intra && g->nvlink_gbs > 0) nvl += bytes; else pcie += bytes;
    }
    /* Data parallel: gradient all-reduce, bucketed and mostly overlapped with backward. */
    if (j->dp > 1) {
        double bytes = ring(j->dp) * 2 * train_params;
        double t = bytes / bw_dp + 20 * (bw_dp == intra ? lat_intra : lat_inter);
        w->t_comm += 0.3 * t;
        w->t_overlap += 0.7 * t;
        w->sd_overlap += 0.7 * t * (bw_dp == intra ? PFI_SIM_KERNEL_JITTER : jit_net);
        if (bw_dp == intra && g->nvlink_gbs > 0) nvl += bytes; else pcie += bytes;
    }
    /* Pipeline: each microbatch sends activations forward and gradients back; asynchronous
     * sends overlap the next microbatch.  An encoder-decoder pipeline (T5) also carries the
     * encoder output and the relative-position biases (heads x S x S per sample, encoder and
     * decoder) from stage to stage. */
    if (j->pp > 1) {
        double cross = 0;
        if (n > gph)
            cross = fmin(1.0, ((double)n / gph - 1.0) / (j->pp - 1.0));
        /* A pipeline moves at the pace of its slowest link. */
        double bw = cross > 0 ? inter : intra;
        double per_mb = mb * S * h * 2;
        if (j->encdec)
            per_mb = 2 * per_mb + 2 * mb * (double)j->heads * S * S * 2;
        double bytes = m * 2 * per_mb / j->tp;
        w->t_overlap += bytes / bw;
        w->sd_overlap += bytes / bw * (cross > 0 ? jit_net : PFI_SIM_KERNEL_JITTER);
        w->t_comm += m * 2 * (cross > 0 ? lat_inter : lat_intra);
        nvl += (g->nvlink_gbs > 0 ? (1 - cross) : 0) * bytes;
        pcie += (g->nvlink_gbs > 0 ? cross : 1) * bytes;
    }
    /* Host: kernel launches per layer and microbatch, hidden while the GPU is busier; the
     * Python loop per microbatch, the optimizer launch and data loading are not. */
    double t_launch = j->host_ms * 1e-3 * l_st * m * (j->encdec ? 1.5 : 1.0);
    w->t_overlap += t_launch;
    /* The parts' spreads add (a slow microbatch is slow throughout, not at random). */
    w->sd_overlap += PFI_SIM_KERNEL_JITTER * t_launch;
    w->t_host = 0.030 + 0.001 * m + tokens / n * 4 / (g->pcie_gbs * 1e9);
    /* A data loader or host that cannot keep up: the GPU waits, whatever its clock. */
    if (j->input_stall > 0)
        w->t_host += j->input_stall * (w->t_comp + w->t_mem + w->t_comm);

    w->act_mem = 0.45;
    w->act_comm = 0.12;
    w->dram_comp = 0.30;
    w->dram_mem = 0.85;
    w->dram_comm = 0.10;
    w->act_spin = 0.05;
    w->dram_spin = 0.01;
    w->nvlink_bytes = nvl;
    w->pcie_bytes = pcie + tokens / n * 4;

    /* Memory: bf16 weights and grads, sharded fp32 optimizer state, and the activations of
     * the microbatches in flight (1F1B: pp - stage of them on stage `stage`). */
    double act_mem = mb * S * h * l_st * 34 / j->tp * fmin(j->pp - stage, m);
    if (last)
        act_mem += mb * S * (double)j->vocab * 6 / j->tp; /* logits and their fp32 softmax */
    double bytes = 4 * p_local + 12 * train_params / j->dp + act_mem + 2.5 * 1024.0 * 1024 * 1024;
    double cap = g->mem_gib * 1024.0 * 1024 * 1024 * 0.97;
    w->mem_used_mib = fmin(bytes, cap) / (1024.0 * 1024);
}

int pfi_sim_job_work(const pfi_node_config *cfg, const pfi_job_config *j, int stage,
                     pfi_sim_work *w, pfi_err *err)
{
    memset(w, 0, sizeof *w);
    job_common c;
    int rc = job_common_of(cfg, j, &c, err);
    if (rc != PFI_OK)
        return rc;
    if (stage < 0 || stage >= j->pp)
        return pfi_err_set(err, PFI_EINVAL, "job '%s': no pipeline stage %d", j->name, stage);
    stage_work(cfg, j, &c, stage, w);
    return PFI_OK;
}

int pfi_sim_job_works(const pfi_node_config *cfg, const pfi_job_config *j, pfi_sim_work *w,
                      pfi_err *err)
{
    job_common c;
    int rc = job_common_of(cfg, j, &c, err);
    if (rc != PFI_OK)
        return rc;
    for (int st = 0; st < j->pp; st++)
        stage_work(cfg, j, &c, st, &w[st]);
    return PFI_OK;
}

void pfi_sim_job_meta(const pfi_job_config *j, pfi_job_meta *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->model, sizeof m->model, "%s", j->model);
    snprintf(m->family, sizeof m->family, "%s", j->family);
    m->moe = j->moe;
    m->finetune = j->kind != PFI_JOB_PRETRAIN;
    m->lora = j->kind == PFI_JOB_LORA;
    m->params_b = j->params_b;
    m->dp = j->dp;
    m->tp = j->tp;
    m->pp = j->pp;
    m->ep = j->ep;
    m->seq_len = j->seq_len;
    m->global_batch = j->global_batch;
}
