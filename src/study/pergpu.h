/* SPDX-License-Identifier: Apache-2.0 */
/* pergpu.h: what per-GPU caps inside a job (core/alloc_pergpu.h) gain over one cap per job, in
 * the simulator, for `pfi bench pergpu`.  Every job of the chosen simulated nodes is swept at
 * uniform caps (per-GPU clocks and tokens/s); then, under each budget, the allocator gives one
 * cap per job and, separately, per-GPU caps that hold each job's common clock; both are applied
 * to the simulator and what they give is measured, not predicted.  The simulator's clock is
 * virtual: every change is read once settled, without waiting for it. */
#ifndef PFI_STUDY_PERGPU_H
#define PFI_STUDY_PERGPU_H

#include <jansson.h>

#include "core/err.h"

#define PFI_PERGPU_MAX_NODES 8
#define PFI_PERGPU_MAX_JOBS 64

typedef struct pfi_pergpu_bench pfi_pergpu_bench;

/* presets: comma-separated simulator presets or config files, at most PFI_PERGPU_MAX_NODES;
 * each node gets distinct GPUs.  variation: the 1-sigma per-GPU efficiency spread, NAN for
 * each preset's own. */
int pfi_pergpu_bench_new(const char *presets, double variation, pfi_pergpu_bench **out,
                         pfi_err *err);
void pfi_pergpu_bench_free(pfi_pergpu_bench *b);
void pfi_pergpu_bench_size(const pfi_pergpu_bench *b, int *jobs, int *nodes, long *gpus);

/* Sweeps every job at uniform caps step_w apart (all jobs at once: they share no GPU) and builds
 * each job's per-GPU table.  The top cap is the default: its draw is the job's baseline. */
int pfi_pergpu_bench_measure(pfi_pergpu_bench *b, double step_w, pfi_err *err);
/* The measured jobs with their per-GPU tables, as `pfi allocate --per-gpu --jobs` reads them
 * (docs/jobs-format.md), written to path. */
int pfi_pergpu_bench_write_jobs(const pfi_pergpu_bench *b, const char *path, pfi_err *err);

/* One budget: the jobs' baseline draw less cut, allocated both ways and applied. */
typedef struct pfi_pergpu_cut {
    double budget_w;
    double uniform_tps, pergpu_tps; /* tokens/s of all jobs, measured once settled */
    double uniform_w, pergpu_w;     /* the caps applied, summed */
} pfi_pergpu_cut;
int pfi_pergpu_bench_cut(pfi_pergpu_bench *b, double cut, pfi_pergpu_cut *out, pfi_err *err);

#endif
