/* SPDX-License-Identifier: Apache-2.0 */
/* alloc.h: choosing one power cap per job under a budget on the sum of caps.  Read this first if
 * you touch allocation; docs/allocation.md explains the method and its guarantees.
 *
 * Problem.  Job j has n_j GPUs, a throughput curve T_j(cap) (piecewise linear through its points,
 * flat above its last point), a weight w_j, a cap range and an optional SLA (max slowdown s_j:
 * T_j(cap) >= (1 - s_j) T0_j).  Caps lie on a grid of step_w watts (multiples of step_w).
 *     maximize  sum_j w_j T_j(cap_j)   subject to   sum_j n_j cap_j <= B.
 * The budget is hard: no function here ever returns an allocation over it.
 *
 * Solver (pfi_alloc_solve).  Each job's grid points are reduced to the upper concave hull of
 * the few that matter (its range ends and the grid neighbours of its curve's breakpoints); the
 * Lagrangian relaxation on those hulls is solved by a weighted selection of hull segments by
 * marginal throughput per watt (expected O(segments), no sort), giving an upper bound and an
 * allocation; branch and bound on the one job the relaxation leaves between two hull vertices
 * closes the gap.  Concave or not, the result is the optimum of the grid problem when `optimal`
 * is set; otherwise (work limit reached) `upper_bound` still bounds the optimum.
 *
 * Pure: no I/O, no globals.  Arrays in, arrays out. */
#ifndef PFI_CORE_ALLOC_H
#define PFI_CORE_ALLOC_H

#include "core/err.h"

typedef struct pfi_alloc_job {
    const char *id;          /* unique, non-empty */
    int n_gpus;              /* >= 1; every GPU of the job gets the same cap */
    double min_cap_w;        /* per-GPU cap range; the lower end is raised to the curve's first */
    double max_cap_w;        /*   point, since nothing is known below it */
    const double *cap_w;     /* curve: per-GPU caps, strictly increasing, n_points >= 2 */
    const double *tput;      /* curve: throughput of the whole job at those caps (any unit) */
    int n_points;
    double p0_w;             /* baseline per-GPU power drawn (cuts, `equal`); > 0 */
    double t0;               /* baseline throughput for the SLA; NAN: the curve at max_cap_w */
    double sla;              /* max slowdown in [0, 1); NAN: none */
    double weight;           /* > 0; NAN or 0: 1 */
} pfi_alloc_job;

/* What to do when the minimum caps and SLAs need more than the budget. */
typedef enum pfi_infeasible_mode {
    PFI_INFEASIBLE_FAIL = 0, /* PFI_EINFEASIBLE, the message gives the minimum feasible budget */
    PFI_INFEASIBLE_RELAX,    /* loosen every SLA by the same extra slowdown, the least that fits */
    PFI_INFEASIBLE_BY_WEIGHT /* drop SLAs one job at a time, lowest weight first, until it fits */
} pfi_infeasible_mode;

typedef struct pfi_alloc_opts {
    double step_w;        /* cap grid in W (default 1) */
    int on_infeasible;    /* pfi_infeasible_mode */
    double rel_gap;       /* branch and bound stops at best >= bound / (1 + rel_gap) */
    double max_work;      /* branch-and-bound work limit in segment visits (< 0: no B&B) */
    int fill_whole;       /* 1: the greedy fill always builds its whole heap (the same answers,
                           * slower; for tests of the faster way); default 0 */
    int vec;              /* vector instructions the per-job tests of a build use (PFI_ALLOC_VEC_*
                           * in core/alloc_vec.h; the same answers at every level); default 0,
                           * the best the CPU runs */
    int caps_alone;       /* 1: a fresh build tests and grids each job's caps on its own, even
                           * when the job before has the same ones bit for bit (the same
                           * answers, slower; for tests of the faster way); default 0 */
} pfi_alloc_opts;

void pfi_alloc_opts_default(pfi_alloc_opts *o);

/* Per-job flags in a result. */
#define PFI_ALLOC_AT_MIN      0x1u /* cap at the job's minimum (device or measured range) */
#define PFI_ALLOC_AT_MAX      0x2u /* cap at the job's maximum */
#define PFI_ALLOC_AT_SLA      0x4u /* cap at its SLA floor, above the minimum: the SLA binds */
#define PFI_ALLOC_SLA_RELAXED 0x8u /* its SLA was loosened (relax mode) */
#define PFI_ALLOC_SLA_DROPPED 0x10u /* its SLA was dropped (by-weight mode) */

typedef struct pfi_alloc_result {
    int n;
    double *cap_w;        /* per job, per-GPU cap */
    double *tput;         /* per job, throughput on the curve the allocation was made with */
    double *floor_w;      /* per job, the lowest cap it could get (minimum or SLA floor) */
    double *sla;          /* per job, the SLA applied after any relaxation (NAN: none) */
    unsigned *flags;      /* PFI_ALLOC_* */
    double budget_w;      /* B as given */
    double power_w;       /* sum n_j cap_j <= budget_w */
    double value;         /* sum w_j tput_j */
    double upper_bound;   /* no allocation of this grid problem has a higher value */
    int optimal;          /* 1: value is the optimum (within rel_gap) */
    int budget_binds;     /* 1: less than one grid step of the smallest job is left */
    double min_budget_w;  /* least budget meeting every minimum cap and SLA as given */
    double min_budget_nosla_w; /* least budget meeting every minimum cap */
    double sla_extra;     /* relax mode: slowdown added to every SLA (0 when none) */
    int n_sla_dropped;    /* by-weight mode: SLAs dropped */
    long long nodes;      /* branch-and-bound nodes explored */
    int cap_n;            /* the per-job arrays hold this many jobs (0: n), for
                           * pfi_alloc_ws_solve_reuse */
} pfi_alloc_result;

void pfi_alloc_result_free(pfi_alloc_result *r);

/* Checks every job (ids unique, curves of >= 2 increasing points, ranges, p0, SLA, weight):
 * PFI_EINVAL naming the job and the problem. */
int pfi_alloc_validate(const pfi_alloc_job *jobs, int n, pfi_err *err);

/* B = (1 - cut) * sum_j n_j P0_j. */
double pfi_alloc_budget_from_cut(const pfi_alloc_job *jobs, int n, double cut);

/* Throughput of job j at a per-GPU cap on its curve (linear between points, flat outside). */
double pfi_alloc_tput_at(const pfi_alloc_job *job, double cap_w);
/* Whether the job meets a max slowdown sla (NAN: none) at cap_w: its throughput there at least
 * (1 - sla) T0, as its SLA floor is found (pfi_alloc_prepare). */
int pfi_alloc_sla_met(const pfi_alloc_job *job, double cap_w, double sla);

/* The optimal allocation on the jobs' curves.  On error nothing is allocated (*res zeroed). */
int pfi_alloc_solve(const pfi_alloc_job *jobs, int n, double budget_w, const pfi_alloc_opts *opts,
                    pfi_alloc_result *res, pfi_err *err);

/* ---- warm re-solves ----
 * A workspace keeps what a solve builds (checks, grids, floors, every job's hull and the
 * buffers), so the next solve after a budget change or one job's new curve skips all of it;
 * from its second solve on it also sorts the hull segments by slope, one part a solve (so that
 * no re-solve costs more than a fresh solve), and keeps them sorted (patched when a job
 * changes): once sorted, a new budget's relaxation is a binary search.  Its answers
 * are those of pfi_alloc_solve on the same jobs and budget, bit for bit (the same hulls; the
 * sorted segments and the selection reach the same positions and sum the same values).  The workspace reads the caller's jobs array, which must
 * outlive it; after changing job j in place, call pfi_alloc_ws_update_job(j); when a job arrives
 * or leaves, pfi_alloc_ws_add_job or pfi_alloc_ws_remove_job (that job's hull and segments only);
 * for any other new list, pfi_alloc_ws_set_jobs (a rebuild).  A budget below what the SLAs need, or any
 * budget once SLAs had to be relaxed or dropped, rebuilds (the degradation depends on it). */
typedef struct pfi_alloc_ws pfi_alloc_ws;
/* The sort is there after at most this many solves at the same hulls. */
#define PFI_ALLOC_INDEX_SOLVES 16

/* Checks and builds everything for jobs at budget_w (the budget decides SLA degradation; the
 * same errors as pfi_alloc_solve). */
int pfi_alloc_ws_new(const pfi_alloc_job *jobs, int n, double budget_w,
                     const pfi_alloc_opts *opts, pfi_alloc_ws **out, pfi_err *err);
/* The optimal allocation at budget_w (res as pfi_alloc_solve's). */
int pfi_alloc_ws_solve(pfi_alloc_ws *w, double budget_w, pfi_alloc_result *res, pfi_err *err);
/* pfi_alloc_ws_solve for a caller that solves again and again and keeps one result: res holds
 * an earlier result of this header's solvers (or is zeroed), whose per-job arrays are refilled
 * in place when they hold this solve's jobs (cap_n, else n, at least as many), else freed and
 * allocated anew.  The same answer as pfi_alloc_ws_solve, bit for bit; what it saves is the
 * memory a fresh result touches for the first time (~36 MB at a million jobs, which the system
 * clears page by page on every solve).  On error res is freed and zeroed. */
int pfi_alloc_ws_solve_reuse(pfi_alloc_ws *w, double budget_w, pfi_alloc_result *res,
                             pfi_err *err);
/* Job j of the jobs array changed (curve, range, GPUs, SLA, weight; not its id). */
int pfi_alloc_ws_update_job(pfi_alloc_ws *w, int j, pfi_err *err);
/* A job arrived: jobs holds n jobs, the workspace's n - 1 in their order with the new one at
 * index j (j = n - 1: appended), and is read from here on.  The new job is checked as
 * pfi_alloc_validate would (and its id against the others); on such an error nothing changes
 * (the workspace still reads the array it read before).  Once SLAs were relaxed or dropped for
 * a budget, this rebuilds at that budget (as pfi_alloc_ws_set_jobs, with its errors). */
int pfi_alloc_ws_add_job(pfi_alloc_ws *w, const pfi_alloc_job *jobs, int n, int j,
                         pfi_err *err);
/* Job j left: jobs holds n >= 1 jobs, the workspace's n + 1 without its job j, the others in
 * their order, and is read from here on. */
int pfi_alloc_ws_remove_job(pfi_alloc_ws *w, const pfi_alloc_job *jobs, int n, int j,
                            pfi_err *err);
/* A new jobs array (any other change to the list): rebuilds. */
int pfi_alloc_ws_set_jobs(pfi_alloc_ws *w, const pfi_alloc_job *jobs, int n, double budget_w,
                          pfi_err *err);
void pfi_alloc_ws_free(pfi_alloc_ws *w);

/* ---- shared by the policies (core/policy.c) ---- */

/* The grid of a job and its floor: caps k*step for k in [k_floor, k_max].  Computes the SLA
 * floors (applying opts->on_infeasible when the budget is short) and fills res's per-job arrays
 * floor_w, sla, flags and its min_budget fields.  Allocates res (free with
 * pfi_alloc_result_free); on error res is freed and zeroed. */
int pfi_alloc_prepare(const pfi_alloc_job *jobs, int n, double budget_w,
                      const pfi_alloc_opts *opts, int *k_floor, int *k_max,
                      pfi_alloc_result *res, pfi_err *err);
/* The ids of jobs[0..n) are distinct (n >= 1): pfi_alloc_validate's last check, its error;
 * each id's pfi_alloc_id_hash in hashes[j] (NULL: computed here). */
int pfi_alloc_check_ids_hashed(const pfi_alloc_job *jobs, int n, const unsigned *hashes,
                               pfi_err *err);
unsigned pfi_alloc_id_hash(const char *id);
/* One job as pfi_alloc_prepare sees it before any SLA is degraded: PFI_OK when it passes
 * pfi_alloc_validate's checks (but its id's uniqueness) and its range holds grid points, with
 * that range [*kmin, *kmax] and its SLA floor *kf (-1: no cap meets its SLA); else nonzero
 * (pfi_alloc_prepare says why).  For one pass over a list that reads each job once.
 * inv_step: 1 / step when step is a power of two (then products are the quotients), else 0.
 * vec: the vector level its point tests run at (resolved by pfi_alloc_vec_level; the same
 * answer at every level).  same_caps: J's point count, caps and cap range are bit for bit
 * those of a job that passed, whose range *kmin, *kmax holds on entry: its caps' tests and
 * range are that job's and are not made again (the same answer). */
int pfi_alloc_job_floor(const pfi_alloc_job *J, double step, double inv_step, int vec,
                        int same_caps, int *kmin, int *kmax, int *kf);
/* Fills res->tput, value, power_w, flags AT_* and budget_binds from res->cap_w. */
void pfi_alloc_finish(const pfi_alloc_job *jobs, int n, const pfi_alloc_opts *opts,
                      pfi_alloc_result *res);

/* Watts for a message or a summary: whole when whole, else to 0.1 W, so that a budget 0.4 W
 * short is not told as "1100 W is below 1100 W".  Returns buf. */
const char *pfi_alloc_watts_text(char buf[32], double w);
/* A budget and the more it falls short of, for "budget B W is below N W": the budget as given,
 * the need rounded up (a budget of what it says is then enough) at the fewest decimals within
 * 1e-4 of it; a budget 0.04 W short read "12345.6 W is below 12345.6 W" to 0.1 W. */
void pfi_alloc_watts_below(char bb[32], double budget_w, char nb[32], double need_w);

/* Grid steps past this are refused: a double counts whole numbers exactly up to 2^53, and the
 * budget's count in steps (a long long) overflowed past 2^63. */
#define PFI_ALLOC_MAX_UNITS 9007199254740992.0
/* The budget in grid steps: the most k whose k * step_w is within 1e-12 of budget_w (and a
 * thousandth of a step) or below.
 * The tolerance is rounding's, not watts: the daemon and the controller hand the allocator what
 * is left of a budget after fixed watts, a difference whose last bits are noise (100 W left read
 * 99.99999999999977 W), and a step refused there made a budget that covers every minimum cap
 * infeasible.  At most PFI_ALLOC_MAX_UNITS (the count, a long long, overflowed past 2^63: a
 * budget of 1e9 W on a 1e-10 W grid read "below 0.1 W"). */
long long pfi_alloc_budget_units(double budget_w, double step_w);
/* A budget's checks (finite, positive: PFI_EINVAL; at most PFI_ALLOC_MAX_UNITS steps of step_w:
 * PFI_ERANGE) and its count in steps. */
int pfi_alloc_budget_check(double budget_w, double step_w, long long *units, pfi_err *err);

#endif
