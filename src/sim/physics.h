/* SPDX-License-Identifier: Apache-2.0 */
/* physics.h: internals of the simulator shared by its files (not part of the public API).
 *
 * A job's step on one GPU is reduced to a pfi_sim_work: how long each kind of work takes at the
 * maximum SM clock, and how active the chip is while doing it.  Every GPU of a pipeline stage
 * does the same work; the stages differ (layers per stage, the embedding on the first, the
 * output head and the loss on the last).  From that and a GPU model:
 *   work(f)  = t_comp * fmax/f + t_mem * s(f_m) + t_comm * s(f_x)   (kernels on the GPU;
 *              s(f) = max(1, f_sat/f): below a saturation clock even memory and copy kernels
 *              cannot issue requests fast enough and slow down with the SM clock)
 *   pipe(f)  = E[max(work(f), t_overlap)]   (host launch and overlapped sends run concurrently)
 *   step     = (m-1)/m * max_s pipe_s + 1/m * sum_s pipe_s + t_host
 *              (1F1B over m microbatches: the slowest stage sets the pace, and filling and
 *              draining the pipeline costs one microbatch of every stage; equal stages give
 *              the familiar pipe * (1 + (pp-1)/m))
 * The firmware's control window is short next to a step's phases (GEMM stretches, elementwise
 * stretches, collectives, idle gaps), so it caps each phase on its own: in phase p the clock is
 * the highest f with power_p(f) <= L.  Compute phases draw the most and bind first; a job whose
 * mean draw is under the limit still loses its peaks. */
#ifndef PFI_SIM_PHYSICS_H
#define PFI_SIM_PHYSICS_H

#include "sim/sim.h"

typedef struct pfi_sim_work {
    double t_comp;       /* s per step at f_max; scales with f_max/f */
    double t_mem;        /* s per step of memory-bound kernels */
    double t_comm;       /* s per step of communication kernels on the critical path */
    double t_overlap;    /* s per step of work concurrent with the kernels (host, p2p sends) */
    double sd_overlap;   /* its spread (1 sigma) over microbatches, s per step */
    double microbatches; /* per pipeline per step (the 1F1B schedule's m) */
    double t_host;       /* s per step the GPU waits for the host (optimizer, data) */
    double act_comp, act_mem, act_comm, act_spin;     /* SM activity of each phase, 0..~1.1 */
    double dram_comp, dram_mem, dram_comm, dram_spin; /* DRAM bandwidth use of each phase */
    double tensor_comp;  /* tensor-pipe activity while computing */
    double nvlink_bytes, pcie_bytes;       /* per step per GPU, each direction */
    double tokens_per_step;
    double mem_used_mib;
} pfi_sim_work;

/* Kernel phases, then the spin phase: a GPU waiting in a pipeline bubble or for a slower
 * peer still runs a polling communication kernel (low activity, clocks up), unlike the host
 * gaps when nothing runs. */
enum { PFI_PH_COMPUTE, PFI_PH_MEMORY, PFI_PH_COMM, PFI_PH_SPIN, PFI_PH_N };
#define PFI_PH_KERNELS 3

/* The clocks the firmware holds in each phase under one limit, and each phase's power at its
 * clock (pfi_sim_phase_power(f[p]), bit for bit: the solver has it already). */
typedef struct pfi_sim_op {
    double f[PFI_PH_N];
    double p[PFI_PH_N];
    int binds; /* some phase runs below f_max because of the limit */
} pfi_sim_op;

/* Power of one phase at clock f; eff scales the SM dynamic power (manufacturing). */
double pfi_sim_phase_power(const pfi_gpu_model *g, const pfi_sim_work *w, int phase,
                           double f_mhz, double eff);
/* Everything a phase's power depends on: P(f) = base + dyn * V(phi)^2 * phi, phi = f/f_max,
 * V the chip's V-f curve (v_floor, f_knee, v_gamma); base = idle + busy static * eff + HBM
 * power * the phase's DRAM use, dyn = dyn_w * eff * the phase's activity.  Its clock under a
 * limit is a function of this and the limit alone (optable.c keeps solved ones by it). */
typedef struct pfi_sim_power_law {
    double f_min, f_max;
    double v_floor, f_knee, v_gamma;
    double base, dyn;
} pfi_sim_power_law;
void pfi_sim_power_law_of(const pfi_gpu_model *g, const pfi_sim_work *w, int phase, double eff,
                          pfi_sim_power_law *law);
/* pfi_sim_phase_power(f) of the phase whose law this is, bit for bit. */
double pfi_sim_law_power(const pfi_sim_power_law *law, double f_mhz);
/* p[i] = pfi_sim_law_power(&law[i], f_mhz) for i < n, bit for bit, for laws of one chip (the
 * same f_max and V-f curve as law[0]; the phases of one GPU): the voltage computed once. */
void pfi_sim_laws_power(const pfi_sim_power_law *law, int n, double f_mhz, double *p);
/* Clocks are found to PFI_SIM_CLOCK_TOL below the exact root. */
#define PFI_SIM_CLOCK_TOL 1e-6 /* MHz */
/* A bracket of a phase's clock under a limit: power(lo) = plo <= limit < phi = power(hi).
 * pfi_sim_phase_root narrows it to hi - lo <= PFI_SIM_CLOCK_TOL (the clock is then lo). */
typedef struct pfi_sim_bracket {
    double lo, hi, plo, phi;
} pfi_sim_bracket;
void pfi_sim_phase_root(const pfi_sim_power_law *law, double limit_w, pfi_sim_bracket *b);
/* Several roots at once, each b narrowed as pfi_sim_phase_root narrows it, bit for bit (the
 * same operations in the same order per root; independent roots overlap on the core). */
typedef struct pfi_sim_root {
    const pfi_sim_power_law *law;
    double limit_w;
    pfi_sim_bracket b;
} pfi_sim_root;
void pfi_sim_phase_roots(pfi_sim_root *r, int n);
/* Seconds per step of a kernel phase at f_max (0 for the spin phase). */
double pfi_sim_phase_duration(const pfi_sim_work *w, int phase);
/* The highest clock of each phase whose power fits under limit_w (f_min when none does). */
void pfi_sim_operating_point(const pfi_gpu_model *g, const pfi_sim_work *w, double limit_w,
                             double eff, pfi_sim_op *op);
/* One GPU's operating points on a grid of budgets PFI_SIM_OPTABLE_STEP_W apart, solved when
 * first needed (optable.c): an operating point at any budget then starts from the bracket of
 * the two nodes around it and costs a few power evaluations; its clocks are those of
 * pfi_sim_operating_point to PFI_SIM_CLOCK_TOL (the same on a node). */
#define PFI_SIM_OPTABLE_STEP_W 1.0
#define PFI_SIM_OPTABLE_PAGE 64   /* nodes per page, allocated when first touched */
#define PFI_SIM_OPTABLE_PAGES 32  /* budgets beyond 2048 steps are solved directly */
typedef struct pfi_sim_oppage pfi_sim_oppage;
typedef struct pfi_sim_optable {
    const pfi_gpu_model *g;
    const pfi_sim_work *w;
    double eff;
    pfi_sim_power_law law[PFI_PH_N];
    double pmin[PFI_PH_N], pmax[PFI_PH_N]; /* each phase's power at f_min and f_max */
    int timed[PFI_PH_N];                    /* the phase takes time (a step's duration > 0) */
    int k0, n;                              /* nodes at budgets (k0 + i) * step, i < n */
    pfi_sim_oppage *page[PFI_SIM_OPTABLE_PAGES];
    int pages;                              /* pages [0, pages) may be allocated */
} pfi_sim_optable;
/* g and w must outlive the table, unchanged.  Out of memory, it solves points directly. */
void pfi_sim_optable_init(pfi_sim_optable *t, const pfi_gpu_model *g, const pfi_sim_work *w,
                         double eff);
void pfi_sim_optable_free(pfi_sim_optable *t);
void pfi_sim_optable_op(pfi_sim_optable *t, double budget_w, pfi_sim_op *op);
/* op[i] = pfi_sim_optable_op(t[i], budget_w[i]) for i < n, bit for bit; where that answer is
 * the direct solver's (a budget on the grid or outside it: every whole-watt limit), the roots
 * of all n are solved together (pfi_sim_phase_roots), without filling the tables' nodes. */
void pfi_sim_optable_ops(pfi_sim_optable *const *t, const double *budget_w, pfi_sim_op *op,
                         int n);
/* A node's clocks are kept, per thread, in a memo keyed by the phase's power law and the
 * budget, bit for bit (fixed size, the latest wins a slot): nodes of two GPUs whose phase draws
 * the same power (the memory-bound and communication phases of two jobs on equal chips) are
 * solved once.  The number of nodes this thread took from it, for tests. */
long pfi_sim_optable_memo_hits(void);

/* One GPU's step at op, each figure computed once: the time of each kernel phase, their sum
 * (busy), the busy-time mean clock and power (fbusy, pbusy), and the time with the concurrent
 * work (pipe, as pfi_sim_pipe_time). */
typedef struct pfi_sim_gpu_step {
    double t[PFI_PH_KERNELS];
    double busy, fbusy, pbusy, pipe;
} pfi_sim_gpu_step;
void pfi_sim_gpu_step_at(const pfi_gpu_model *g, const pfi_sim_work *w, const pfi_sim_op *op,
                         pfi_sim_gpu_step *out);
/* Time of one phase per step at op, busy (kernel) time and step time. */
double pfi_sim_phase_time(const pfi_gpu_model *g, const pfi_sim_work *w, const pfi_sim_op *op,
                          int phase);
double pfi_sim_work_busy(const pfi_gpu_model *g, const pfi_sim_work *w, const pfi_sim_op *op);
/* One stage GPU's time per step with the concurrent work (busy kernels against t_overlap). */
double pfi_sim_pipe_time(const pfi_gpu_model *g, const pfi_sim_work *w, const pfi_sim_op *op);
/* A 1F1B step over pp stages whose per-step times are pipe[0..pp-1], m microbatches, plus the
 * host time: the slowest stage sets the pace. */
double pfi_sim_pipeline_step(const double *pipe, int pp, double m, double t_host);
/* The part of a stage GPU's time per step (busy kernels against t_overlap, as
 * pfi_sim_pipe_time) that varies on its own from microbatch to microbatch, 1 sigma: its
 * kernels' spread (PFI_SIM_KERNEL_JITTER * busy) times the probability, in Clark's formula,
 * that the kernels and not the concurrent work set its time (1 without concurrent work). */
double pfi_sim_pipe_spread(const pfi_sim_work *w, double busy);
/* The same step when each stage's time varies by sd[s] (1 sigma, independent across stages):
 * the slowest stage of each microbatch sets the pace, E[max_s] by Clark's formula taken over
 * the stages in order.  All sd 0: pfi_sim_pipeline_step's value. */
double pfi_sim_pipeline_step_spread(const double *pipe, const double *sd, int pp, double m,
                                    double t_host);

/* The work of one GPU of the job's pipeline stage `stage` (0..pp-1; every GPU of a stage does
 * the same work). */
int pfi_sim_job_work(const pfi_node_config *cfg, const pfi_job_config *job, int stage,
                     pfi_sim_work *out, pfi_err *err);
/* The work of every stage of the job, w[0..pp-1]: pfi_sim_job_work of each stage, bit for
 * bit, with what the stages share computed once. */
int pfi_sim_job_works(const pfi_node_config *cfg, const pfi_job_config *job, pfi_sim_work *w,
                      pfi_err *err);
/* Transformer layers of each stage: the job's partition, or an even split when it has none. */
void pfi_sim_job_stage_layers(const pfi_job_config *job, double *layers);

#endif
