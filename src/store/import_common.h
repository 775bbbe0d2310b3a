/* SPDX-License-Identifier: Apache-2.0 */
/* import_common.h: what the three public-dataset importers share: where the data lives, what
 * is known about each GPU and model, building a run level by level, and writing a whole
 * import in one transaction. */
#ifndef PFI_STORE_IMPORT_COMMON_H
#define PFI_STORE_IMPORT_COMMON_H

#include <stddef.h>

#include <jansson.h>

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
/* Sets r's GPU count dp x tp x pp and its meta dp, tp, pp; PFI_EINVAL naming where and the
 * three when the product passes the jobs file's bound of 10^6 GPUs (in an int it overflowed:
 * dp = tp = 65537 was stored as 131073 GPUs). */
int pfi_import_set_gpus(pfi_run *r, int dp, int tp, int pp, const char *where, pfi_err *err);
/* A level with every telemetry field NAN: what the public files do not have. */
void pfi_import_level_init(pfi_level *lv, double cap_w, double power_w, double tput);

/* The runs of one import, written together. */
typedef struct pfi_import_run {
    pfi_run run;
    char unit_label[48];
    char *config_json; /* malloc'ed */
    char origin[1024]; /* where the run comes from ("FILE line N", or FILE), for messages */
} pfi_import_run;

typedef struct pfi_import_set {
    pfi_import_run *v;
    int n, cap;
    /* pfi_import_name_taken's hash of v[0..named).run.name: slot i holds a run's index + 1,
     * 0 when free; nslot a power of two, kept at most half full. */
    int *slot;
    int nslot, named;
} pfi_import_set;

/* The keys of one file's rows, each of one size, and a hash of them (pfi_import_key_run): a
 * linear search per row made an import quadratic in its runs. */
typedef struct pfi_import_keys {
    char *keys; /* keys[k * size]: the key of run first + k */
    size_t size;
    int n, cap;
    int *slot; /* k + 1, 0 when free; nslot a power of two, at most half full */
    int nslot;
} pfi_import_keys;
void pfi_import_keys_free(pfi_import_keys *k);

/* After the last record of the file at path (line: pfi_csv_unterminated's answer): PFI_EINVAL
 * naming the file and line when it ended inside a line. */
int pfi_import_check_end(const char *path, int line, pfi_err *err);

/* Returns a new zeroed slot, or NULL when out of memory. */
pfi_import_run *pfi_import_set_add(pfi_import_set *set);
void pfi_import_set_free(pfi_import_set *set);
/* The run of one file whose key (size bytes, compared bytewise: zero it before filling) equals
 * key.  The file's runs are set->v[first..] and keys (zeroed before the file's first row, freed
 * with pfi_import_keys_free after its last) holds the key of each; a key not seen yet gets a
 * new run slot, *added = 1, for the caller to fill.  Returns the run's index, or -1 with err set
 * (naming path) when out of memory.  Constant time per row on average. */
int pfi_import_key_run(pfi_import_set *set, int first, pfi_import_keys *keys, const void *key,
                       size_t size, const char *path, int *added, pfi_err *err);
/* Stores cfg (taken, may be NULL) compactly as ir->config_json; where names the row when jansson
 * refused the text (not valid UTF-8). */
int pfi_import_set_config(pfi_import_run *ir, json_t *cfg, const char *where, pfi_err *err);

/* One CSV file of a dataset with a fixed list of files: its path below the dataset folder and
 * the GPU type it was measured on. */
typedef struct pfi_import_file {
    const char *rel, *gpu;
} pfi_import_file;

/* Reads one file (at path; rel names it in the run's config) into set. */
typedef int (*pfi_import_file_fn)(const char *path, const char *gpu_type, const char *rel,
                                  pfi_import_set *set, pfi_err *err);

/* Reads files[0..n) of the dataset in dir (default pfi_data_dir()/sub) with read_file into set,
 * opening no store; what: "import NAME" to prefix an error with. */
int pfi_import_files(const char *dir, const char *sub, const pfi_import_file *files, size_t n,
                     pfi_import_file_fn read_file, const char *what, pfi_import_set *set,
                     pfi_err *err);

/* One whole dataset into set (dir NULL or "": its folder under pfi_data_dir()), every file
 * parsed and checked before the caller opens a store (store.h: pfi_import_read). */
typedef int (*pfi_import_read_fn)(const char *dir, pfi_import_set *set, pfi_err *err);
int pfi_import_perseus_read(const char *dir, pfi_import_set *set, pfi_err *err);
int pfi_import_zeus_nsdi_read(const char *dir, pfi_import_set *set, pfi_err *err);
int pfi_import_zeus_plo_read(const char *dir, pfi_import_set *set, pfi_err *err);
/* read, then pfi_import_set_write: the store.h importers of one dataset. */
int pfi_import_read_write(pfi_store *st, const char *dir, pfi_import_read_fn read,
                          int *nruns, int *nlevels, pfi_err *err);

/* One file of each dataset into set (what the importers above read, exposed so that the
 * readers are tested on any bytes): a Perseus ZeusGlobal file, a Zeus NSDI trace file, and a
 * Zeus profiling log named <GPU>+<model>+gpu<i,j..>.csv in dir. */
int pfi_import_perseus_file(const char *path, const char *gpu_type, const char *rel,
                            pfi_import_set *set, pfi_err *err);
int pfi_import_zeus_nsdi_file(const char *path, const char *gpu_type, const char *rel,
                              pfi_import_set *set, pfi_err *err);
int pfi_import_zeus_plo_file(const char *dir, const char *file, pfi_import_set *set,
                             pfi_err *err);

/* Refuses a set in which two runs have the same name, naming both origins (the first run that
 * repeats an earlier one's name, and that one): the second would replace the first as it is
 * written (pfi_store_write_imported replaces by source and name).  n log n: sorted. */
int pfi_import_set_check_names(const pfi_import_set *set, pfi_err *err);
/* PFI_EINVAL naming where when len (what snprintf returned making r->name) is past what a run
 * name holds: cut, it lost its distinguishing end (a perseus run its ' dp1tp1pp8'). */
int pfi_import_name_fits(const pfi_run *r, int len, const char *where, pfi_err *err);
/* 1 when a run of set->v[0..before) is named name; -1 when out of memory.  The names of those
 * runs must not change afterwards (they are hashed as they are first asked about). */
int pfi_import_name_taken(pfi_import_set *set, int before, const char *name);

/* Writes every run in one transaction (replacing runs of the same source and name from earlier
 * imports).  The caller has checked the names first (pfi_import_set_check_names), before the
 * store's write lock is taken (checked in here, it ran under that lock). */
int pfi_import_set_write(pfi_store *st, const pfi_import_set *set, int *nruns, int *nlevels,
                         pfi_err *err);

#endif
