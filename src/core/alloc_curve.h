/* alloc_curve.h: the one conversion from a job's curve (core/curve.h) to the allocator's arrays
 * (core/alloc.h), agreed with the PFI code: the allocator reads pfi_curve_tput_at_cap().
 *   measured curves  the measured caps themselves: the curve is linear in the cap between
 *                    measured levels (paper.md), so those points represent it exactly, and the
 *                    cap range is what was measured;
 *   fitted/predicted a grid of at most PFI_ALLOC_CURVE_PTS caps over the cap range (the fit is
 *                    smooth; 10 W between points on a 200-700 W GPU).
 * Throughput is the run's unit (t0 * T/T0), or GPU-weighted relative throughput n * T/T0 for
 * populations without tokens/s (paper.md).  Pure. */
#ifndef PFI_CORE_ALLOC_CURVE_H
#define PFI_CORE_ALLOC_CURVE_H

#include "core/alloc.h"
#include "core/curve.h"

#define PFI_ALLOC_CURVE_PTS 64

/* Storage for one job's arrays; pfi_alloc_job points into it, so it must outlive the job. */
typedef struct pfi_alloc_curve {
    double cap_w[PFI_ALLOC_CURVE_PTS];
    double tput[PFI_ALLOC_CURVE_PTS];
} pfi_alloc_curve;

/* Fills *job (id not copied; SLA none; weight 1) from curve c read through `view`
 * (PFI_VIEW_*).  relative: GPU-weighted relative throughput.  The cap range is the curve's,
 * narrowed to [min_cap_w, max_cap_w] when those are > 0 (e.g. a predicted curve kept inside
 * what was measured). */
int pfi_alloc_job_from_curve(const pfi_curve *c, int view, int relative, const char *id,
                             double min_cap_w, double max_cap_w, pfi_alloc_curve *buf,
                             pfi_alloc_job *job, pfi_err *err);

/* A predicted curve (its parametric fit) read through a measured draw ratio: a GPU capped below
 * its baseline draw P0 draws rho x its cap (rho = draw / cap measured at a probe; 1 when no
 * probe: the cap binds exactly).  Jobs seldom draw their whole cap (A100 pipelines draw ~93%),
 * and reading a fit at r = 1 - cap/P0 then overstates throughput at every cap. */
int pfi_alloc_job_from_prediction(const pfi_curve *pred, double rho, int relative,
                                  const char *id, double min_cap_w, double max_cap_w,
                                  pfi_alloc_curve *buf, pfi_alloc_job *job, pfi_err *err);

#endif
