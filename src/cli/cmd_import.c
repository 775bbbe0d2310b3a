/* SPDX-License-Identifier: Apache-2.0 */
/* pfi import: the public measured sweeps (read in place from $PFI_DATA_DIR) into the store. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "store/store.h"
#include "util/units.h"

/* What was imported, as a line per dataset or one JSON document; 0 or the JSON's exit status. */
static int print_imported(const char *which, const char *path, pfi_store *st, const int *nr,
                          const int *nl, int as_json)
{
    int all = strcmp(which, "all") == 0;
    json_t *arr = as_json ? json_array() : NULL;
    for (int i = 0; i < PFI_IMPORT_NSOURCES; i++) {
        if (!all && strcmp(which, pfi_import_sources[i]) != 0)
            continue;
        if (as_json)
            json_array_append_new(arr, json_pack("{s:s, s:i, s:i}", "source",
                                                 pfi_import_sources[i], "runs", nr[i], "levels",
                                                 nl[i]));
        else
            printf("imported %s: %d runs, %d levels into %s\n", pfi_import_sources[i], nr[i],
                   nl[i], pfi_store_path(st));
    }
    if (!as_json)
        return PFI_EXIT_OK;
    return pfi_cli_print_json(json_pack("{s:s, s:s, s:o}", "db", pfi_store_path(st), "data_dir",
                                        path ? path : pfi_data_dir(), "imported", arr));
}

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
    int known = strcmp(pos[0], "all") == 0;
    for (int i = 0; i < PFI_IMPORT_NSOURCES; i++)
        known |= strcmp(pos[0], pfi_import_sources[i]) == 0;
    if (!known) {
        fprintf(stderr, "pfi import: unknown dataset '%s' (perseus, zeus-nsdi, zeus-plo, all)\n",
                pos[0]);
        return PFI_EXIT_USAGE;
    }
    const char *path = npos > 1 ? pos[1] : NULL;
    pfi_err err = {0};
    /* Every file is read and checked before the store is opened: a missing folder or a bad line
     * then neither creates a database nor touches (migrates) an existing one.  Nothing is
     * removed after a failure: the file may by then be another pfi's, created meanwhile. */
    pfi_import *imp;
    if ((rc = pfi_import_read(pos[0], path, &imp, &err)) != PFI_OK) {
        if (err.code != PFI_ENOENT || path)
            return pfi_cli_fail("import", &err);
        fprintf(stderr, "pfi import: %s\n(the data folder is $PFI_DATA_DIR, default ../shared/data "
                        "from here: set it or give PATH)\n", err.msg);
        return PFI_EXIT_FAIL;
    }
    pfi_store *st;
    int nr[PFI_IMPORT_NSOURCES] = {0}, nl[PFI_IMPORT_NSOURCES] = {0};
    rc = pfi_store_open(db, PFI_STORE_CREATE, &st, &err);
    if (rc == PFI_OK) {
        rc = pfi_import_write(st, imp, nr, nl, &err);
        if (rc == PFI_OK)
            rc = print_imported(pos[0], path, st, nr, nl, as_json);
        else
            rc = pfi_cli_fail("import", &err);
        pfi_store_close(st);
    } else {
        rc = pfi_cli_fail("import", &err);
    }
    pfi_import_free(imp);
    return rc;
}
