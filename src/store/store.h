/* SPDX-License-Identifier: Apache-2.0 */
/* store.h: the SQLite store of characterized runs.  Read this first if you write or read runs.
 *
 * One database file (`--db FILE`, default $PFI_DB, else "pfi.db") holds:
 *   jobs       what was run: command line, configuration (JSON), tags (JSON object)
 *   runs       one characterization of a job on some GPUs: backend, GPU type and count,
 *              throughput unit, device limits, source, start/end time, status, job metadata
 *   levels     one row per power limit measured: every field of core/run.h's pfi_level
 *   telemetry  downsampled per-GPU samples (hw/hw.h's pfi_sample) behind each level
 *
 * Writing a sweep (the measure layer):
 *     pfi_store_open(path, PFI_STORE_CREATE, &st, err);
 *     pfi_store_create_job(st, command, config_json, tags, ntags, &job, err);
 *     pfi_store_create_run(st, job, &run_header, "nvml", &run, err);   // status "running"
 *     for each level:
 *         pfi_store_level_begin(st, err);                              // one transaction
 *         pfi_store_add_level(st, run, &level, &level_id, err);
 *         for each GPU: pfi_store_add_samples(st, level_id, gpu, samples, n, 1.0, err);
 *         pfi_store_level_commit(st, err);     // or pfi_store_level_abort(st) on failure
 *     pfi_store_finish_run(st, run, "done", err);
 * A crash between begin and commit loses only that level; everything committed before stays.
 * A run whose process died keeps status "running" with the levels it committed.
 *
 * Reading: pfi_store_list_runs, pfi_store_find_run ("12" or a run name), pfi_store_load_run
 * (fills a pfi_run, the model every layer above works on), pfi_store_load_telemetry.
 *
 * Schema versions: PRAGMA user_version is the store's own schema version; opening a file
 * written by a newer pfi is refused (PFI_ESTATE) rather than guessed at.  Other tables in the
 * same file (the node daemon's audit log, store/audit.h) are brought up to date through
 * pfi_store_migrate_layer: each layer has its own ordered list of steps and its own version in
 * table schema_layers, so they never collide with the store's numbering.
 *
 * Errors: a locked database (another writer past the busy timeout) is PFI_EBUSY with a message
 * naming the file; a missing file opened without PFI_STORE_CREATE is PFI_ENOENT. */
#ifndef PFI_STORE_STORE_H
#define PFI_STORE_STORE_H

#include "core/err.h"
#include "core/run.h"
#include "hw/hw.h"

typedef struct pfi_store pfi_store;

/* The store schema version this build writes (PRAGMA user_version). */
#define PFI_STORE_SCHEMA_VERSION 3

/* Open flags. */
#define PFI_STORE_CREATE   0x1 /* create the file if it does not exist */
#define PFI_STORE_READONLY 0x2 /* never write; an out-of-date schema is an error, not migrated */

/* Default busy timeout: how long a write waits for another writer before PFI_EBUSY
 * ($PFI_DB_BUSY_MS overrides it at open). */
#define PFI_STORE_BUSY_MS 5000

/* $PFI_DB if set and non-empty, else "pfi.db". */
const char *pfi_store_default_path(void);

/* Opens (and creates / migrates to PFI_STORE_SCHEMA_VERSION) the database at path.  WAL mode,
 * foreign keys on, busy timeout PFI_STORE_BUSY_MS. */
int pfi_store_open(const char *path, int flags, pfi_store **out, pfi_err *err);
void pfi_store_close(pfi_store *st);
void pfi_store_set_busy_timeout(pfi_store *st, int ms);
const char *pfi_store_path(const pfi_store *st);
/* PFI_EINVAL naming both when path is the store's own file or its -wal, -shm or -journal
 * (the same device and inode: another spelling of the path, a hard or a symbolic link), else
 * PFI_OK (also when path does not exist).  An output written there (pfi runs export --out
 * pfi.db) replaced the database with its own export. */
int pfi_store_check_not_own(const pfi_store *st, const char *path, pfi_err *err);
/* Version found in the file (after migration: PFI_STORE_SCHEMA_VERSION). */
int pfi_store_schema_version(const pfi_store *st);

/* ---- other layers' tables ---- */

/* One schema step of a layer: SQL run once, in order, inside the layer's migration
 * transaction.  Step i (0-based) brings the layer to version i+1. */
typedef struct pfi_store_step {
    const char *sql;
} pfi_store_step;

/* Applies the steps of `layer` ("serve", ...) not applied yet, all in one transaction.  Refuses
 * (PFI_ESTATE) when the file records a newer version of that layer than nsteps. */
int pfi_store_migrate_layer(pfi_store *st, const char *layer, const pfi_store_step *steps,
                            int nsteps, pfi_err *err);
/* Version of a layer recorded in the file (0 when never migrated). */
int pfi_store_layer_version(pfi_store *st, const char *layer, int *version, pfi_err *err);

/* ---- writing ---- */

/* command: the launched command line as one string (NULL for imported data); config_json: a
 * JSON object text (NULL = "{}"); tags: ntags strings "KEY=VALUE" (stored as a JSON object). */
int pfi_store_create_job(pfi_store *st, const char *command, const char *config_json,
                         const char *const *tags, int ntags, long long *job_id, pfi_err *err);

/* PFI_OK when the run's name, source, GPU type, model and family are printable text (valid
 * UTF-8 without a control character, util/text.h), else PFI_EINVAL naming the field and the
 * byte.  Every run written is checked (created, saved or imported), so that a JSON writer never
 * has to drop one and a table never sends a terminal its escapes. */
int pfi_store_check_run_text(const pfi_run *r, pfi_err *err);

/* Creates a run from the header fields of *run (name, source, gpu_type, n_gpus, unit, limits,
 * meta; its levels are ignored), status "running", started now (UTC).  backend: "sim", "nvml",
 * or NULL for imported data.  The run's unit label is "tokens/s" or "samples/s" from run->unit;
 * pfi_store_set_unit_label overrides it (e.g. "epochs/s (relative)"). */
int pfi_store_create_run(pfi_store *st, long long job_id, const pfi_run *run, const char *backend,
                         long long *run_id, pfi_err *err);
int pfi_store_set_unit_label(pfi_store *st, long long run_id, const char *label, pfi_err *err);
/* A sweep learns its unit from the job's first level, after the run was created: unit and
 * label both become "tokens/s" or "samples/s". */
int pfi_store_set_run_unit(pfi_store *st, long long run_id, pfi_tput_unit unit, pfi_err *err);

/* A level's writes are one transaction: begin, add_level, add_samples..., commit. */
int pfi_store_level_begin(pfi_store *st, pfi_err *err);
/* Appends a level to run_id (levels keep the order they were added in). */
int pfi_store_add_level(pfi_store *st, long long run_id, const pfi_level *lv, long long *level_id,
                        pfi_err *err);
/* Stores telemetry of one GPU for a level, downsampled: consecutive samples are averaged into
 * one row per period_s of backend time (period_s <= 0: every sample stored as is).  A field is
 * averaged over the samples that have it; clock_reasons are OR-ed; a row has a field's bit when
 * any sample averaged into it had it.  Missing fields are stored as NULL. */
int pfi_store_add_samples(pfi_store *st, long long level_id, int gpu, const pfi_sample *samples,
                          int n, double period_s, pfi_err *err);
int pfi_store_level_commit(pfi_store *st, pfi_err *err);
/* Rolls back the level in progress (safe to call when none is). */
void pfi_store_level_abort(pfi_store *st);

/* A batch groups many runs' writes into one transaction (one disk sync instead of one per
 * level): for data that can be made again, like a simulated study.  Level transactions inside
 * a batch become savepoints (an aborted level still leaves nothing).  A crash loses the whole
 * batch, so a sweep of real GPUs does not use one. */
int pfi_store_batch_begin(pfi_store *st, pfi_err *err);
int pfi_store_batch_commit(pfi_store *st, pfi_err *err);
void pfi_store_batch_abort(pfi_store *st);

/* status: "done", "failed", "interrupted" (free text up to 15 chars). Sets ended now (UTC). */
int pfi_store_finish_run(pfi_store *st, long long run_id, const char *status, pfi_err *err);
/* A run measured elsewhere (a virtual-time sweep of the simulator, an evaluation's fleet)
 * written whole: its job (tags as for pfi_store_create_job), the run, every level, status
 * "done".  Each level is its own transaction as in a sweep; inside a batch they are savepoints.
 * *run_id may be NULL. */
int pfi_store_save_run(pfi_store *st, const pfi_run *run, const char *backend,
                       const char *const *tags, int ntags, long long *run_id, pfi_err *err);
/* Deletes a run with its levels and telemetry (and its job when no other run uses it). */
int pfi_store_delete_run(pfi_store *st, long long run_id, pfi_err *err);

/* ---- reading ---- */

typedef struct pfi_run_summary {
    long long id, job_id;
    char name[PFI_NAME_MAX];
    char source[32];
    char gpu_type[32];
    char backend[48];    /* "" for imported data; "sim (simulated GPUs, real program)" fits */
    char status[16];     /* "running", "done", "failed", "interrupted", "imported" */
    char unit_label[48]; /* "tokens/s", "samples/s", "epochs/s (relative)", ... */
    char started[32], ended[32]; /* ISO 8601 UTC; "" when unknown */
    int n_gpus;
    pfi_tput_unit unit;
    int n_levels;
    double default_limit_w;
    /* Baseline: the level at the default limit, else the highest cap (NAN without levels). */
    double t0, p0, cap0_w;
} pfi_run_summary;

/* Every source pfi's writers give a run: "sweep" (pfi sweep), "sim" (the simulated fleet), then
 * the public datasets (pfi_import_sources).  A store may hold others (written by a newer pfi). */
#define PFI_STORE_NSOURCES 5
extern const char *const pfi_store_sources[PFI_STORE_NSOURCES];

/* All runs, ordered by id; *out is malloc'ed (free() it), NULL when *n == 0. */
int pfi_store_list_runs(pfi_store *st, pfi_run_summary **out, int *n, pfi_err *err);
/* "12" (an id) or an exact run name -> id.  PFI_ENOENT names what was looked for. */
int pfi_store_find_run(pfi_store *st, const char *key, long long *run_id, pfi_err *err);
int pfi_store_run_summary(pfi_store *st, long long run_id, pfi_run_summary *out, pfi_err *err);
/* Fills *out with the run header and its levels in the order they were added. */
int pfi_store_load_run(pfi_store *st, long long run_id, pfi_run *out, pfi_err *err);

typedef struct pfi_telemetry_row {
    int level;        /* index of the level in the loaded pfi_run (0-based) */
    int gpu;
    pfi_sample s;
} pfi_telemetry_row;
/* Telemetry of a run (level < 0: all levels), ordered by level, GPU, time.  *rows malloc'ed. */
int pfi_store_load_telemetry(pfi_store *st, long long run_id, int level, pfi_telemetry_row **rows,
                             int *n, pfi_err *err);

/* How long each level of a run lasted (dur_s[seq], seq 0..n-1): its recorded start and end
 * (began_s, ended_s) where the level has them, else the span of its stored telemetry
 * (transient included; rows are bucket means, so the span is widened by one bucket: levels
 * stored before schema version 2), else NAN (imported data). */
int pfi_store_level_durations(pfi_store *st, long long run_id, double *dur_s, int n, pfi_err *err);

/* ---- public datasets (import_*.c) ---- */

/* Each importer reads the files under dir (NULL: the right folder under pfi_data_dir()) and
 * writes one run per (workload, GPU type, parallelism or batch size).  Everything an import
 * writes is one transaction: a bad file leaves the store as it was.  Re-importing replaces the
 * runs of the same source and name (no duplicates).  *nruns / *nlevels (may be NULL) receive
 * how many were written. */
int pfi_import_perseus(pfi_store *st, const char *dir, int *nruns, int *nlevels, pfi_err *err);
int pfi_import_zeus_nsdi(pfi_store *st, const char *dir, int *nruns, int *nlevels, pfi_err *err);
int pfi_import_zeus_plo(pfi_store *st, const char *dir, int *nruns, int *nlevels, pfi_err *err);
/* The three above from root/{perseus-sosp24,zeus-nsdi23-trace,zeus-plo-testdata} (root NULL:
 * pfi_data_dir()), all in one transaction.  nruns[i] / nlevels[i] in that order (may be NULL). */
#define PFI_IMPORT_NSOURCES 3
extern const char *const pfi_import_sources[PFI_IMPORT_NSOURCES]; /* "perseus", "zeus-nsdi", ... */
int pfi_import_all(pfi_store *st, const char *root, int nruns[PFI_IMPORT_NSOURCES],
                   int nlevels[PFI_IMPORT_NSOURCES], pfi_err *err);

/* The same in two steps, so that nothing is opened before everything is read: a missing folder
 * or a bad line then neither creates a store nor touches (migrates) an existing one.
 * pfi_import_read reads dataset `which` (a pfi_import_sources name, or "all") from path (NULL:
 * the default folder; for "all" the folder holding the three) into *out, no store involved;
 * pfi_import_write writes it in one transaction, nruns[i] / nlevels[i] as above (0 for a
 * source not read; may be NULL). */
typedef struct pfi_import pfi_import;
int pfi_import_read(const char *which, const char *path, pfi_import **out, pfi_err *err);
int pfi_import_write(pfi_store *st, const pfi_import *imp, int nruns[PFI_IMPORT_NSOURCES],
                     int nlevels[PFI_IMPORT_NSOURCES], pfi_err *err);
void pfi_import_free(pfi_import *imp);

#endif
