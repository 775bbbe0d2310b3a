/* SPDX-License-Identifier: Apache-2.0 */
/* codec.h: a job's power->throughput curve, and a job of a jobs file, as JSON spells them: the
 * field names and their types are read and written here only.
 *
 * Two spellings of a curve are in use, each where it always was:
 *   arrays  {"cap_w": [...], "tput": [...]}: per-GPU caps, the whole job's throughput at each;
 *           jobs files (docs/jobs-format.md) and the cluster controller read it;
 *   points  {"points": [{"cap_w", "tokens_per_s" or "rel", "draw_w"}, ...], "t0", "p0_w",
 *           "cap0_w", "min_cap_w", "max_cap_w", "n_gpus", "r_max",
 *           "fit": {"family", "p": [...]}}: the node daemon's API (docs/api.md), which takes
 *           and reports curves so; the cluster controller reads it back (a point's throughput
 *           as "tput" or "rel" there).
 * pfi_curve_json_read takes what a curve object holds without judging it; each reader then
 * applies its own rules: jobs files are strict about the arrays (pfi_curve_json_arrays), the
 * daemon about the fit (pfi_curve_json_fit) and its points, the controller keeps what it can
 * use of whatever a daemon said.  Messages name the field, so a person can fix the document. */
#ifndef PFI_STORE_CODEC_H
#define PFI_STORE_CODEC_H

#include <stddef.h>

#include <jansson.h>

#include "core/alloc_set.h"
#include "core/curve.h"

/* One point of the points spelling; NAN where the field is absent or not a number. */
typedef struct pfi_curve_json_point {
    double cap_w, tokens_per_s, tput, rel, draw_w;
} pfi_curve_json_point;

/* What a curve object holds.  Borrowed from the JSON read: valid while it lives. */
typedef struct pfi_curve_json {
    int is_object;
    size_t n_cap, n_tput;  /* lengths of "cap_w" and "tput" (0: absent or not an array) */
    int has_arrays;        /* both are arrays */
    size_t n_points;       /* length of "points" (0: absent or not an array) */
    double t0, p0_w, cap0_w, min_cap_w, max_cap_w, r_max; /* NAN: absent or not a number */
    int has_n_gpus, n_gpus; /* "n_gpus" when it is an integer */
    int has_fit;            /* "fit" is an object */
    const char *family;     /* fit.family when it is a string, else NULL */
    int n_p;                /* length of fit.p (-1: not an array) */
    double p[3];            /* its first three, 0 where not a number or absent */
    int p_bad;              /* first k < min(n_p, 3) not a finite number; -1: none */
    json_t *cap_a, *tput_a, *points;
} pfi_curve_json;

void pfi_curve_json_read(json_t *c, pfi_curve_json *out);
/* Point i (< n_cap and < n_tput) of the arrays spelling: 1 when both are numbers (a value that
 * is not reads 0). */
int pfi_curve_json_pair_at(const pfi_curve_json *c, size_t i, double *cap_w, double *tput);
/* Point i < n_points of the points spelling. */
void pfi_curve_json_point_at(const pfi_curve_json *c, size_t i, pfi_curve_json_point *out);

/* The arrays spelling, strictly: both arrays, as long as each other, at most max points, all
 * numbers.  `what` names the curve in messages (`job a: "curve"`).  c NULL: no curve (*n 0). */
int pfi_curve_json_arrays(json_t *c, const char *what, int max, double *cap_w, double *tput,
                          int *n, pfi_err *err);
/* The fit of the points spelling, strictly: an object, a known family, its parameters (at most
 * three), all finite.  PFI_EINVAL naming the field (curve.fit.*). */
int pfi_curve_json_fit(const pfi_curve_json *c, pfi_fit *out, pfi_err *err);

/* The points spelling of a curve (NAN and infinities as null): what GET /v1/jobs reports. */
json_t *pfi_curve_json_encode(const pfi_curve *c);
/* The arrays spelling. */
json_t *pfi_curve_json_encode_arrays(const double *cap_w, const double *tput, int n);

/* ---- a job of a jobs file ---- */

/* Job `index` (0-based) of the jobs file at `path` into job j of s: id, GPU count, cap range
 * (default: the range of its curve), baseline draw (default: the top of the range), baseline
 * throughput, weight, SLA ("sla_max_slowdown"), PFI30, its true and predicted curves (at least
 * one), and in the per-GPU mode (s->pg) its per-GPU table, whose uniform sweep is its true curve
 * when it has none.  PFI_EINVAL naming the job and the field. */
int pfi_job_json_decode(json_t *o, const char *path, int index, pfi_alloc_set *s, int j,
                        pfi_err *err);
/* The same job read straight from its JSON text (one element of a jobs file), without a json_t,
 * when it is of the plain kind: an object of the fields above (no other key, none twice), a
 * printable-ASCII id without escapes, curves of just the two arrays, every value valid, not in
 * the per-GPU mode.  PFI_OK then (exactly what pfi_job_json_decode keeps of it), PFI_ENOMEM,
 * or PFI_JOB_TEXT_OTHER for anything else, bad values included: decode it as a json_t, which
 * says what is wrong. */
#define PFI_JOB_TEXT_OTHER 1
int pfi_job_text_decode(const char *text, size_t len, pfi_alloc_set *s, int j, pfi_err *err);
/* A job as a jobs file spells it: id, gpus, the numbers that are finite (weight and SLA
 * included), its curve when it has points, its predicted curve (pred may be NULL), PFI30 when
 * finite, its per-GPU table (pg may be NULL). */
json_t *pfi_job_json_encode(const pfi_alloc_job *job, const pfi_alloc_job *pred, double pfi30,
                            const pfi_pergpu_job *pg);

#endif
