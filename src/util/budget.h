/* SPDX-License-Identifier: Apache-2.0 */
/* budget.h: the one grammar of a power budget, for every command and API that takes one
 * (pfi allocate, serve, ctl, cluster, event; pfi help budget, README.md "Budgets"):
 *   4000W, 4000, 4kW, 0.004MW   watts
 *   70%                         70% of a reference the command names and prints
 *   cut=30%, -30%               a 30% cut: the same as 70%
 * Reading the text needs no reference; turning a share into watts does (pfi_budget_watts). */
#ifndef PFI_UTIL_BUDGET_H
#define PFI_UTIL_BUDGET_H

#include <stddef.h>

#include "core/err.h"

/* Watts above this are refused as absurd (a typo, 1e308). */
#define PFI_BUDGET_MAX_W 1e9

typedef struct pfi_budget {
    int is_share; /* 1: share of a reference; 0: watts */
    double value; /* watts in (0, PFI_BUDGET_MAX_W], or a share in (0, 1] */
} pfi_budget;

/* Parses s (see above).  Bad text is PFI_EINVAL, a value out of range PFI_ERANGE; every message
 * starts with "budget 'S': ".  On error *b is untouched. */
int pfi_budget_parse(const char *s, pfi_budget *b, pfi_err *err);
/* The watts of b against reference_w (the sum the command's shares are of; a share rounded
 * down to the milliwatt, so that 70% of 5600 W is 3920, not 3919.9999999999995): a share of a
 * reference that is not positive and finite is PFI_ESTATE ("budget 'S': no REF_NAME known to
 * take a share of"). */
int pfi_budget_watts(const pfi_budget *b, const char *s, double reference_w, const char *ref_name,
                     double *watts, pfi_err *err);
/* A comma-separated list of cuts (pfi evaluate, study and bench pergpu --cuts), each item a cut
 * in the budget grammar (cut=30%, -30%) or a bare fraction (0.3, the list's own older form).
 * A bare share (30%) is refused, naming both readings: before this list took budgets "30%" was
 * a 30% cut, and as a budget it is a 70% one, so neither is taken silently.  Into cuts[] as
 * fractions of the reference; a share, watts, an item out of range, a cut given twice (within
 * 1e-9) and bad text are refused (PFI_EINVAL or PFI_ERANGE, every message starting "budget
 * 'ITEM': "), *n then unspecified. */
int pfi_budget_parse_cuts(const char *s, double *cuts, int max_n, int *n, pfi_err *err);
/* "70% of 5600 W (REF_NAME)" or "4000 W" into buf: how a command says what it took. */
const char *pfi_budget_describe(const pfi_budget *b, double reference_w, const char *ref_name,
                                char *buf, size_t size);

#endif
