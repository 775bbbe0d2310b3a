/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_pergpu.h: per-GPU caps inside a job.
 *
 * GPUs of one model differ (manufacturing variation): under the same cap an efficient GPU holds
 * a higher SM clock than a leaky one, but a synchronous job runs at its slowest GPU, so the
 * efficient GPUs' extra clock is wasted (they wait at the next collective).  Giving each GPU
 * only the cap that holds the job's common clock frees those watts for other jobs.
 *
 * From a job measured at uniform caps c_k (every GPU at c_k: GPU g's clock f_g(c_k), the job's
 * throughput T_k, set by the slowest clock F_k = min_g f_g(c_k)):
 *   cap_g(F)  the least cap at which GPU g holds clock F (inverse of f_g, linear between caps);
 *   x_k       = mean_g cap_g(F_k) <= c_k: the per-GPU watts that buy T_k when caps are per GPU.
 * The points (x_k, T_k) are an ordinary curve for the allocator (alloc.h) with the job's GPU
 * count: it allocates the MEAN cap x; pfi_pergpu_split turns x back into one cap per GPU whose
 * sum is exactly n x, so the budget holds to the watt.  Pure. */
#ifndef PFI_CORE_ALLOC_PERGPU_H
#define PFI_CORE_ALLOC_PERGPU_H

#include "core/err.h"

typedef struct pfi_pergpu_job {
    int n_gpus;
    int n_caps;
    const double *cap_w;     /* n_caps uniform caps measured, strictly increasing */
    const double *clock_mhz; /* n_gpus x n_caps, row per GPU: its clock at each uniform cap */
    const double *tput;      /* n_caps: the job's throughput at each uniform cap */
} pfi_pergpu_job;

/* gpu_caps (n_gpus x n_caps): cap_g(F_k); x_w (n_caps): their mean.  Clocks must not fall as
 * the cap grows (PFI_EINVAL naming the GPU otherwise). */
int pfi_pergpu_table(const pfi_pergpu_job *job, double *gpu_caps, double *x_w, pfi_err *err);

/* The allocator's curve in the per-GPU mode: the points (x_k, T_k) with x strictly increasing
 * (a clock reached at a lower mean cap already is dropped).  Returns how many (<= n_caps);
 * idx (may be NULL) receives the k of each point kept. */
int pfi_pergpu_curve(const pfi_pergpu_job *job, const double *x_w, double *cap_out,
                     double *tput_out, int *idx);

/* When the curve above has one point (the slowest GPU's clock is the same at every cap, so
 * every cap buys the same mean per-GPU cap): that GPU, the one slowest at the highest cap
 * (its clock cannot rise with the cap, as clocks do not fall); *n_tied receives how many
 * GPUs share that clock at every cap.  -1 when the slowest clock changes with the cap. */
int pfi_pergpu_flat_gpu(const pfi_pergpu_job *job, int *n_tied);

/* One cap per GPU for a mean cap x: linear between the cap vectors of the two table rows whose
 * means bracket x (clamped to the table).  caps_out has n_gpus values summing to n_gpus * x
 * (when x lies within the table). */
void pfi_pergpu_split(const pfi_pergpu_job *job, const double *gpu_caps, const double *x_w,
                      double x, double *caps_out);

#endif
