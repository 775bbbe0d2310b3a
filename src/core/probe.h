/* SPDX-License-Identifier: Apache-2.0 */
/* probe.h: a job's curve from its baseline plus one or two short probes at reduced caps,
 * for operators who accept a probe but not a sweep.
 *
 * A probe at depth d sets the cap to (1 - d) x the baseline draw P0 (so the job sheds about d
 * of its power whether or not its baseline draw reached its cap) and reads the slowdown there.
 * One probe: the power law s = a r^b through the origin and the probe, with b from a prior
 * (the median exponent over reference curves).  Two probes: a and b both from the probes (b
 * clamped to the family's range).  The default depth, 0.40, is where one probe predicted the
 * real public transformer curves best over 80, 70 and 60% of baseline power (the largest of
 * the three median errors is least there: `pfi model probe-eval --scan`, docs/pfi.md).
 * For allocation, one probe is better read through the population's SHAPE (pfi_probe_shape_
 * curve): the power law through the origin misplaces where real curves bend (docs/allocation.md).
 * Pure: no I/O, no globals. */
#ifndef PFI_CORE_PROBE_H
#define PFI_CORE_PROBE_H

#include "core/curve.h"
#include "core/err.h"

/* The prior exponent: median of the power-law exponents of the real public transformer curves
 * (`pfi model probe-eval` recomputes it, leaving the scored run out). */
#define PFI_PROBE_B_PRIOR 2.0
#define PFI_PROBE_DEPTH 0.40

/* The cap to set for a probe at depth d, within [min_cap_w, max_cap_w]. */
double pfi_probe_cap(double p0_w, double depth, double min_cap_w, double max_cap_w);

/* Power law through the origin and the probes (r[i], s[i]), n = 1 or 2.  b_prior is used for
 * one probe, and for two when they cannot fix b (same depth, or no slowdown at either). */
int pfi_probe_fit(const double *r, const double *s, int n, double b_prior, pfi_fit *out,
                  pfi_err *err);

/* Simulates probing a measured curve: picks the measured level whose cap is nearest each
 * probe cap (pfi_probe_cap at depths[i]), fits from those levels only, and returns the
 * predicted curve (same baseline and cap range).  *used (may be NULL) gets the indices of the
 * levels used, so an evaluation never scores a probe on itself. */
int pfi_probe_curve(const pfi_curve *truth, const double *depths, int n, double b_prior,
                    pfi_curve *out, int *used, pfi_err *err);

/* The median power-law exponent of fitted curves (ignores those with fewer than 2 shed
 * points or a zero scale).  NAN when none. */
double pfi_probe_median_b(const pfi_curve *curves, int n, int skip);

/* What one probe measures on a job, and all a one-probe estimate may use of it: the baseline,
 * the cap range the job may get, and the probe level (cap, draw, relative throughput). */
typedef struct pfi_probe_obs {
    double t0, p0_w, cap0_w, min_cap_w, max_cap_w;
    int n_gpus;
    double cap_w, draw_w, rel; /* the probe */
} pfi_probe_obs;

/* The probe at `depth` on a measured curve: the level nearest pfi_probe_cap (never the
 * baseline), as pfi_probe_curve picks it.  *used (may be NULL) gets that level's index. */
int pfi_probe_observe(const pfi_curve *truth, double depth, pfi_probe_obs *out, int *used,
                      pfi_err *err);

/* How caps of different jobs are compared: as cap/max_cap (watts of the same hardware; the
 * default: a GPU's clocks collapse near a cap in watts whatever the job draws) or as cap/P0. */
enum { PFI_PROBE_SPACE_MAXCAP = 0, PFI_PROBE_SPACE_P0 = 1 };

/* Neighbours a shape estimate takes from the population (`pfi evaluate --public` recovers
 * about as much from 5 to 12, less from 20 on: docs/allocation.md). */
#define PFI_PROBE_SHAPE_K 8

typedef struct pfi_probe_shape_opts {
    int k;     /* neighbours (< 1: PFI_PROBE_SHAPE_K) */
    int space; /* PFI_PROBE_SPACE_* */
    /* weight of the draw/cap at the probe's cap in the distance to a reference (0: slowdown
     * only): a job that draws well below a cap sheds less there than one that draws all of it,
     * and the probe measures its draw anyway */
    double w_draw;
    /* how the neighbours' steps are combined: PFI_PROBE_VOTES_EQUAL (0), their median, or
     * PFI_PROBE_VOTES_NEAR, their median weighted by 1 / (distance + PFI_PROBE_VOTE_FLOOR),
     * the distance the neighbours are chosen by: the nearest has the most say */
    int votes;
    /* what the walk adds up: PFI_PROBE_SCALE_SLOWDOWN (0), steps in slowdown s = 1 - rel, or
     * PFI_PROBE_SCALE_TIME, steps in extra time u = 1/rel - 1 = s / (1 - s) (pfi_probe_to_time):
     * an iteration is the part bound by the SM clock, stretched by the clock a cap costs the
     * GPU, plus the rest, so on one GPU jobs' u differ by a factor (their clock-bound shares),
     * which the probe measures; their s do not (s = u / (1 + u) bends).  The neighbours are
     * chosen alike in both (by slowdown at the probe's cap). */
    int scale;
    /* weight of the baseline draw share P0 / max_cap in the neighbour distance (0: not used):
     * how much of its limit a job draws uncapped says where its curve starts to bend and how
     * hard it presses on the limit; two jobs alike at the probe's cap but from different knees
     * have different slopes around it */
    double w_p0;
    /* 1: the walk (amplitude 0 or not, in its scale) is drawn toward the typical shape of the
     * references of the neighbours' tier by how far the neighbours are from the probe against
     * how far that tier is (pfi_probe_shrink_weight): where no reference is much like the job
     * (a model the library has never seen), the hardware's shape says more than a few other
     * models'; 0: the walk alone.  Single walks only: the hedged and stacked readings do not
     * read it. */
    int shrink;
} pfi_probe_shape_opts;

/* The shrunk walk's weight on the tier's typical shape: dn / (dn + dt), dn the mean distance of
 * the chosen neighbours to the probe, dt that of every reference of their tier (the nearest's)
 * measured at the probe's cap; 0 when both are 0.  Neighbours no nearer than their tier on
 * average get 1/2; neighbours much nearer, little. */
double pfi_probe_shrink_weight(double dn, double dt);

enum { PFI_PROBE_VOTES_EQUAL = 0, PFI_PROBE_VOTES_NEAR = 1 };
enum { PFI_PROBE_SCALE_SLOWDOWN = 0, PFI_PROBE_SCALE_TIME = 1 };
/* The slowdown above which extra time is held (u at most 19): beyond it 1/rel runs off to
 * infinity and a point of slowdown would weigh more than twenty at the top of the range. */
#define PFI_PROBE_TIME_SMAX 0.95

/* Extra time u = s / (1 - s) of a slowdown s clamped to [0, PFI_PROBE_TIME_SMAX], and back:
 * s = u / (1 + u) of u clamped at 0 from below (NAN stays NAN). */
double pfi_probe_to_time(double s);
double pfi_probe_from_time(double u);
/* One point of slowdown, the noise of a measured slowdown: neighbours nearer than that are not
 * more alike, so their weights differ little. */
#define PFI_PROBE_VOTE_FLOOR 0.01

/* The weighted median of v[0..n-1] with weights w (> 0; NULL: equal, the plain median): the
 * smallest v whose cumulative weight reaches half the total, averaged with the next when it
 * reaches exactly half (so equal weights give the median).  Sorts v and w together in place;
 * NAN when n <= 0. */
double pfi_probe_weighted_median(double *v, double *w, int n);

/* The amplitude ratio's clamp (beyond a factor 2 a reference is not of the job's shape), and
 * the slowdown at the probe's cap below which the ratio is noise (taken as 1). */
#define PFI_PROBE_AMP_MIN 0.5
#define PFI_PROBE_AMP_MAX 2.0
#define PFI_PROBE_AMP_FLOOR 0.01

/* The factor a neighbour's steps are multiplied by (pfi_probe_shape_rescaled's amp): the probe's
 * slowdown s_probe over the neighbour's s_ref at the probe's cap, clamped to
 * [PFI_PROBE_AMP_MIN, PFI_PROBE_AMP_MAX], to the power amp; 1 when amp is 0 or either slowdown
 * is below PFI_PROBE_AMP_FLOOR. */
double pfi_probe_amp_factor(double s_probe, double s_ref, double amp);

/* A job's WHOLE curve in cap space from one probe and the measured curves of OTHER jobs:
 * among the references refs[i] with use[i] != 0 (use NULL: all; a higher use[i] is a closer
 * tier, e.g. the same GPU model, taken before any lower one), the k whose slowdown at the
 * probe's cap is nearest the probe's.  From the probe, the curve is walked down to the job's
 * minimum cap and up to its maximum on a grid, each step the neighbours' median step between
 * the same two caps (weighted by nearness with so->votes PFI_PROBE_VOTES_NEAR): through the probe exactly, with the neighbours' typical slope.  Knees (no slowdown until the cap binds at
 * the job's draw), jobs
 * that shed nothing at the probe, and the collapse near a GPU's minimum come from the
 * references, not from a curve family.  The caller must leave the job itself (and anything
 * measured from it) out of use.  *out is a predicted curve with points on a grid of the
 * job's cap range (cap, draw = min(cap, P0), rel = rel_mono), read in cap space
 * (PFI_VIEW_MONOTONE); its fit is empty (s = 0).  so NULL: defaults. */
int pfi_probe_shape_curve(const pfi_probe_obs *obs, const pfi_curve *refs,
                          const unsigned char *use, int nref, const pfi_probe_shape_opts *so,
                          pfi_curve *out, pfi_err *err);

/* pfi_probe_shape_curve with each neighbour's steps rescaled by the probe: times
 * pfi_probe_amp_factor(probe's slowdown, the neighbour's at the probe's cap, amp), both in the
 * walk's scale (so->scale: slowdown, or extra time, where amp 1 is the clock-share model).  amp 0 is
 * pfi_probe_shape_curve; 1 reads the job as its neighbours' shape scaled by a factor (on one
 * GPU model the clock lost to a cap in watts is the hardware's; how much a job slows for it is
 * the job's own share, so curves differ by a factor more than by an offset); between, the
 * ratio to the power amp. */
int pfi_probe_shape_rescaled(const pfi_probe_obs *obs, const pfi_curve *refs,
                             const unsigned char *use, int nref, const pfi_probe_shape_opts *so,
                             double amp, pfi_curve *out, pfi_err *err);

/* The mean relative throughput of pfi_probe_shape_rescaled over `nm` settings (same probe,
 * references, tiers and amp): a committee of neighbour counts and draw weights, whose curve
 * moves less from one job to the next than any single member's (docs/allocation.md).  *out is
 * as pfi_probe_shape_curve's, its rel and rel_mono the members' mean. */
int pfi_probe_shape_mean(const pfi_probe_obs *obs, const pfi_curve *refs,
                         const unsigned char *use, int nref, const pfi_probe_shape_opts *members,
                         int nm, double amp, pfi_curve *out, pfi_err *err);

/* The references' relative throughput made monotone in the cap (isotonic regression in cap
 * order), as the shape estimates read them: iso[i * PFI_CURVE_MAX_PTS + l], reference i's
 * level l (references with fewer than 2 or more than PFI_CURVE_MAX_PTS levels left alone).
 * Made once for many estimates over the same references, it spares each of them the work. */
void pfi_probe_refs_iso(const pfi_curve *refs, int nref, double *iso);

/* pfi_probe_shape_mean on iso from pfi_probe_refs_iso (NULL: made for each estimate): the same
 * curve. */
int pfi_probe_shape_mean_iso(const pfi_probe_obs *obs, const pfi_curve *refs, const double *iso,
                             const unsigned char *use, int nref,
                             const pfi_probe_shape_opts *members, int nm, double amp,
                             pfi_curve *out, pfi_err *err);

/* The readings a hedged estimate averages (pfi_probe_shape_hedged_iso): amplitude
 * {0, 1/2, 1} x the walk's scale {slowdown, extra time}, in that order. */
#define PFI_PROBE_HEDGE_N 6
extern const double pfi_probe_hedge_amp[PFI_PROBE_HEDGE_N];
extern const int pfi_probe_hedge_scale[PFI_PROBE_HEDGE_N];

/* The hedged walk: the mean relative throughput of pfi_probe_shape_mean_iso over the
 * PFI_PROBE_HEDGE_N readings of how a job relates to its neighbours' shape (an offset, half a
 * factor or a factor on their steps, each in slowdown and in extra time), every member's
 * scale set to the reading's.  Which reading a job follows is a property of its model (how much
 * of an iteration the SM clock bounds) that one probe does not show, and the measured curves
 * follow none exactly: averaging them has less variance than choosing one on a few model
 * groups, and never takes the extreme one.  *out is as pfi_probe_shape_curve's. */
int pfi_probe_shape_hedged_iso(const pfi_probe_obs *obs, const pfi_curve *refs, const double *iso,
                               const unsigned char *use, int nref,
                               const pfi_probe_shape_opts *members, int nm, pfi_curve *out,
                               pfi_err *err);

/* The stacked walk: pfi_probe_shape_hedged_iso with each member's six readings weighted, job by
 * job, by how well each predicts the job's own neighbours (pfi_probe_stack_weights), instead of
 * equally; then the members averaged.  The neighbours were chosen by the job's probe alone, and
 * each is predicted from the OTHER neighbours only, so nothing of the job but its probe is read:
 * a reading that transfers well between the job's neighbours is the likelier to transfer to the
 * job.  *out is as pfi_probe_shape_curve's. */
int pfi_probe_shape_stacked_iso(const pfi_probe_obs *obs, const pfi_curve *refs, const double *iso,
                                const unsigned char *use, int nref,
                                const pfi_probe_shape_opts *members, int nm, pfi_curve *out,
                                pfi_err *err);

/* What one member of a committee gives an estimate, for a caller that scores many settings
 * sharing members (the same probe, references, tiers and member): computed once, combined
 * again.  unit[PFI_PROBE_MEMBER_N]: with hedge 0, the first PFI_CURVE_MAX_PTS values are the
 * member's walk (pfi_probe_shape_rescaled's rel_mono at amp); with hedge 1, the six readings'
 * curves (reading h at h * PFI_CURVE_MAX_PTS); with hedge 2, those and then the stack's six
 * weights (pfi_probe_stack_weights).  The rest is left as it is. */
#define PFI_PROBE_MEMBER_N (PFI_PROBE_HEDGE_N * PFI_CURVE_MAX_PTS + PFI_PROBE_HEDGE_N)
int pfi_probe_member_unit(const pfi_probe_obs *obs, const pfi_curve *refs, const double *iso,
                          const unsigned char *use, int nref, const pfi_probe_shape_opts *so,
                          double amp, int hedge, double *unit, pfi_err *err);

/* The estimate of nm >= 1 members from their units (units + m * PFI_PROBE_MEMBER_N, in member
 * order): bit for bit pfi_probe_shape_mean_iso's curve (hedge 0), pfi_probe_shape_hedged_iso's
 * (1) or pfi_probe_shape_stacked_iso's (2) for those members, which are computed this way. */
void pfi_probe_members_combine(const pfi_probe_obs *obs, const double *units, int nm, int hedge,
                               pfi_curve *out);

/* The stacked walk's weights of one member so (its scale unused) into w[PFI_PROBE_HEDGE_N]: for
 * each reading h, 1 / (mean squared error + 1e-4), the mean over the job's neighbours a of the
 * mean squared slowdown error, on the job's grid caps where both are known, of reading h
 * predicting a's curve when a is probed at the job's probe cap (its own slowdown there) and
 * walked with the OTHER neighbours (with near votes, weighted by nearness to a's slowdown
 * there); 1 for every reading when no neighbour's error is known.  iso as
 * pfi_probe_shape_mean_iso's. */
int pfi_probe_stack_weights(const pfi_probe_obs *obs, const pfi_curve *refs, const double *iso,
                            const unsigned char *use, int nref, const pfi_probe_shape_opts *so,
                            double *w, pfi_err *err);

#endif
