/* SPDX-License-Identifier: Apache-2.0 */
/* pfi runs export: every level of the chosen runs as one flat table (CSV or JSON) for pandas. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "store/export.h"
#include "store/store.h"
#include "util/fs.h"

#define MAX_IDS 4096

/* Adds id to ids[0..*n) unless it is there already: a run named twice (by id and by name, or
 * "1,2,1") is exported once, not its rows twice. */
static int add_id(long long id, long long *ids, int *n, pfi_err *err)
{
    for (int k = 0; k < *n; k++)
        if (ids[k] == id)
            return PFI_OK;
    if (*n >= MAX_IDS)
        return pfi_err_set(err, PFI_ERANGE, "more than %d runs", MAX_IDS);
    ids[(*n)++] = id;
    return PFI_OK;
}

/* --runs "3,5,perseus/A40/gpt3-2.7b dp1tp1pp8": ids or exact names, comma-separated (a name
 * holding a comma is given alone in its own --runs).  A list that names no run (",,") is
 * refused: an empty id list means every run to the export, and ",," exported them all. */
static int resolve(pfi_store *st, const pfi_strlist *runs, long long *ids, int *n, pfi_err *err)
{
    *n = 0;
    for (int i = 0; i < runs->n; i++) {
        long long id;
        int rc = pfi_store_find_run(st, runs->v[i], &id, err);
        if (rc == PFI_OK) {
            if ((rc = add_id(id, ids, n, err)) != PFI_OK)
                return rc;
            continue;
        }
        if (rc != PFI_ENOENT || !strchr(runs->v[i], ','))
            return rc;
        char *copy = strdup(runs->v[i]), *save = NULL;
        if (!copy)
            return pfi_err_set(err, PFI_ENOMEM, "out of memory");
        rc = PFI_OK;
        int named = 0;
        for (char *t = strtok_r(copy, ",", &save); t && rc == PFI_OK;
             t = strtok_r(NULL, ",", &save), named++)
            if ((rc = pfi_store_find_run(st, t, &id, err)) == PFI_OK)
                rc = add_id(id, ids, n, err);
        free(copy);
        if (rc == PFI_OK && named == 0)
            rc = pfi_err_set(err, PFI_EINVAL, "--runs '%s' names no run", runs->v[i]);
        if (rc != PFI_OK)
            return rc;
    }
    return PFI_OK;
}

/* Where the export goes: into a temporary file beside the target renamed at the end (*tmp),
 * so a failed export never leaves half a file; a device or a FIFO (/dev/stdout) is written
 * into (*tmp NULL), never renamed over (util/fs.h). */
static int open_output(const char *output, char *target, size_t n, char **tmp, FILE **out,
                       pfi_err *err)
{
    int direct = 0;
    *tmp = NULL;
    int rc = pfi_out_target(output, target, n, &direct, err);
    if (rc != PFI_OK)
        return rc;
    if (direct) {
        if (!(*out = fopen(target, "w")))
            return pfi_err_set(err, PFI_EIO, "cannot write %s: %s", output, strerror(errno));
        return PFI_OK;
    }
    size_t len = strlen(target) + 16;
    char *t = malloc(len);
    int fd = -1;
    if (t) {
        snprintf(t, len, "%s.XXXXXX", target);
        fd = mkstemp(t);
    }
    /* mkstemp makes 0600: the file gets what a plain creat would, 0666 less the umask. */
    mode_t mask = umask(0);
    umask(mask);
    if (fd < 0 || fchmod(fd, 0666 & ~mask) != 0 || !(*out = fdopen(fd, "w"))) {
        rc = pfi_err_set(err, PFI_EIO, "cannot write next to %s: %s", output,
                         strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(t);
        }
        free(t);
        return rc;
    }
    *tmp = t;
    return PFI_OK;
}

int pfi_cmd_runs_export(int argc, char **argv)
{
    const char *db = NULL, *format = "csv", *output = NULL;
    pfi_strlist runs = {0};
    const pfi_opt opts[] = {
        {"db", PFI_OPT_STR, &db, "FILE", "the store (default $PFI_DB, else pfi.db)"},
        {"format", PFI_OPT_STR, &format, "csv|json", "output format (default csv)"},
        {"runs", PFI_OPT_MULTI, &runs, "LIST",
         "runs to export: ids or names, comma-separated, repeatable (default: all)"},
        {"out", PFI_OPT_STR, &output, "FILE",
         "write to FILE (atomically) instead of stdout (--output, its former name, still works)"},
        PFI_OPT_ALIAS("output", PFI_OPT_STR, &output, "out"),
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi runs export [--db FILE] [--format csv|json] [--runs LIST] [--out FILE]",
        "Export one row per level with the run's identity and metadata.  Units are in the "
        "column names: cap_w, enforced_w (mean over the GPUs), enforced_min_w (the lowest "
        "GPU's), power_w (mean per GPU), job_power_w, tokens_per_s or samples_per_s (filled only for an absolute rate), throughput with throughput_unit, "
        "rel_throughput and rel_power (to the baseline), telemetry means.  Missing values are "
        "empty (CSV) or null (JSON).  pandas: pd.read_csv(...) or pd.read_json(...).",
        opts,
        "pfi runs export --db pfi.db --out levels.csv\n"
        "pfi runs export --db pfi.db --format json --runs 1,2"};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    if (npos > 0) {
        fprintf(stderr, "pfi runs export: unexpected argument '%s' (runs go in --runs)\n", pos[0]);
        return PFI_EXIT_USAGE;
    }
    int fmt;
    if (strcmp(format, "csv") == 0)
        fmt = PFI_EXPORT_CSV;
    else if (strcmp(format, "json") == 0)
        fmt = PFI_EXPORT_JSON;
    else {
        fprintf(stderr, "pfi runs export: --format must be csv or json, not '%s'\n", format);
        return PFI_EXIT_USAGE;
    }
    pfi_err err = {0};
    pfi_store *st;
    if (pfi_store_open(db, PFI_STORE_READONLY, &st, &err) != PFI_OK) /* only reads, as pfi runs */
        return pfi_cli_fail("runs export", &err);
    long long *ids = malloc(MAX_IDS * sizeof *ids);
    int n = 0;
    if (!ids)
        rc = pfi_err_set(&err, PFI_ENOMEM, "out of memory");
    else
        rc = resolve(st, &runs, ids, &n, &err);
    /* Before anything is written: --out pfi.db (the default --db) replaced the store. */
    if (rc == PFI_OK && output && (rc = pfi_store_check_not_own(st, output, &err)) != PFI_OK)
        pfi_err_prefix(&err, "--out ");
    if (rc != PFI_OK) {
        free(ids);
        pfi_store_close(st);
        return pfi_cli_fail("runs export", &err);
    }
    char *tmp = NULL, target[4096];
    FILE *out = stdout;
    if (output && open_output(output, target, sizeof target, &tmp, &out, &err) != PFI_OK) {
        free(ids);
        pfi_store_close(st);
        return pfi_cli_fail("runs export", &err);
    }
    /* n == 0 with --runs given cannot happen (resolve fails first); n == 0 means all. */
    rc = pfi_store_export(st, ids, runs.n ? n : 0, fmt, out, &err);
    if (rc == PFI_EIO) /* the file, with the reason the export gives */
        pfi_err_prefix(&err, "%s: ", output ? output : "standard output");
    free(ids);
    pfi_store_close(st);
    if (output) {
        if (fclose(out) != 0 && rc == PFI_OK)
            rc = pfi_err_set(&err, PFI_EIO, "writing %s: %s", output, strerror(errno));
        if (rc == PFI_OK && tmp && rename(tmp, target) != 0)
            rc = pfi_err_set(&err, PFI_EIO, "renaming into %s: %s", output, strerror(errno));
        if (rc != PFI_OK && tmp)
            unlink(tmp);
        free(tmp);
    }
    return rc == PFI_OK ? PFI_EXIT_OK : pfi_cli_fail("runs export", &err);
}
