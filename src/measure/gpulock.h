/* SPDX-License-Identifier: Apache-2.0 */
/* gpulock.h: one lock per GPU, held by whoever changes its power limit (a sweep, pfi serve)
 * from before its journal is written until it has put the limit back.  The journal's own lock
 * keeps off a second writer of the same journal file only: two sweeps with two journals (two
 * --journal paths, two users' defaults) both ran, the second journaled the first's cap as the
 * original and left the GPUs capped with no journal. */
#ifndef PFI_MEASURE_GPULOCK_H
#define PFI_MEASURE_GPULOCK_H

#include <stddef.h>

#include "core/err.h"
#include "hw/hw.h"

typedef struct pfi_gpu_locks {
    int n;
    int fd[PFI_MAX_GPUS];
} pfi_gpu_locks;

/* Where the node's GPU locks are: $PFI_LOCK_DIR; else, for a simulated node kept in a state
 * file (sim_state not empty), the folder "<sim_state>.locks" beside it (each simulated node its
 * own); else, as root, /run/lock/pfi (pfi_gpu_lock_root_dir), and for other users /run/lock
 * itself (/tmp for either when there is no /run/lock).  0 when there is nothing to lock: a
 * simulated node in this process only (simulated and no sim_state). */
int pfi_gpu_lock_dir(const char *sim_state, int simulated, char *buf, size_t n);

/* base/pfi as a folder only root may change (0755, root's): made when missing; one a user made
 * first in the shared base is moved aside and made anew.  0, or -1 with errno.  A user could
 * open root's lock files in /run/lock and hold them, which kept root's pfi serve from
 * starting. */
int pfi_gpu_lock_root_dir(const char *base, char *buf, size_t n);

/* Takes GPU gpu's lock (its file named by uuid, or by its index when it has none) in dir,
 * adding it to l.  PFI_EBUSY naming the GPU and the process that holds it; PFI_EIO when the
 * lock file cannot be had (the folder is not writable: set PFI_LOCK_DIR).  As root, a lock file
 * another user owns is replaced, not obeyed (no user but root can change a power limit). */
#define PFI_GPU_LOCK_JOURNAL_MAX 1100
/* What the last holder of a GPU's lock left: its pid and its journal's path when that journal
 * is still there and is not the taker's ("" else).  Such a journal may hold the GPU's original
 * limit (a killed sweep, a pfi serve that held its caps at stop): the caller reads it to know
 * (journal.c), since a second journal took the first's caps for the originals and left the
 * GPUs capped. */
typedef struct pfi_gpu_left {
    long pid;
    char journal[PFI_GPU_LOCK_JOURNAL_MAX];
} pfi_gpu_left;
/* journal: the path of the journal the taker writes (NULL or "": none, a check only), not
 * counted as left behind; left (may be NULL): what the last holder left.  The lock file is not
 * written: a taker that goes on claims it (pfi_gpu_lock_claim), and one refused or only
 * checking leaves the last holder's word there (a refused start that wrote its own made the
 * next try find no journal left, and take the dead run's caps for the originals). */
int pfi_gpu_lock(pfi_gpu_locks *l, const char *dir, int gpu, const char *uuid,
                 const char *journal, pfi_gpu_left *left, pfi_err *err);
/* Writes this process's pid and journal path into the lock taken last. */
void pfi_gpu_lock_claim(const pfi_gpu_locks *l, const char *journal);
void pfi_gpu_locks_release(pfi_gpu_locks *l);

/* "pid 1234: pfi sweep --backend sim ..." from /proc (the pid alone when the process cannot
 * be read): who holds a lock, for a message. */
const char *pfi_lock_holder(long pid, char *buf, size_t n);
/* The process holding the flock on fd's file, from /proc/locks; written (the pid the file
 * names) when it cannot be told.  The file names its last writer, who may be dead: a second
 * restore named the journal's dead writer while another restore held the lock. */
long pfi_lock_holder_pid(int fd, long written);
/* Whether a process holds an flock on fd's file, from /proc/locks: 1, 0, or -1 when that cannot
 * be read.  Any holder counts, one whose pid this namespace cannot see (listed as 0 or -1: a
 * daemon in a container beside the host's sweep) too. */
int pfi_lock_is_held(int fd);
/* The pid a holder wrote at the start of a lock file (fd), 0 if none can be read. */
long pfi_lock_file_pid(int fd);

#endif
