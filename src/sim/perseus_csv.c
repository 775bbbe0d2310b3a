/* perseus_csv.c: the small CSV reader of the measured files (perseus_csv.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sim/perseus_csv.h"

/* Splits one line into fields (RFC 4180 quotes; the partition lists hold commas). */
static int csv_split(const char *line, char out[][64], int max)
{
    int n = 0;
    const char *p = line;
    while (n < max) {
        size_t k = 0;
        int quoted = *p == '"';
        if (quoted)
            p++;
        while (*p && (quoted ? !(*p == '"' && p[1] != '"') : *p != ',') && *p != '\n' &&
               *p != '\r') {
            if (quoted && *p == '"')
                p++;
            if (k + 1 < 64)
                out[n][k++] = *p;
            p++;
        }
        if (quoted && *p == '"')
            p++;
        out[n++][k] = '\0';
        if (*p != ',')
            break;
        p++;
    }
    return n;
}

int pfi_sim_csv_read(const char *path, pfi_sim_csv *t, pfi_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return pfi_err_set(err, PFI_ENOENT, "cannot open %s: %s", path, strerror(errno));
    char line[2048];
    memset(t, 0, sizeof *t);
    int rc = PFI_OK;
    if (!fgets(line, sizeof line, f)) {
        rc = pfi_err_set(err, PFI_EINVAL, "%s is empty", path);
    } else {
        char cols[PFI_SIM_CSV_MAX_COLS][64];
        t->ncols = csv_split(line, cols, PFI_SIM_CSV_MAX_COLS);
        for (int c = 0; c < t->ncols; c++)
            snprintf(t->head[c], sizeof t->head[c], "%s", cols[c]);
        while (rc == PFI_OK && fgets(line, sizeof line, f)) {
            if (line[0] == '\n' || line[0] == '\r')
                continue;
            if (t->nrows >= PFI_SIM_CSV_MAX_ROWS) {
                rc = pfi_err_set(err, PFI_EINVAL, "%s has more than %d rows", path,
                                 PFI_SIM_CSV_MAX_ROWS);
                break;
            }
            if (csv_split(line, t->cell[t->nrows], PFI_SIM_CSV_MAX_COLS) != t->ncols) {
                rc = pfi_err_set(err, PFI_EINVAL, "%s: row %d has the wrong number of fields",
                                 path, t->nrows + 2);
                break;
            }
            t->nrows++;
        }
    }
    fclose(f);
    return rc;
}

int pfi_sim_csv_col(const pfi_sim_csv *t, const char *name)
{
    for (int c = 0; c < t->ncols; c++)
        if (strcmp(t->head[c], name) == 0)
            return c;
    return -1;
}
