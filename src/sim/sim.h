/* SPDX-License-Identifier: Apache-2.0 */
/* sim.h: the embedded simulator of GPUs running training jobs.  Read this first.
 *
 * What it models (docs/simulator.md has the equations and where every constant comes from):
 *   - a GPU: idle power + HBM power (grows with DRAM traffic) + SM dynamic power
 *     ~ activity * V(f)^2 * f with a voltage floor at low clocks; the firmware picks the highest
 *     SM clock whose busy power fits under the enforced limit, and follows a new limit with a
 *     first-order response (time constant pfi_gpu_model.tau_s, 0.25 s on every model);
 *   - a training job: its step time from its configuration (6N FLOPs/token, activation and
 *     weight traffic, all-reduce / all-to-all / pipeline sends, pipeline bubble, host time),
 *     split into compute (scales with 1/f), memory and communication (do not), with overlap;
 *     a synchronous step runs at its slowest GPU;
 *   - a node: N GPUs of one type with seeded manufacturing variation, jobs placed on them, and
 *     the history of power limits.  Everything at time t is a deterministic function of the
 *     node config and the limit history, so two processes that share a state file (state below)
 *     compute the same telemetry and the same cumulative tokens.
 *
 * Time: the node takes explicit times (seconds since the jobs started).  Who owns the clock:
 *   - hw/backend_sim.c in virtual mode: a process-local clock that moves only when someone
 *     calls pfi_hw_sleep (a minutes-long sweep runs in milliseconds);
 *   - the shared state (pfi_sim_state): real time since the state's epoch times its speed-up.
 * To reach the node behind a pfi_backend, see hw/backend_sim.h.
 *
 * The layer uses core/ and the plain data types of core/sample.h (pfi_sample, pfi_device); it never
 * calls the hw layer.  All functions are thread-compatible (one node per thread, or lock). */
#ifndef PFI_SIM_SIM_H
#define PFI_SIM_SIM_H

#include <stdint.h>

#include "core/err.h"
#include "core/gpu.h"
#include "core/run.h"
#include "core/sample.h"

#define PFI_SIM_MAX_JOBS 16
#define PFI_SIM_NAME_MAX 64
#define PFI_SIM_MAX_STAGES 32      /* pipeline stages of one job (pp) */

/* ---------------------------------------------------------------- GPU models */

/* The models and their facts are core/gpu.h's catalogue (pfi_gpu_model, pfi_gpu_model_find). */

/* ---------------------------------------------------------------- jobs and nodes */

typedef enum pfi_job_kind { PFI_JOB_PRETRAIN = 0, PFI_JOB_FINETUNE = 1, PFI_JOB_LORA = 2 } pfi_job_kind;
typedef enum pfi_precision { PFI_PREC_BF16 = 0, PFI_PREC_FP16, PFI_PREC_FP8, PFI_PREC_FP32 } pfi_precision;

/* A training job.  Architecture fields left 0 are filled from the model catalogue by name
 * (pfi_sim_job_from_model) or derived (ffn = 4*hidden, heads = hidden/128, ...) by
 * pfi_sim_config_check. */
typedef struct pfi_job_config {
    char name[PFI_SIM_NAME_MAX];   /* id on the node, unique; default "job<i>" */
    char model[PFI_SIM_NAME_MAX];  /* "llama3-8b", "gpt3-6.7b", "mixtral-8x7b", ... */
    char family[32];               /* "gpt", "llama", "mixtral", "bert", "t5", "bloom", ... */
    double params_b;               /* total parameters, billions */
    int layers, hidden, ffn_hidden, heads, vocab;
    int moe, experts, top_k;       /* moe=1: experts per MoE layer, experts per token */
    int encdec;                    /* 1 for encoder-decoder models (T5): pipeline carries 2 tensors */
    int seq_len;                   /* tokens per sequence */
    int global_batch;              /* sequences per optimizer step */
    int micro_batch;               /* sequences per microbatch per pipeline */
    int dp, tp, pp, ep;
    int n_gpus;                    /* dp*tp*pp; the job's GPUs are first_gpu..first_gpu+n_gpus-1 */
    int first_gpu;
    int kind;                      /* pfi_job_kind */
    int precision;                 /* pfi_precision */
    double lora_rank;              /* LoRA rank (kind == PFI_JOB_LORA) */
    /* Family constants (docs/simulator.md): filled from the family table when 0. */
    double act_compute;            /* SM switching activity of its GEMM phases, ~0.8-1.1 */
    double host_ms;                /* host time per layer and microbatch that the GPU can hide */
    double input_stall;            /* time the step waits for input data and the host, as a
                                    * fraction of its GPU work at full clock (0: none) */
    /* Pipeline partition: transformer layers on each of the pp stages (fractions allowed: a
     * stage may hold part of an encoder-decoder's heavier decoder blocks, counted in mean
     * layers).  All 0: an even split.  The embedding is on the first stage, the output head
     * and the loss on the last, whatever the split: stages are not equal, and a 1F1B
     * pipeline runs at the pace of its slowest one. */
    double stage_layers[PFI_SIM_MAX_STAGES];
    /* 1: attention as separate kernels (eager PyTorch: the heads x S x S scores are written,
     * masked, soft-maxed and dropped out in memory, forward, backward and recomputed); 0:
     * a fused kernel (FlashAttention), the default. */
    int attn_eager;
} pfi_job_config;

typedef struct pfi_node_config {
    char name[PFI_SIM_NAME_MAX];
    pfi_gpu_model gpu;             /* a copy, so fitted constants travel with the config */
    int n_gpus;                    /* 1..PFI_MAX_GPUS */
    int gpus_per_host;             /* GPUs sharing NVLink/PCIe; beyond that: the network */
    double net_gbs;                /* inter-host bandwidth per GPU per direction, GB/s */
    double net_jitter;             /* relative spread of a microbatch's inter-host transfer */
    /* How a pipeline's pace follows its stages: PFI_SIM_PACE_MAX (the default) the slowest
     * stage's time; PFI_SIM_PACE_EXPECTED the expected slowest of each microbatch, every
     * stage's kernels varying on their own (docs/simulator.md, "the stages' slack as a
     * spread"). */
    int pace;
    uint64_t seed;                 /* manufacturing variation and sensor noise */
    double variation;              /* 1-sigma spread of per-GPU power efficiency (0.02 = 2%) */
    double noise_w;                /* 1-sigma sensor noise of the instantaneous power */
    double ambient_c;
    double initial_limit_w[PFI_MAX_GPUS]; /* 0: the default limit */
    int n_jobs;
    pfi_job_config jobs[PFI_SIM_MAX_JOBS];
} pfi_node_config;

/* Architecture of a catalogued model ("llama3-8b", "gpt3-xl", "bloom-3b", "t5-3b",
 * "mixtral-8x7b", ...; case-insensitive) into *job (model, family, params, layers, hidden,
 * ffn, heads, vocab, moe fields).  PFI_ENOENT with the list of known names otherwise. */
int pfi_sim_job_from_model(pfi_job_config *job, const char *model, pfi_err *err);

/* Validates *cfg and fills derived and default fields.  Messages name the field and the job. */
int pfi_sim_config_check(pfi_node_config *cfg, pfi_err *err);

/* Built-in presets: "h200x8-dense" (the default: 8x H200, dense Llama-3 8B pretraining) and
 * the others listed by pfi_sim_preset_name(i) (`pfi sim presets`). */
#define PFI_SIM_DEFAULT_PRESET "h200x8-dense"
int pfi_sim_preset_count(void);
const char *pfi_sim_preset_name(int i);
const char *pfi_sim_preset_summary(int i);
int pfi_sim_preset(const char *name, pfi_node_config *out, pfi_err *err);

/* JSON (docs/simulator.md): parse text, load "preset name or file path" (NULL: default
 * preset), dump (malloc'd text, free()).  The result is checked (pfi_sim_config_check). */
int pfi_sim_config_parse(const char *json_text, pfi_node_config *out, pfi_err *err);
int pfi_sim_config_load(const char *preset_or_path, pfi_node_config *out, pfi_err *err);
char *pfi_sim_config_dump(const pfi_node_config *cfg);
/* The job's metadata in the shared run model. */
void pfi_sim_job_meta(const pfi_job_config *job, pfi_job_meta *out);

/* ---------------------------------------------------------------- the node */

typedef struct pfi_sim_node pfi_sim_node;

int pfi_sim_node_new(const pfi_node_config *cfg, pfi_sim_node **out, pfi_err *err);
void pfi_sim_node_free(pfi_sim_node *n);
const pfi_node_config *pfi_sim_node_config(const pfi_sim_node *n);
int pfi_sim_node_gpus(const pfi_sim_node *n);

/* Device facts and current limit at time t (uuid is stable: derived from seed and index). */
int pfi_sim_device(pfi_sim_node *n, int gpu, double t, pfi_device *out, pfi_err *err);
/* Sets GPU gpu's power limit at time t.  t must not be earlier than the node's last limit
 * change (PFI_EINVAL otherwise); watts within [min,max] (PFI_ERANGE).  The firmware reaches
 * the new limit with time constant gpu.tau_s. */
int pfi_sim_set_limit(pfi_sim_node *n, int gpu, double t, double watts, pfi_err *err);
double pfi_sim_limit(const pfi_sim_node *n, int gpu, double t);
/* The time of the latest limit change (0 when none). */
double pfi_sim_last_change(const pfi_sim_node *n);

/* Telemetry at time t >= 0: every pfi_sample field except sm_occupancy on models without it.
 * power_w is the 1-second average ending at t, power_inst_w instantaneous (with sensor noise),
 * energy_j cumulative since t=0, clock_reasons 0x4 while the cap binds (0x1 on an idle GPU). */
int pfi_sim_sample(pfi_sim_node *n, int gpu, double t, pfi_sample *out, pfi_err *err);

typedef struct pfi_sim_job_status {
    double tokens_per_s;   /* rate at t */
    double tokens;         /* cumulative tokens since the job started (t=0) */
    double iterations;     /* cumulative optimizer steps (fractional) */
    double step_time_s;    /* time per iteration at t */
    double tokens_per_step;
    double sm_clock_mhz;   /* the slowest GPU's clock: it sets the pace */
    double power_w;        /* mean instantaneous power per GPU of the job (no noise) */
} pfi_sim_job_status;

int pfi_sim_job_count(const pfi_sim_node *n);
int pfi_sim_job_find(const pfi_sim_node *n, const char *name); /* index or -1 */
int pfi_sim_job_status_at(pfi_sim_node *n, int job, double t, pfi_sim_job_status *out,
                          pfi_err *err);

/* Ground truth: the job in steady state with every one of its GPUs at cap_w (noise-free).
 * This is what a perfect sweep would measure at that cap. */
typedef struct pfi_sim_steady {
    double tokens_per_s, step_time_s;
    double power_w;        /* mean board power per GPU */
    double sm_clock_mhz;   /* mean over the job's GPUs */
    double busy_frac;      /* fraction of the step the GPUs run kernels */
    double compute_frac, mem_frac, comm_frac; /* of the step, on the slowest GPU */
    int cap_binds;         /* 1 when the cap lowers the clock of any GPU */
} pfi_sim_steady;
int pfi_sim_job_steady(const pfi_sim_node *n, int job, double cap_w, pfi_sim_steady *out,
                       pfi_err *err);
/* out[i] = pfi_sim_job_steady(cap_w[i]) for i < n_caps, bit for bit, faster: the clocks of
 * every cap are solved together. */
int pfi_sim_job_steady_n(const pfi_sim_node *n, int job, const double *cap_w, int n_caps,
                         pfi_sim_steady *out, pfi_err *err);

/* ---------------------------------------------------------------- shared state */

/* A file that several processes map: the node config, the epoch (monotonic clock, shared by
 * every process of the machine), the speed-up and every limit change with its time.  Changes
 * are appended under an exclusive lock (flock); readers replay what they have not seen, so
 * one process sets a cap and another sees its effect.  Simulated time = (monotonic now -
 * epoch) * speed. */
typedef struct pfi_sim_state pfi_sim_state;

/* Creates path from cfg (fails with PFI_EBUSY if it exists, unless overwrite). */
int pfi_sim_state_create(const char *path, const pfi_node_config *cfg, double speed,
                         int overwrite, pfi_err *err);
/* Attaches to path; when it does not exist and cfg is non-NULL, creates it first (race-free:
 * the first creator wins, the others attach to its file). */
int pfi_sim_state_open(const char *path, const pfi_node_config *cfg, double speed,
                       pfi_sim_state **out, pfi_err *err);
void pfi_sim_state_close(pfi_sim_state *s);
double pfi_sim_state_now(const pfi_sim_state *s);
double pfi_sim_state_speed(const pfi_sim_state *s);
/* Appends a limit change at the current simulated time. */
int pfi_sim_state_set_limit(pfi_sim_state *s, int gpu, double watts, pfi_err *err);
/* The process that runs job `job` (pfi simjob records its pid; 0 when it ends), so the
 * simulated node can list its GPUs' processes as a driver would. */
int pfi_sim_state_set_job_pid(pfi_sim_state *s, int job, long pid, pfi_err *err);
long pfi_sim_state_job_pid(const pfi_sim_state *s, int job);
/* Brings the process's node up to date with the file and returns it (owned by s) with, in
 * *now (may be NULL), the simulated time read under the same lock: every change made before
 * that instant is in the node. */
int pfi_sim_state_node(pfi_sim_state *s, pfi_sim_node **node, double *now, pfi_err *err);
/* The sum of every GPU's power limit after the changes published so far, and in *changes (may
 * be NULL) how many there are: one instant of the change log, read without the lock and without
 * replaying the physics, so that a process can sample it in a tight loop.  The sum is of the
 * limits exactly as set (a change at the same instant as another replaces it, as in the node). */
int pfi_sim_state_limit_sum(pfi_sim_state *s, double *sum, uint64_t *changes, pfi_err *err);

/* ---------------------------------------------------------------- fleet */

/* A run of the simulated study: one node running one job, as the paper's data. */
typedef struct pfi_fleet_entry {
    char run[PFI_NAME_MAX];   /* "h200/main/017 llama3-8b pretrain 8gpu dp8" */
    char set[16];             /* "main", "validation", "h100" */
    int match;                /* h100 entries: index of the H200 entry they match, else -1 */
    pfi_node_config node;     /* the job is node.jobs[0] on GPUs 0..n-1 */
    pfi_job_meta meta;
} pfi_fleet_entry;

/* which: "paper" (131 H200 main + 24 H200 validation + 34 H100 matched, in that order) or
 * "small" (12 runs: 8 H200 + 4 H100 matched).  Same seed, same fleet.  *out is malloc'd. */
int pfi_sim_fleet(const char *which, uint64_t seed, pfi_fleet_entry **out, int *n, pfi_err *err);

/* ---------------------------------------------------------------- for calibration */

/* What the simulator's validation against measured sweeps (study/sim_validate.h) fits and
 * configures with, besides the node API above. */

/* Relative spread (1 sigma) of a microbatch's kernel time, host launch time and peer copy:
 * microbatches do not all take the same time.  An inter-host transfer has its own spread
 * (the node's net_jitter). */
#define PFI_SIM_KERNEL_JITTER 0.10
/* pfi_node_config.pace */
enum { PFI_SIM_PACE_MAX = 0, PFI_SIM_PACE_EXPECTED = 1 };

/* V(f)/V(fmax) with the floor below the knee. */
double pfi_sim_volt(const pfi_gpu_model *g, double f_mhz);
/* The same at phi = f/fmax: pfi_sim_volt(g, f) is pfi_sim_volt_phi(g, f / sm_clock_max_mhz),
 * bit for bit (a fit that asks at the same clocks again divides once). */
double pfi_sim_volt_phi(const pfi_gpu_model *g, double phi);
/* A Merak partition method ("uniform_transformer", "custom:0,6,10,...,32") of job (model,
 * family, layers and pp set) as transformer layers per stage, out[0..pp-1] (merak.c). */
int pfi_sim_merak_stage_layers(const char *method, const pfi_job_config *job, double *out,
                               pfi_err *err);
/* Fills the family constants of job when they are 0. */
void pfi_sim_job_defaults(pfi_job_config *job);
/* Deterministic randomness from (seed, stream, index): uniform in [0,1) and standard normal. */
double pfi_sim_uniform(uint64_t seed, uint64_t stream, uint64_t index);
double pfi_sim_gauss(uint64_t seed, uint64_t stream, uint64_t index);

#endif
