/* SPDX-License-Identifier: Apache-2.0 */
/* pfi/pfi.h: the public C API of libpfi, the pure computations behind the pfi program.
 *
 *   core/run.h       a characterized run: job metadata and one level per power limit
 *   core/curve.h     a job's power -> throughput curve, its fits and how to read it at a cap
 *   core/pfi.h       the Power Flexibility Index of a run or curve (PFI at 10-40% shed, CI,
 *                    the power a job can shed within a slowdown budget)
 *   core/features.h  telemetry features of a baseline level
 *   core/predict.h   a curve predicted from telemetry (ridge and physics models)
 *   core/probe.h     a curve estimated from the baseline and one or two short probes
 *   core/alloc.h     power caps for many jobs under a budget (exact solver, workspaces)
 *   core/alloc_curve.h  allocation jobs from curves
 *   core/policy.h    the allocation policies (equal, pfi, oracle, proportional)
 *   core/err.h       pfi_code and pfi_err, the one error type of every function
 *
 * Build with `pkg-config --cflags --libs pfi` (or --static for libpfi.a).  Every function is
 * reentrant and touches no global state; errors come back as a pfi_code and a message in the
 * caller's pfi_err. */
#ifndef PFI_PFI_H
#define PFI_PFI_H

#ifdef __cplusplus
extern "C" {
#endif

#include "core/err.h"
#include "core/run.h"
#include "core/curve.h"
#include "core/pfi.h"
#include "core/features.h"
#include "core/predict.h"
#include "core/probe.h"
#include "core/alloc.h"
#include "core/alloc_curve.h"
#include "core/policy.h"

#ifdef __cplusplus
}
#endif

#endif
