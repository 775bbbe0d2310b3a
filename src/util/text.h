/* SPDX-License-Identifier: Apache-2.0 */
/* text.h: the two things every reader of a small text file does: take a whole file (or a
 * command's output) into memory, and strip the white space around a line or a field. */
#ifndef PFI_UTIL_TEXT_H
#define PFI_UTIL_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* Strips the white space (isspace) at both ends of s in place: the end by writing NULs, the
 * start by returning a pointer past it, into s. */
char *pfi_trim(char *s);

/* Reads f to its end into a new NUL-terminated buffer that the caller frees; *len (may be NULL)
 * gets the length.  NULL when memory runs out or the buffer would grow past max bytes (0: no
 * limit), so one malformed input cannot take the process's memory.  A read error is not
 * reported here: check ferror(f), as a pipe's reader may not care. */
char *pfi_read_all(FILE *f, size_t max, size_t *len);

#endif
