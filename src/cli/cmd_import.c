/* SPDX-License-Identifier: Apache-2.0 */
/* pfi import: the public measured sweeps (read in place from $PFI_DATA_DIR) into the store. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "store/store.h"
#include "util/units.h"

typedef int (*import_fn)(pfi_store *, const char *, int *, int *, pfi_err *);

int pfi_cmd_import(int argc, char **argv)
{
    const char *db = NULL;
    int as_json = 0;
    const pfi_opt opts[] = {
        {"db", PFI_OPT_STR, &db, "FILE", "the store (default $PFI_DB, else pfi.db; created)"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document on stdout"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi import perseus|zeus-nsdi|zeus-plo|all [PATH] [--db FILE] [--json]",
        "Import a public power-limit sweep: one run per (workload, GPU type, parallelism or "
        "batch size), one level per power limit.  PATH is the dataset's folder (default: "
        "perseus-sosp24, zeus-nsdi23-trace or zeus-plo-testdata under $PFI_DATA_DIR); for 'all' "
        "it is the folder holding the three.  Re-importing replaces the earlier import; a bad "
        "file leaves the store as it was.",
        opts,
        "pfi import all --db pfi.db                         # the three public datasets of $PFI_DATA_DIR\n"
        "pfi import perseus /data/perseus-sosp24 --db pfi.db --json"};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    if (npos < 1 || npos > 2) {
        fprintf(stderr, "pfi import: give a dataset (perseus, zeus-nsdi, zeus-plo or all) and "
                        "optionally its PATH\n");
        return PFI_EXIT_USAGE;
    }
    static const struct {
        const char *name;
        import_fn fn;
    } sets[] = {{"perseus", pfi_import_perseus},
                {"zeus-nsdi", pfi_import_zeus_nsdi},
                {"zeus-plo", pfi_import_zeus_plo}};
    int which = -1, all = strcmp(pos[0], "all") == 0;
    for (int i = 0; i < 3; i++)
        if (strcmp(pos[0], sets[i].name) == 0)
            which = i;
    if (which < 0 && !all) {
        fprintf(stderr, "pfi import: unknown dataset '%s' (perseus, zeus-nsdi, zeus-plo, all)\n",
                pos[0]);
        return PFI_EXIT_USAGE;
    }
    const char *path = npos > 1 ? pos[1] : NULL;
    pfi_err err = {0};
    pfi_store *st;
    /* A store this command creates and then fills with nothing is removed again: a failed
     * import leaves no empty database behind for the next command to read as "no runs". */
    const char *dbpath = db ? db : pfi_store_default_path();
    int existed = access(dbpath, F_OK) == 0;
    if (pfi_store_open(db, PFI_STORE_CREATE, &st, &err) != PFI_OK)
        return pfi_cli_fail("import", &err);
    int nr[PFI_IMPORT_NSOURCES] = {0}, nl[PFI_IMPORT_NSOURCES] = {0};
    if (all)
        rc = pfi_import_all(st, path, nr, nl, &err);
    else
        rc = sets[which].fn(st, path, &nr[which], &nl[which], &err);
    json_t *arr = as_json ? json_array() : NULL;
    if (rc == PFI_OK)
        for (int i = 0; i < PFI_IMPORT_NSOURCES; i++) {
            if (!all && i != which)
                continue;
            if (as_json)
                json_array_append_new(arr, json_pack("{s:s, s:i, s:i}", "source",
                                                     pfi_import_sources[i], "runs", nr[i],
                                                     "levels", nl[i]));
            else
                printf("imported %s: %d runs, %d levels into %s\n", pfi_import_sources[i], nr[i],
                       nl[i], pfi_store_path(st));
        }
    json_t *doc = as_json && rc == PFI_OK
                      ? json_pack("{s:s, s:s, s:o}", "db", pfi_store_path(st), "data_dir",
                                  path ? path : pfi_data_dir(), "imported", arr)
                      : NULL;
    if (!doc)
        json_decref(arr);
    pfi_store_close(st);
    if (rc != PFI_OK && !existed) {
        unlink(dbpath);
        for (const char *sfx = "-wal"; sfx; sfx = strcmp(sfx, "-wal") == 0 ? "-shm" : NULL) {
            char side[4200];
            snprintf(side, sizeof side, "%s%s", dbpath, sfx);
            unlink(side);
        }
    }
    if (rc != PFI_OK && err.code == PFI_ENOENT && !path) {
        fprintf(stderr, "pfi import: %s\n(the data folder is $PFI_DATA_DIR, default ../shared/data "
                        "from here: set it or give PATH)\n", err.msg);
        return PFI_EXIT_FAIL;
    }
    if (rc != PFI_OK)
        return pfi_cli_fail("import", &err);
    return doc ? pfi_cli_print_json(doc) : PFI_EXIT_OK;
}
