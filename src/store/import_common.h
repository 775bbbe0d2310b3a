/* import_common.h: what the three public-dataset importers share: where the data lives, what
 * is known about each GPU and model, building a run level by level, and writing a whole
 * import in one transaction. */
#ifndef PFI_STORE_IMPORT_COMMON_H
#define PFI_STORE_IMPORT_COMMON_H

#include <stddef.h>

#include "store/store.h"

/* dir when given, else pfi_data_dir()/sub; into buf. */
const char *pfi_import_dir(const char *dir, const char *sub, char *buf, size_t n);

/* Starts a run: zeroed, NAN limits/params, meta unknown (-1/0), then the GPU's device limits
 * and the model's family and size where the project knows them.  moe = 0 and ep = 1: every
 * public workload here is a dense model. */
void pfi_import_run_init(pfi_run *r, const char *source, const char *gpu_type, const char *model);

/* Appends a level measured at cap_w; refuses a second level at the same cap (a duplicated
 * row) or more than PFI_MAX_LEVELS.  where: "FILE line N" for the message. */
int pfi_import_add_level(pfi_run *r, const pfi_level *lv, const char *where, pfi_err *err);
/* A level with every telemetry field NAN: what the public files do not have. */
void pfi_import_level_init(pfi_level *lv, double cap_w, double power_w, double tput);

/* The runs of one import, written together. */
typedef struct pfi_import_run {
    pfi_run run;
    char unit_label[48];
    char *config_json; /* malloc'ed */
} pfi_import_run;

typedef struct pfi_import_set {
    pfi_import_run *v;
    int n, cap;
} pfi_import_set;

/* Returns a new zeroed slot, or NULL when out of memory. */
pfi_import_run *pfi_import_set_add(pfi_import_set *set);
void pfi_import_set_free(pfi_import_set *set);
/* Writes every run in one transaction (replacing runs of the same source and name). */
int pfi_import_set_write(pfi_store *st, const pfi_import_set *set, int *nruns, int *nlevels,
                         pfi_err *err);

#endif
