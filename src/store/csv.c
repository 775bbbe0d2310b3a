/* SPDX-License-Identifier: Apache-2.0 */
/* csv.c: see csv.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/csv.h"
#include "util/units.h"

struct pfi_csv {
    FILE *f;
    int own;
    char *name;
    int line;        /* the line being read next (1-based) */
    int rec_line;    /* where the current record began */
    int unterminated; /* the line the input ended inside of, 0 if none */
    int drop_unterminated; /* that record is left out (pfi_csv_drop_unterminated) */
    char *buf;       /* the fields of the current record, each NUL-terminated */
    size_t len, cap;
    size_t *off;     /* start of each field in buf */
    int nf, offcap;
    char **hdr;
    int ncols;
};

#define CR_ONLY "a carriage return (CR) without a line feed after it: the file has CR-only line " \
                "ends (classic Mac OS)?  Write it with LF or CRLF line ends"

static int push_char(pfi_csv *c, char ch, pfi_err *err)
{
    if (c->len + 1 >= c->cap) {
        if (c->cap >= PFI_CSV_MAX_RECORD)
            return pfi_err_set(err, PFI_EINVAL, "%s line %d: record longer than %d bytes%s%s",
                               c->name, c->rec_line, PFI_CSV_MAX_RECORD,
                               memchr(c->buf, '\r', c->len) ? ", holding " : "",
                               memchr(c->buf, '\r', c->len) ? CR_ONLY : "");
        size_t nc = c->cap ? 2 * c->cap : 256;
        char *nb = realloc(c->buf, nc);
        if (!nb)
            return pfi_err_set(err, PFI_ENOMEM, "out of memory reading %s", c->name);
        c->buf = nb;
        c->cap = nc;
    }
    c->buf[c->len++] = ch;
    return PFI_OK;
}

static int start_field(pfi_csv *c, pfi_err *err)
{
    if (c->nf == c->offcap) {
        int nc = c->offcap ? 2 * c->offcap : 32;
        size_t *no = realloc(c->off, (size_t)nc * sizeof *no);
        if (!no)
            return pfi_err_set(err, PFI_ENOMEM, "out of memory reading %s", c->name);
        c->off = no;
        c->offcap = nc;
    }
    c->off[c->nf++] = c->len;
    return PFI_OK;
}

/* Reads one raw record into buf/off/nf.  Returns PFI_CSV_END at end of input. */
static int read_record(pfi_csv *c, pfi_err *err)
{
    int ch, rc, cr_eof = 0; /* cr_eof: the record ended with a CR and then the input */
    /* Skip blank lines between records. */
    while ((ch = getc(c->f)) == '\n' || ch == '\r')
        if (ch == '\n')
            c->line++;
    if (ch == EOF)
        return ferror(c->f) ? pfi_err_set(err, PFI_EIO, "%s line %d: read error: %s", c->name,
                                          c->line, strerror(errno))
                            : PFI_CSV_END;
    c->rec_line = c->line;
    c->len = 0;
    c->nf = 0;
    for (;;) {
        if ((rc = start_field(c, err)) != PFI_OK)
            return rc;
        if (ch == '"') {
            int qline = c->line;
            for (;;) {
                ch = getc(c->f);
                if (ch == EOF)
                    return pfi_err_set(err, PFI_EINVAL,
                                       "%s line %d: quoted field opened on line %d never closes",
                                       c->name, c->line, qline);
                if (ch == '"') {
                    ch = getc(c->f);
                    if (ch != '"')
                        break;
                } else if (ch == '\n') {
                    c->line++;
                }
                if (ch == '\0')
                    return pfi_err_set(err, PFI_EINVAL, "%s line %d: NUL byte (not a text file)",
                                       c->name, c->line);
                if ((rc = push_char(c, (char)ch, err)) != PFI_OK)
                    return rc;
            }
            if (ch == '\r') {
                ch = getc(c->f);
                cr_eof = ch == EOF;
            }
            /* A quote left open takes the lines after it into its field, up to the next quote:
             * the line to look at is the one it opened on, not where it closes. */
            if (ch != ',' && ch != '\n' && ch != EOF && qline != c->line)
                return pfi_err_set(err, PFI_EINVAL,
                                   "%s line %d: field %d opens a quote that closes only on "
                                   "line %d, with text after it (a quote left open on line "
                                   "%d?)", c->name, qline, c->nf, c->line, qline);
            if (ch != ',' && ch != '\n' && ch != EOF)
                return pfi_err_set(err, PFI_EINVAL,
                                   "%s line %d: field %d has text after its closing quote",
                                   c->name, c->line, c->nf);
        } else {
            while (ch != ',' && ch != '\n' && ch != EOF) {
                if (ch == '"')
                    return pfi_err_set(err, PFI_EINVAL,
                                       "%s line %d: field %d has a quote but does not start "
                                       "with one",
                                       c->name, c->line, c->nf);
                if (ch == '\0')
                    return pfi_err_set(err, PFI_EINVAL, "%s line %d: NUL byte (not a text file)",
                                       c->name, c->line);
                if (ch == '\r') {
                    int next = getc(c->f);
                    if (next == '\n' || next == EOF) {
                        ch = next;
                        cr_eof = next == EOF;
                        break;
                    }
                    ungetc(next, c->f);
                }
                if ((rc = push_char(c, (char)ch, err)) != PFI_OK)
                    return rc;
                ch = getc(c->f);
            }
        }
        if ((rc = push_char(c, '\0', err)) != PFI_OK)
            return rc;
        if (ch == ',') {
            ch = getc(c->f);
            continue;
        }
        if (ch == '\n')
            c->line++;
        if (ch == EOF && ferror(c->f))
            return pfi_err_set(err, PFI_EIO, "%s line %d: read error: %s", c->name, c->line,
                               strerror(errno));
        if (ch == EOF && !cr_eof)
            c->unterminated = c->line;
        return PFI_OK;
    }
}

typedef struct named_col {
    const char *name;
    int col;
} named_col;

/* By name, then column. */
static int cmp_col(const void *a, const void *b)
{
    const named_col *x = a, *y = b;
    int r = strcmp(x->name, y->name);
    return r ? r : (x->col > y->col) - (x->col < y->col);
}

/* A header naming a column twice is refused: the first copy was read and the other ignored (a
 * second power_limit column put first swapped two levels' limits unseen).  Sorted (a record of
 * 1 MiB holds half a million names); the column named is the first that repeats an earlier
 * one, with that one. */
static int check_header(pfi_csv *c, pfi_err *err)
{
    if (c->ncols < 2)
        return PFI_OK;
    named_col *v = malloc((size_t)c->ncols * sizeof *v);
    if (!v)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory reading %s", c->name);
    for (int i = 0; i < c->ncols; i++)
        v[i] = (named_col){c->hdr[i], i};
    qsort(v, (size_t)c->ncols, sizeof *v, cmp_col);
    int first = -1, second = -1;
    for (int i = 1; i < c->ncols; i++)
        if (strcmp(v[i - 1].name, v[i].name) == 0 &&
            (i < 2 || strcmp(v[i - 2].name, v[i - 1].name) != 0) &&
            (second < 0 || v[i].col < second)) {
            first = v[i - 1].col;
            second = v[i].col;
        }
    free(v);
    if (second < 0)
        return PFI_OK;
    return pfi_err_set(err, PFI_EINVAL, "%s line %d: column '%s' appears twice in the header "
                       "(columns %d and %d): which one to read is not known", c->name,
                       c->rec_line, c->hdr[first], first + 1, second + 1);
}

static int open_common(pfi_csv *c, pfi_err *err)
{
    /* A UTF-8 byte-order mark (spreadsheet exports) is not part of the first column's name. */
    int b0 = getc(c->f);
    if (b0 == 0xEF) {
        int b1 = getc(c->f), b2 = getc(c->f);
        if (b1 != 0xBB || b2 != 0xBF)
            return pfi_err_set(err, PFI_EINVAL, "%s line 1: not UTF-8 text", c->name);
    } else if (b0 != EOF) {
        ungetc(b0, c->f);
    }
    int rc = read_record(c, err);
    if (rc == PFI_CSV_END)
        return pfi_err_set(err, PFI_EINVAL, "%s: empty file (no header line)", c->name);
    if (rc != PFI_OK)
        return rc;
    c->hdr = calloc((size_t)c->nf, sizeof *c->hdr);
    if (!c->hdr)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory reading %s", c->name);
    c->ncols = c->nf;
    for (int i = 0; i < c->nf; i++) {
        if (!(c->hdr[i] = strdup(c->buf + c->off[i])))
            return pfi_err_set(err, PFI_ENOMEM, "out of memory reading %s", c->name);
        if (!c->hdr[i][0])
            return pfi_err_set(err, PFI_EINVAL, "%s line %d: header column %d has no name",
                               c->name, c->rec_line, i + 1);
        /* A CR not followed by LF is kept as text, so a file with CR-only line ends (classic
         * Mac OS) read as one long header line and then "no data rows".  A quoted header cell
         * holding CRLF (RFC 4180 allows it) is no such file. */
        for (const char *cr = strchr(c->hdr[i], '\r'); cr; cr = strchr(cr + 1, '\r'))
            if (cr[1] != '\n')
                return pfi_err_set(err, PFI_EINVAL, "%s line %d: %s", c->name, c->rec_line,
                                   CR_ONLY);
    }
    return check_header(c, err);
}

int pfi_csv_open_stream(FILE *f, const char *name, pfi_csv **out, pfi_err *err)
{
    *out = NULL;
    pfi_csv *c = calloc(1, sizeof *c);
    if (!c || !(c->name = strdup(name ? name : "<csv>"))) {
        free(c);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    c->f = f;
    c->line = 1;
    int rc = open_common(c, err);
    if (rc != PFI_OK) {
        pfi_csv_close(c);
        return rc;
    }
    *out = c;
    return PFI_OK;
}

int pfi_csv_open(const char *path, pfi_csv **out, pfi_err *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return pfi_err_set(err, errno == ENOENT ? PFI_ENOENT : PFI_EIO, "cannot read %s: %s",
                           path, strerror(errno));
    int rc = pfi_csv_open_stream(f, path, out, err);
    if (rc != PFI_OK) {
        fclose(f);
        return rc;
    }
    (*out)->own = 1;
    return PFI_OK;
}

void pfi_csv_close(pfi_csv *c)
{
    if (!c)
        return;
    if (c->own && c->f)
        fclose(c->f);
    for (int i = 0; c->hdr && i < c->ncols; i++)
        free(c->hdr[i]);
    free(c->hdr);
    free(c->buf);
    free(c->off);
    free(c->name);
    free(c);
}

int pfi_csv_next(pfi_csv *c, pfi_err *err)
{
    int rc = read_record(c, err);
    if (rc != PFI_OK)
        return rc;
    /* A record the input ended inside of is left out where the caller asked: its last number
     * may be cut ("1532.26" read as 15, a 1.0 W level stored). */
    if (c->unterminated && c->drop_unterminated)
        return PFI_CSV_END;
    if (c->nf != c->ncols)
        return pfi_err_set(err, PFI_EINVAL, "%s line %d: %d fields, but the header has %d",
                           c->name, c->rec_line, c->nf, c->ncols);
    return PFI_OK;
}

int pfi_csv_unterminated(const pfi_csv *c) { return c->unterminated; }
void pfi_csv_drop_unterminated(pfi_csv *c) { c->drop_unterminated = 1; }
const char *pfi_csv_name(const pfi_csv *c) { return c->name; }
int pfi_csv_line(const pfi_csv *c) { return c->rec_line; }
int pfi_csv_ncols(const pfi_csv *c) { return c->ncols; }
const char *pfi_csv_header(const pfi_csv *c, int col)
{
    return col >= 0 && col < c->ncols ? c->hdr[col] : NULL;
}
const char *pfi_csv_field(const pfi_csv *c, int col)
{
    return col >= 0 && col < c->nf ? c->buf + c->off[col] : NULL;
}

int pfi_csv_col(const pfi_csv *c, const char *name)
{
    for (int i = 0; i < c->ncols; i++)
        if (strcmp(c->hdr[i], name) == 0)
            return i;
    return -1;
}

int pfi_csv_require(const pfi_csv *c, const char *name, int *col, pfi_err *err)
{
    *col = pfi_csv_col(c, name);
    if (*col < 0)
        return pfi_err_set(err, PFI_EINVAL, "%s: no column '%s' in the header", c->name, name);
    return PFI_OK;
}

int pfi_csv_double(const pfi_csv *c, int col, double *v, pfi_err *err)
{
    const char *s = pfi_csv_field(c, col);
    if (!s)
        return pfi_err_set(err, PFI_EINVAL, "%s line %d: no field %d", c->name, c->rec_line,
                           col + 1);
    /* Read as every number is (util/units.h): strtod alone took "0x10" as 16. */
    if (pfi_units_hex(s))
        return pfi_err_set(err, PFI_EINVAL,
                           "%s line %d, column '%s': '%s' is hexadecimal; numbers are read in "
                           "decimal",
                           c->name, c->rec_line, c->hdr[col], s);
    /* A field of white space alone is no number: skipping the blanks after a failed read made it
     * one, left unset (the caller's *v uninitialised). */
    const char *end;
    double x;
    int bad = pfi_parse_decimal(s, &x, &end) != 0;
    if (!bad)
        while (*end == ' ' || *end == '\t')
            end++;
    if (bad || *end)
        return pfi_err_set(err, PFI_EINVAL, "%s line %d, column '%s': '%s' is not a number",
                           c->name, c->rec_line, c->hdr[col], s);
    *v = x;
    return PFI_OK;
}

int pfi_csv_int(const pfi_csv *c, int col, int *v, pfi_err *err)
{
    double d;
    int rc = pfi_csv_double(c, col, &d, err);
    if (rc != PFI_OK)
        return rc;
    /* Digits only (a sign and blanks around, as for any number): "1e1" or "8.0" in a batch size
     * or a degree of parallelism is a damaged or hand-edited row, not an integer. */
    const char *p = pfi_csv_field(c, col);
    while (*p == ' ' || *p == '\t')
        p++;
    p += *p == '+' || *p == '-';
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        digits++;
    while (*p == ' ' || *p == '\t')
        p++;
    if (!digits || *p || d < -2147483647.0 || d > 2147483647.0)
        return pfi_err_set(err, PFI_EINVAL, "%s line %d, column '%s': '%s' is not an integer "
                           "(written in digits)", c->name, c->rec_line, c->hdr[col],
                           pfi_csv_field(c, col));
    *v = (int)d;
    return PFI_OK;
}

int pfi_csv_text(const pfi_csv *c, int col, char *dst, size_t n, pfi_err *err)
{
    const char *s = pfi_csv_field(c, col);
    size_t len = s ? strlen(s) : 0;
    if (n)
        dst[0] = '\0';
    if (!s)
        return pfi_err_set(err, PFI_EINVAL, "%s line %d: no field %d", c->name, c->rec_line,
                           col + 1);
    if (len >= n)
        return pfi_err_set(err, PFI_EINVAL, "%s line %d, column '%s': %zu bytes, longer than "
                           "the %zu this field may hold (it would be cut, and two values that "
                           "differ only after that would be one)", c->name, c->rec_line,
                           c->hdr[col], len, n ? n - 1 : 0);
    memcpy(dst, s, len + 1);
    return PFI_OK;
}

void pfi_csv_write_field(FILE *f, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}
