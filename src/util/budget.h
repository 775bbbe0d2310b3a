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
/* The watts of b against reference_w (the sum the command's shares are of): a share of a
 * reference that is not positive and finite is PFI_ESTATE ("budget 'S': no REF_NAME known to
 * take a share of"). */
int pfi_budget_watts(const pfi_budget *b, const char *s, double reference_w, const char *ref_name,
                     double *watts, pfi_err *err);
/* A comma-separated list of cuts (pfi evaluate, study and bench pergpu --cuts), each item a
 * budget of the jobs' baseline draw as a share (70%: a cut of 0.3) or a cut (cut=30%, -30%), or a
 * bare fraction (0.3: a cut of 0.3, the list's own older form).  So 70% is the same budget here
 * as in every other command.  Into cuts[] as fractions of the reference; watts, an item out of
 * range and bad text are refused with the message of pfi_budget_parse (PFI_EINVAL or
 * PFI_ERANGE), *n then unspecified. */
int pfi_budget_parse_cuts(const char *s, double *cuts, int max_n, int *n, pfi_err *err);
/* "70% of 5600 W (REF_NAME)" or "4000 W" into buf: how a command says what it took. */
const char *pfi_budget_describe(const pfi_budget *b, double reference_w, const char *ref_name,
                                char *buf, size_t size);

#endif
