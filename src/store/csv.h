/* SPDX-License-Identifier: Apache-2.0 */
/* csv.h: a small, strict CSV reader (RFC 4180: quoted fields with "" escapes, commas and line
 * breaks inside quotes, CRLF or LF) for the public datasets, and a field writer for export.
 * Every error names the file and the line, because the files are read by hand when they fail. */
#ifndef PFI_STORE_CSV_H
#define PFI_STORE_CSV_H

#include <stdio.h>

#include "core/err.h"

typedef struct pfi_csv pfi_csv;

#define PFI_CSV_END (-1) /* pfi_csv_next: no more records */
#define PFI_CSV_MAX_RECORD (1 << 20)

/* Opens path and reads its header line. */
int pfi_csv_open(const char *path, pfi_csv **out, pfi_err *err);
/* Same over an open stream (not closed by pfi_csv_close); name is used in messages. */
int pfi_csv_open_stream(FILE *f, const char *name, pfi_csv **out, pfi_err *err);
void pfi_csv_close(pfi_csv *c);

/* Reads the next record: PFI_OK, PFI_CSV_END, or an error (malformed line, wrong number of
 * fields, read error).  Blank lines are skipped. */
int pfi_csv_next(pfi_csv *c, pfi_err *err);

/* After PFI_CSV_END: the line on which the input ended inside a line (its last record had no
 * line terminator: a copy cut short, or a file written without a final newline), else 0.  The
 * reader takes such a record as it stands (a file written by hand may end so), unless
 * pfi_csv_drop_unterminated: then it is left out (machine-written files, whose last field may
 * be cut); whether that deserves a word is the caller's call. */
int pfi_csv_unterminated(const pfi_csv *c);
void pfi_csv_drop_unterminated(pfi_csv *c);

const char *pfi_csv_name(const pfi_csv *c);
int pfi_csv_line(const pfi_csv *c);          /* line where the current record began (1-based) */
int pfi_csv_ncols(const pfi_csv *c);         /* fields in the header */
const char *pfi_csv_header(const pfi_csv *c, int col);
const char *pfi_csv_field(const pfi_csv *c, int col); /* of the current record */

/* Column index of a header name, -1 when absent. */
int pfi_csv_col(const pfi_csv *c, const char *name);
/* Same, but a missing column is an error naming the file. */
int pfi_csv_require(const pfi_csv *c, const char *name, int *col, pfi_err *err);
/* The current record's field as a finite number / an integer written in digits (a sign and
 * blanks around allowed; "1e1" and "8.0" are not integers); errors name file, line, column. */
int pfi_csv_double(const pfi_csv *c, int col, double *v, pfi_err *err);
int pfi_csv_int(const pfi_csv *c, int col, int *v, pfi_err *err);
/* The current record's field copied into dst[0..n); one that does not fit is an error naming
 * file, line, column and the limit (n - 1 bytes), dst left empty: cut silently, two keys that
 * differ only past the limit (optimizers 'adam'+40 x's+'1' and +'2') made one run. */
int pfi_csv_text(const pfi_csv *c, int col, char *dst, size_t n, pfi_err *err);

/* Writes s as one CSV field, quoted when it holds a comma, a quote or a line break. */
void pfi_csv_write_field(FILE *f, const char *s);

#endif
