/* SPDX-License-Identifier: Apache-2.0 */
/* journal.h: the durable record of GPUs' original power limits.  Anything in pfi that
 * changes a limit (pfi sweep, the node daemon) journals the original first, so that
 * `pfi restore` can put it back after a crash, a SIGKILL or a power loss.
 *
 *   pfi_journal j;
 *   pfi_journal_begin(&j, path, b, gpus, n, err);   // reads limits, writes + fsyncs, locks
 *   ... change limits; pfi_journal_add(&j, b, gpu, err) for a GPU not journaled yet ...
 *   pfi_journal_restore(&j, b, err);                // puts every original back, deletes file
 *   pfi_journal_close(&j);                          // releases the lock (file kept if not restored)
 *
 * The file is text ("pfi-journal 1", then pid, backend, sim_state, "run ID STORE" when the
 * writer is a sweep storing a run, and one "gpu IDX uuid UUID limit_w W" line per GPU, each
 * line ending in a newline: one without it is damaged), replaced atomically (write temp, fsync,
 * rename, fsync directory).
 * While its writer lives it holds an flock on the file: `pfi restore` refuses to act behind a
 * live sweep's back, and a new sweep refuses to start over a journal that was not restored
 * (its limits are the true originals).  Restore matches GPUs by UUID, so a renumbering after
 * a reboot cannot put one GPU's limit on another. */
#ifndef PFI_MEASURE_JOURNAL_H
#define PFI_MEASURE_JOURNAL_H

#include <stddef.h>
#include <stdio.h>

#include "core/err.h"
#include "hw/hw.h"
#include "measure/gpulock.h"

#define PFI_JOURNAL_PATH_MAX 1024

typedef struct pfi_journal_entry {
    int gpu;         /* its index when journaled */
    char uuid[96];
    double limit_w;
    int gpu_now;     /* set by pfi_journal_restore: its index now, found by UUID (GPUs renumber
                      * across a reboot); -1 when not found */
    int restore_rc;  /* set by pfi_journal_restore: PFI_OK when restored, else why not ... */
    char why[PFI_ERR_MSG_MAX]; /* ... in words (every GPU's: the first alone was said, and the GPUs
                      * still capped were not named) */
} pfi_journal_entry;

typedef struct pfi_journal {
    char path[PFI_JOURNAL_PATH_MAX];
    char backend[16];
    char sim_state[PFI_JOURNAL_PATH_MAX]; /* $PFI_SIM_STATE of the writer ("" when none) */
    long pid;                             /* the writer */
    long long run_id;                     /* the writer's run in the store run_db (0: none) */
    char run_db[PFI_JOURNAL_PATH_MAX];
    int held;                             /* load: the lock was free, so the writer is gone */
    int writer_runs;                      /* load with force: it was not, the writer still runs */
    int n;
    pfi_journal_entry e[PFI_MAX_GPUS];
    int lock_fd;                          /* -1 when not held */
    pfi_gpu_locks gpu_locks;              /* its GPUs' locks (gpulock.h) while it writes */
} pfi_journal;

/* path: explicit, else $PFI_JOURNAL, else /var/lib/pfi/journal as root, else
 * $XDG_STATE_HOME/pfi/journal (~/.local/state/pfi/journal).  A simulated backend (simulated 1)
 * never shares the real journal: $PFI_SIM_STATE.journal beside the simulated node's state, else
 * journal-sim in the same folder. */
const char *pfi_journal_default_path(char *buf, size_t n, int simulated);
/* Every default path a journal may be at, for pfi restore to look at each (at most max, no
 * path twice): $PFI_JOURNAL alone when set; else $PFI_SIM_STATE.journal when PFI_SIM_STATE is
 * set, the per-user journal and journal-sim, /var/lib/pfi/journal and journal-sim. */
#define PFI_JOURNAL_DEFAULTS 5
int pfi_journal_default_paths(char paths[][PFI_JOURNAL_PATH_MAX], int max);

/* PFI_OK when no journal is at path; else PFI_EBUSY saying why (another live process holds it,
 * or one was never restored), as pfi_journal_begin would refuse: asked before a job is
 * launched, so a refused journal does not start the job first. */
int pfi_journal_check_free(const char *path, pfi_err *err);
/* PFI_OK when a journal can be written at path (its folder made, a file created and removed
 * there), else PFI_EIO (or the folder's error) saying why: asked before a job is launched, as
 * above. */
int pfi_journal_check_writable(const char *path, pfi_err *err);
/* PFI_OK when no other process holds the lock of any of these GPUs (gpulock.h), else
 * PFI_EBUSY naming the GPU and the holder: asked before a job is launched, as above. */
int pfi_journal_check_gpus_free(pfi_backend *b, const int *gpus, int n, pfi_err *err);

/* Journals the current limit of each GPU, holding each GPU's lock (gpulock.h) until
 * pfi_journal_close.  PFI_EBUSY when a journal already exists at path (restore it first),
 * another live process holds it, or another process changes one of the GPUs' limits. */
int pfi_journal_begin(pfi_journal *j, const char *path, pfi_backend *b, const int *gpus, int n,
                      pfi_err *err);
/* Adds one more GPU (no-op if already journaled), durably and locked, before its first
 * change. */
int pfi_journal_add(pfi_journal *j, pfi_backend *b, int gpu, pfi_err *err);
/* Names the store run the writer is measuring (db: an absolute path), durably, so that a
 * restore after a SIGKILL can mark it interrupted. */
int pfi_journal_set_run(pfi_journal *j, const char *db, long long run_id, pfi_err *err);
/* Reads a journal written by someone else.  PFI_ENOENT when there is none; PFI_EBUSY when its
 * writer is still alive and holds it (unless force). */
int pfi_journal_load(pfi_journal *j, const char *path, int force, pfi_err *err);
/* Reads a journal without touching its lock (a read-only daemon: even an instant's flock
 * would refuse a pfi restore that tries it then).  writer_runs: a process holds it, as
 * /proc/locks says (where it cannot be read, a shared lock tried for an instant).  PFI_ENOENT
 * when there is none. */
int pfi_journal_peek(pfi_journal *j, const char *path, pfi_err *err);
/* Takes over a journal a dead writer left (a daemon that holds limits across its restart):
 * its originals stay, the file names this process and is locked by it, and so are its GPUs.
 * PFI_ENOENT when there is none; PFI_EBUSY when its writer is alive or another process
 * changes one of its GPUs' limits. */
int pfi_journal_adopt(pfi_journal *j, const char *path, pfi_err *err);
/* The text of a journal from f into *j (zeroed by the caller; no lock taken): every number is
 * range-checked, and a damaged line is PFI_EINVAL naming `name` and the line. */
int pfi_journal_parse(pfi_journal *j, FILE *f, const char *name, pfi_err *err);
/* Sets every journaled GPU back to its original limit (a GPU already at it, to the milliwatt,
 * is not set again: it counts as restored); on full success deletes the file.
 * Tries every GPU even when one fails; the first error is returned. *restored (may be NULL)
 * receives how many were put back. */
int pfi_journal_restore(pfi_journal *j, pfi_backend *b, int *restored, pfi_err *err);
void pfi_journal_close(pfi_journal *j);

#endif
