/* SPDX-License-Identifier: Apache-2.0 */
/* perseus.h: the rows of the Perseus (SOSP '24) artifact's power-limit sweeps
 * (zeus_baseline/<GPU>/zeus_global.csv and zeus_local.csv, see
 * $PFI_DATA_DIR/perseus-sosp24/SOURCE.md), parsed once here for both their readers: the
 * importer (store/import_perseus.c), which makes runs of them, and the simulator's validation
 * (study/sim_validate.h), which needs each row's raw time and energy.  Every error names the
 * file and the line. */
#ifndef PFI_STORE_PERSEUS_H
#define PFI_STORE_PERSEUS_H

#include "core/err.h"
#include "core/run.h"

#define PFI_PERSEUS_MAX_STAGES 64

/* One row: one job configuration measured at one set of stage power limits. */
typedef struct pfi_perseus_row {
    char model[PFI_NAME_MAX], partition[256];
    int batch, dp, tp, pp, mbs, nmb;        /* batch size, parallelism, microbatch size, count */
    double time_s, energy_j;                /* one iteration, all GPUs */
    double limit_w[PFI_PERSEUS_MAX_STAGES]; /* power_limit_<stage>; 0: unused or absent */
    double cap_w;   /* PFI_PERSEUS_GLOBAL: the row's one limit; else 0 */
    int line;       /* where the row begins in the file */
} pfi_perseus_row;

typedef struct pfi_perseus pfi_perseus;

/* A ZeusGlobal file: every used stage of a row has the same limit (checked, into cap_w). */
#define PFI_PERSEUS_GLOBAL 1

/* Opens path and checks its header (the columns every row needs, power_limit_<i> among them). */
int pfi_perseus_open(const char *path, int flags, pfi_perseus **out, pfi_err *err);
/* The next row: PFI_OK, PFI_CSV_END (store/csv.h) after the last, or an error. */
int pfi_perseus_next(pfi_perseus *p, pfi_perseus_row *row, pfi_err *err);
void pfi_perseus_close(pfi_perseus *p);
/* After PFI_CSV_END: the line the file ended inside of, else 0 (pfi_csv_unterminated). */
int pfi_perseus_unterminated(const pfi_perseus *p);

#endif
