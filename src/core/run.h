/* SPDX-License-Identifier: Apache-2.0 */
/* run.h: the data model every layer shares: a characterized run is a job's metadata plus one
 * level per power limit it was measured at.  Produced by a sweep (measure/), by the simulator's
 * study, or by importing a public dataset (store/import_*); consumed by curves, PFI, the
 * predictor and the allocator (core/).  Plain structs, no behaviour. */
#ifndef PFI_CORE_RUN_H
#define PFI_CORE_RUN_H

#define PFI_NAME_MAX 128
#define PFI_MAX_LEVELS 64

/* Throughput unit of a run: LLM runs measure tokens/s; some public traces only samples/s. */
typedef enum pfi_tput_unit { PFI_TOKENS_PER_S = 0, PFI_SAMPLES_PER_S = 1 } pfi_tput_unit;

typedef struct pfi_level {
    double cap_w;          /* power limit asked for, per GPU */
    double enforced_w;     /* enforced limit read back (NAN when unknown): the mean over GPUs */
    /* The lowest of the GPUs' enforced limits (NAN, or 0 from a zeroed struct, when unknown):
     * one GPU held below the cap (an out-of-band cap) shows here, where the mean hides it. */
    double enforced_min_w;
    double power_w;        /* mean board power drawn per GPU over the steady window */
    double tput;           /* job throughput in the run's unit */
    double tput_lo, tput_hi; /* its confidence interval (NAN when unknown) */
    /* Mean telemetry over the steady window; NAN when the source had none. */
    double sm_clock_mhz;
    double powercap_frac;  /* fraction of samples with the SW power cap reason set */
    double gpu_util, sm_active, tensor_active, dram_active; /* 0..1 */
    double nvlink_mibs, pcie_mibs; /* per GPU, tx+rx */
    double t_start_s, t_end_s;     /* the steady window used */
    /* When the level began (its caps set, or the job restarted for it) and ended, on the clock
     * of t_start_s: what characterizing it cost (core/cost.h).  Unknown (NAN, or 0 and 0 from
     * a zeroed struct) unless ended_s > began_s. */
    double began_s, ended_s;
    int n_samples;
} pfi_level;

typedef struct pfi_job_meta {
    char model[PFI_NAME_MAX];     /* e.g. "gpt3-6.7b", "llama-8b" */
    char family[32];              /* e.g. "gpt", "llama", "mixtral", "bert"; "" unknown */
    int moe;                      /* 1 MoE, 0 dense, -1 unknown */
    int finetune;                 /* 1 fine-tuning, 0 pretraining, -1 unknown */
    int lora;                     /* 1 LoRA fine-tuning */
    double params_b;              /* parameters, billions (NAN unknown) */
    int dp, tp, pp, ep;           /* parallel degrees (0 unknown) */
    int seq_len, global_batch;    /* 0 unknown */
} pfi_job_meta;

typedef struct pfi_run {
    long long id;                 /* store id; 0 when not stored */
    char name[PFI_NAME_MAX];      /* human id, e.g. "perseus/A40/gpt3-2.7b dp1tp1pp8" */
    char source[32];              /* "sweep", "sim", "perseus", "zeus-nsdi", "zeus-plo" */
    char gpu_type[32];            /* "H200-SXM", "H100-SXM", "A100-PCIE-80GB", "A40", ... */
    int n_gpus;
    pfi_tput_unit unit;
    double min_limit_w, max_limit_w, default_limit_w; /* device constraints */
    pfi_job_meta meta;
    int n_levels;
    pfi_level levels[PFI_MAX_LEVELS]; /* any order; the baseline is the default-limit level */
} pfi_run;

#endif
