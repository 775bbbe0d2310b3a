/* physics.h: internals of the simulator shared by its files (not part of the public API).
 *
 * A job's step on one GPU is reduced to a pfi_sim_work: how long each kind of work takes at the
 * maximum SM clock, and how active the chip is while doing it.  From that and a GPU model:
 *   work(f)  = t_comp * fmax/f + t_mem + t_comm        (kernels running on the GPU)
 *   pipe(f)  = max(work(f), t_overlap) * (1 + bubble)   (host launch and overlapped sends run
 *                                                        concurrently; 1F1B bubble)
 *   step(f)  = pipe(f) + t_host
 * The firmware caps the power drawn while kernels run (its window is short next to a step's
 * idle gaps), so the clock at limit L is the highest f with busy_power(f) <= L. */
#ifndef PFI_SIM_PHYSICS_H
#define PFI_SIM_PHYSICS_H

#include "sim/sim.h"

typedef struct pfi_sim_work {
    double t_comp;       /* s per step at f_max; scales with f_max/f */
    double t_mem;        /* s per step of memory-bound kernels */
    double t_comm;       /* s per step of communication kernels on the critical path */
    double t_overlap;    /* s per step of work concurrent with the kernels (host, p2p sends) */
    double bubble;       /* pipeline bubble as a fraction of the per-pipeline work */
    double t_host;       /* s per step the GPU waits for the host (optimizer, data) */
    double act_comp, act_mem, act_comm;    /* SM activity of each phase, 0..~1.1 */
    double dram_comp, dram_mem, dram_comm; /* DRAM bandwidth utilisation of each phase */
    double tensor_comp;  /* tensor-pipe activity while computing */
    double nvlink_bytes, pcie_bytes;       /* per step per GPU, each direction */
    double tokens_per_step;
    double mem_used_mib;
} pfi_sim_work;

/* V(f)/V(fmax) with the floor below the knee. */
double pfi_sim_volt(const pfi_gpu_model *g, double f_mhz);
/* Busy power at clock f for this work; eff scales the SM dynamic power (manufacturing). */
double pfi_sim_busy_power(const pfi_gpu_model *g, const pfi_sim_work *w, double f_mhz,
                          double eff);
/* Highest clock whose busy power fits under limit_w (f_min when none does); *binds set when the
 * clock is below f_max because of the limit. */
double pfi_sim_clock_at(const pfi_gpu_model *g, const pfi_sim_work *w, double limit_w,
                        double eff, int *binds);
double pfi_sim_work_busy(const pfi_sim_work *w, double fmax, double f_mhz);
double pfi_sim_step_time(const pfi_sim_work *w, double fmax, double f_mhz);

/* The work of job j on one of its GPUs (every GPU of a job does the same work). */
int pfi_sim_job_work(const pfi_node_config *cfg, const pfi_job_config *job, pfi_sim_work *out,
                     pfi_err *err);
/* Fills the family constants of job when they are 0. */
void pfi_sim_job_defaults(pfi_job_config *job);

/* Deterministic randomness from (seed, stream, index): uniform in [0,1) and standard normal. */
double pfi_sim_uniform(uint64_t seed, uint64_t stream, uint64_t index);
double pfi_sim_gauss(uint64_t seed, uint64_t stream, uint64_t index);

#endif
