/* SPDX-License-Identifier: Apache-2.0 */
/* fs.h: the directories a file is written into (a sweep's journal, a study's report), created
 * as `mkdir -p` would, with a message naming the one that could not be; the process's limit
 * on open files, raised for a server's connections. */
#ifndef PFI_UTIL_FS_H
#define PFI_UTIL_FS_H

#include "core/err.h"

/* Creates dir and its missing parents (mode 0755); existing ones are fine.  PFI_EIO "cannot
 * create D: why" naming the first that failed.  Paths past 1023 bytes are cut there. */
int pfi_mkdir_p(const char *dir, pfi_err *err);

/* The soft limit on open files (RLIMIT_NOFILE) raised to at least need where the hard limit
 * allows, never lowered: returns the soft limit then, -1 when it cannot be read. */
long pfi_fd_limit_raise(long need);

#endif
