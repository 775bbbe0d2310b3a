/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the CSV reader (src/store/csv.c) and the public datasets' file readers
 * (src/store/import_*.c, perseus.c).  Input: byte 0 picks the reader, the rest is the file:
 *   0  the bare reader over a stream: every field of every record as a number and an integer
 *   1  a Perseus ZeusGlobal file        2  a Zeus NSDI trace file
 *   3  a Zeus profiling log (A40+m+gpu0,1.csv)
 * The file readers read a path, so the bytes go to a file in a private temporary folder. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/csv.h"
#include "store/import_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char dir[512];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/pfi-fuzz-csv-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(dir))
        abort();
    return 0;
}

static void bare(const uint8_t *d, size_t n)
{
    FILE *f = fmemopen((void *)d, n, "r");
    if (!f)
        return;
    pfi_csv *c;
    if (pfi_csv_open_stream(f, "fuzz.csv", &c, NULL) == PFI_OK) {
        int cols = pfi_csv_ncols(c);
        for (int k = 0; k < cols; k++)
            if (pfi_csv_col(c, pfi_csv_header(c, k)) < 0)
                abort(); /* every header names a column */
        while (pfi_csv_next(c, NULL) == PFI_OK) {
            for (int k = 0; k < cols; k++) {
                double v;
                int i;
                if (!pfi_csv_field(c, k))
                    abort();
                (void)pfi_csv_double(c, k, &v, NULL);
                (void)pfi_csv_int(c, k, &i, NULL);
            }
        }
        pfi_csv_close(c);
    }
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int which = data[0] % 4;
    const uint8_t *d = data + 1;
    size_t n = size - 1;
    if (which == 0) {
        bare(d, n);
        return 0;
    }
    const char *name = which == 3 ? "A40+m+gpu0,1.csv" : "data.csv";
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (n && fwrite(d, 1, n, f) != n)
        abort();
    fclose(f);
    pfi_import_set set = {0};
    pfi_err e = {0};
    int rc = which == 1   ? pfi_import_perseus_file(path, "A40", "data.csv", &set, &e)
             : which == 2 ? pfi_import_zeus_nsdi_file(path, "A40", "data.csv", &set, &e)
                          : pfi_import_zeus_plo_file(dir, name, &set, &e);
    if (rc != PFI_OK && !e.msg[0])
        abort(); /* every refusal says why */
    pfi_import_set_free(&set);
    unlink(path);
    return 0;
}
