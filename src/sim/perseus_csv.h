/* perseus_csv.h: the small CSV reader of the measured files the simulator is checked against
 * (the Perseus sweeps and stage profiles): a header row, RFC 4180 quotes, fixed-size cells.
 * (store/csv.h streams large imports; this one loads a whole small table for random access.) */
#ifndef PFI_SIM_PERSEUS_CSV_H
#define PFI_SIM_PERSEUS_CSV_H

#include "core/err.h"

#define PFI_SIM_CSV_MAX_COLS 32
#define PFI_SIM_CSV_MAX_ROWS 1024

typedef struct pfi_sim_csv {
    int ncols, nrows;
    char head[PFI_SIM_CSV_MAX_COLS][48];
    char cell[PFI_SIM_CSV_MAX_ROWS][PFI_SIM_CSV_MAX_COLS][64];
} pfi_sim_csv;

/* Reads path into *t (large: allocate it).  PFI_ENOENT when it cannot be opened, PFI_EINVAL
 * when empty, too long or a row has the wrong number of fields. */
int pfi_sim_csv_read(const char *path, pfi_sim_csv *t, pfi_err *err);
/* The index of column name, or -1. */
int pfi_sim_csv_col(const pfi_sim_csv *t, const char *name);

#endif
