/* SPDX-License-Identifier: Apache-2.0 */
/* import.c: an import read in full before any store is opened, then written in one transaction
 * (store.h: pfi_import_read, pfi_import_write, pfi_import_all), apart from the importers it
 * calls and the helpers they share (import_common.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/import_common.h"
#include "store/store.h"
#include "store/store_internal.h"
#include "util/units.h"

const char *const pfi_import_sources[PFI_IMPORT_NSOURCES] = {"perseus", "zeus-nsdi", "zeus-plo"};

struct pfi_import {
    pfi_import_set set[PFI_IMPORT_NSOURCES];
    int read[PFI_IMPORT_NSOURCES]; /* the sources this import holds */
};

int pfi_import_read(const char *which, const char *path, pfi_import **out, pfi_err *err)
{
    static const char *const subs[PFI_IMPORT_NSOURCES] = {"perseus-sosp24", "zeus-nsdi23-trace",
                                                          "zeus-plo-testdata"};
    static const pfi_import_read_fn readers[PFI_IMPORT_NSOURCES] = {
        pfi_import_perseus_read, pfi_import_zeus_nsdi_read, pfi_import_zeus_plo_read};
    *out = NULL;
    int all = strcmp(which, "all") == 0, one = -1;
    for (int i = 0; i < PFI_IMPORT_NSOURCES; i++)
        if (strcmp(which, pfi_import_sources[i]) == 0)
            one = i;
    if (!all && one < 0)
        return pfi_err_set(err, PFI_EINVAL,
                           "unknown dataset '%s' (perseus, zeus-nsdi, zeus-plo, all)", which);
    pfi_import *imp = calloc(1, sizeof *imp);
    if (!imp)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    int rc = PFI_OK;
    for (int i = 0; i < PFI_IMPORT_NSOURCES && rc == PFI_OK; i++) {
        if (!all && i != one)
            continue;
        char dir[1200];
        if (all)
            snprintf(dir, sizeof dir, "%s/%s", path && *path ? path : pfi_data_dir(), subs[i]);
        imp->read[i] = 1;
        rc = readers[i](all ? dir : path, &imp->set[i], err);
        /* Here as well as when written: a refused set must not even open the store. */
        if (rc == PFI_OK && pfi_import_set_check_names(&imp->set[i], err) != PFI_OK)
            rc = pfi_err_prefix(err, "import %s: ", pfi_import_sources[i]);
    }
    if (rc != PFI_OK) {
        pfi_import_free(imp);
        return rc;
    }
    *out = imp;
    return PFI_OK;
}

int pfi_import_write(pfi_store *st, const pfi_import *imp, int nruns[PFI_IMPORT_NSOURCES],
                     int nlevels[PFI_IMPORT_NSOURCES], pfi_err *err)
{
    int r[PFI_IMPORT_NSOURCES] = {0}, l[PFI_IMPORT_NSOURCES] = {0}, mode;
    int rc = pfi_store_unit_begin(st, "pfi_import_all", &mode, err);
    if (rc != PFI_OK)
        return rc;
    for (int i = 0; i < PFI_IMPORT_NSOURCES && rc == PFI_OK; i++)
        if (imp->read[i])
            rc = pfi_import_set_write(st, &imp->set[i], &r[i], &l[i], err);
    int end = pfi_store_unit_end(st, "pfi_import_all", mode, rc == PFI_OK, err);
    if (rc == PFI_OK)
        rc = end;
    if (rc != PFI_OK)
        return rc;
    for (int i = 0; i < PFI_IMPORT_NSOURCES; i++) {
        if (nruns)
            nruns[i] = r[i];
        if (nlevels)
            nlevels[i] = l[i];
    }
    return PFI_OK;
}

void pfi_import_free(pfi_import *imp)
{
    if (!imp)
        return;
    for (int i = 0; i < PFI_IMPORT_NSOURCES; i++)
        pfi_import_set_free(&imp->set[i]);
    free(imp);
}

int pfi_import_all(pfi_store *st, const char *root, int nruns[PFI_IMPORT_NSOURCES],
                   int nlevels[PFI_IMPORT_NSOURCES], pfi_err *err)
{
    pfi_import *imp;
    int rc = pfi_import_read("all", root, &imp, err);
    if (rc != PFI_OK)
        return rc;
    rc = pfi_import_write(st, imp, nruns, nlevels, err);
    pfi_import_free(imp);
    return rc;
}
