/* SPDX-License-Identifier: Apache-2.0 */
/* fs.h: the directories a file is written into (a sweep's journal, a study's report), created
 * as `mkdir -p` would, with a message naming the one that could not be; the process's limit
 * on open files, raised for a server's connections, and how many of them it holds. */
#ifndef PFI_UTIL_FS_H
#define PFI_UTIL_FS_H

#include <stddef.h>

#include "core/err.h"

/* Creates dir and its missing parents (mode 0755); existing ones are fine.  PFI_EIO "cannot
 * create D: why" naming the first that failed.  Paths past 1023 bytes are cut there. */
int pfi_mkdir_p(const char *dir, pfi_err *err);

/* PFI_EIO "cannot read P: Is a directory" when path names a directory, else PFI_OK (an absent
 * or unreadable file is left to the caller's open, which names it).  fopen opens a directory
 * and the first read fails as at the end of a file: a JSON reader then says "'[' or '{'
 * expected near end of file" and a line reader sees an empty file, both wrong about the
 * mistake, and as bad input (exit 2) where a file that cannot be read is a failure (exit 1). */
int pfi_input_not_dir(const char *path, pfi_err *err);

/* Before a file is created at path (a database, a socket): PFI_EIO "cannot create WHAT PATH:
 * the folder D does not exist (create it first: mkdir -p D)" when the folder it goes in is
 * missing, or says which is not a folder; else PFI_OK (a folder that cannot be read is left to
 * the caller's open, which says why).  SQLite said only "unable to open database file" and
 * bind() "No such file or directory", naming neither the folder nor what to do. */
int pfi_parent_dir_check(const char *path, const char *what, pfi_err *err);

/* Where an output the user named (a model, an export) is written so that a reader never sees
 * half of it: a temporary file beside *target renamed over it.  *target is path for a regular
 * file or a new path, a symlink's resolved target (the link stays a link and its file gets the
 * content), and for anything else (a device such as /dev/null, a FIFO, /dev/stdout) *direct is
 * set: write straight into path, no rename.  Renamed over, /dev/null became a regular file for
 * every process on the machine (as root), and a symlinked model lost its link.  PFI_EIO when a
 * link's target cannot be resolved (a dangling link), PFI_EINVAL when path names a directory. */
int pfi_out_target(const char *path, char *target, size_t n, int *direct, pfi_err *err);

/* Writes text to path whole, as a new file renamed over it (a reader never sees half of it):
 * the temporary file beside it is made anew, never through a link or a file someone left there
 * (a port file in /tmp written through a planted link overwrote a file of root's).  PFI_EIO
 * naming the file and why. */
int pfi_write_new(const char *path, const char *text, pfi_err *err);

/* The soft limit on open files (RLIMIT_NOFILE) raised to at least need where the hard limit
 * allows, never lowered: returns the soft limit then, -1 when it cannot be read. */
long pfi_fd_limit_raise(long need);

/* How many of want connections fit under the open-file limit when reserve descriptors are kept
 * for the rest of the process (node requests, the store, logs): the soft limit is first raised
 * to want + reserve where the hard limit allows.  Returns want when all fit or the limit cannot
 * be read (nothing is known to be short), else the limit less reserve, 0 or less when none
 * fit; *limit gets the soft limit (-1 when unread). */
long pfi_fd_limit_fit(long want, long reserve, long *limit);

#endif
