/* SPDX-License-Identifier: Apache-2.0 */
/* import.c: every public dataset in one transaction (store.h: pfi_import_all), apart from the
 * importers it calls and the helpers they share (import_common.c). */
#include <stdio.h>

#include "store/store.h"
#include "store/store_internal.h"
#include "util/units.h"

const char *const pfi_import_sources[PFI_IMPORT_NSOURCES] = {"perseus", "zeus-nsdi", "zeus-plo"};

int pfi_import_all(pfi_store *st, const char *root, int nruns[PFI_IMPORT_NSOURCES],
                   int nlevels[PFI_IMPORT_NSOURCES], pfi_err *err)
{
    static const char *const subs[PFI_IMPORT_NSOURCES] = {"perseus-sosp24", "zeus-nsdi23-trace",
                                                          "zeus-plo-testdata"};
    int (*const fn[PFI_IMPORT_NSOURCES])(pfi_store *, const char *, int *, int *, pfi_err *) = {
        pfi_import_perseus, pfi_import_zeus_nsdi, pfi_import_zeus_plo};
    int r[PFI_IMPORT_NSOURCES] = {0}, l[PFI_IMPORT_NSOURCES] = {0}, mode;
    int rc = pfi_store_unit_begin(st, "pfi_import_all", &mode, err);
    if (rc != PFI_OK)
        return rc;
    for (int i = 0; i < PFI_IMPORT_NSOURCES && rc == PFI_OK; i++) {
        char dir[1200];
        snprintf(dir, sizeof dir, "%s/%s", root && *root ? root : pfi_data_dir(), subs[i]);
        rc = fn[i](st, dir, &r[i], &l[i], err);
    }
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
