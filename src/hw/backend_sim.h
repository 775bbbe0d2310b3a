/* SPDX-License-Identifier: Apache-2.0 */
/* backend_sim.h: what only the simulator backend offers, for layers that drive a simulation
 * (the study's sweeps in virtual time, simjob, tests).
 *
 * pfi_hw_open("sim", arg, ...): arg NULL = the default preset (sim/sim.h), a preset name, or a
 * JSON config file.  Without env PFI_SIM_STATE the backend is in VIRTUAL time: its clock starts
 * at 0 and moves only through pfi_hw_sleep (instantly).  With PFI_SIM_STATE=FILE it attaches to
 * that shared state (creating it from arg when absent, speed-up from env PFI_SIM_SPEED, default
 * 1) and runs in REAL time: pfi_hw_now is the state's simulated time, pfi_hw_sleep really sleeps
 * seconds/speed.  Every call is thread-safe (one mutex per backend). */
#ifndef PFI_HW_BACKEND_SIM_H
#define PFI_HW_BACKEND_SIM_H

#include "hw/hw.h"
#include "sim/sim.h"

/* The largest speed-up of simulated time (PFI_SIM_SPEED, pfi sweep --speed, pfi sim init). */
#define PFI_SIM_SPEED_MAX 1e6

/* The node behind a sim backend, brought up to date with the shared state; NULL when b is not
 * a sim backend.  For its config (pfi_sim_node_config), which never changes once the node
 * exists, so any thread may read it without a lock.  What moves with time is read through the
 * backend (pfi_hw_sample, pfi_backend_sim_job), which locks. */
pfi_sim_node *pfi_backend_sim_node(pfi_backend *b);
/* 1 when the backend runs in virtual time. */
int pfi_backend_sim_virtual(pfi_backend *b);
/* Job status at the backend's current time (locks internally).  PFI_ENOTSUP if not sim. */
int pfi_backend_sim_job(pfi_backend *b, int job, pfi_sim_job_status *out, pfi_err *err);

#endif
