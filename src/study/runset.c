/* SPDX-License-Identifier: Apache-2.0 */
/* runset.c: loading runs from a store, the public data or the simulated fleet (runset.h). */
#include "study/runset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

#include "store/store.h"
#include "study/fleet.h"
#include "util/units.h"

/* "import the public sweeps (pfi import all)", then the ways b and c (NULL: none) joined with
 * ", " and a last "or". */
static void hint(char *out, size_t cap, const char *b, const char *c)
{
    const char *a = "import the public sweeps (pfi import all)";
    if (b && c)
        snprintf(out, cap, "%s, %s, or %s", a, b, c);
    else if (b || c)
        snprintf(out, cap, "%s or %s", a, b ? b : c);
    else
        snprintf(out, cap, "%s", a);
}

static int load_all(pfi_store *st, char **names, int nnames, const char *other, pfi_runset *out,
                    pfi_err *err)
{
    pfi_run_summary *sum = NULL;
    int ns = 0, rc = PFI_OK;
    long long *ids = NULL;
    int nid = 0;
    if (nnames > 0) {
        ids = malloc(sizeof *ids * (size_t)nnames);
        if (!ids)
            return pfi_err_set(err, PFI_ENOMEM, "out of memory");
        /* A run named twice (by id and by name, or the same name) is loaded once: pfi index
         * 8 8 listed and counted it twice. */
        for (int i = 0; i < nnames && rc == PFI_OK; i++) {
            rc = pfi_store_find_run(st, names[i], &ids[nid], err);
            int seen = 0;
            for (int k = 0; k < nid && !seen; k++)
                seen = ids[k] == ids[nid];
            nid += rc == PFI_OK && !seen;
        }
    } else {
        rc = pfi_store_list_runs(st, &sum, &ns, err);
        if (rc == PFI_OK && ns > 0) {
            ids = malloc(sizeof *ids * (size_t)ns);
            if (!ids)
                rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
            for (int i = 0; ids && i < ns; i++)
                ids[nid++] = sum[i].id;
        }
        free(sum);
    }
    if (rc == PFI_OK && nid == 0) {
        char h[256];
        hint(h, sizeof h, "sweep a job (pfi sweep)", other);
        rc = pfi_err_set(err, PFI_ENOENT, "no runs in %s: %s", pfi_store_path(st), h);
    }
    if (rc == PFI_OK) {
        out->runs = calloc((size_t)nid, sizeof *out->runs);
        if (!out->runs)
            rc = pfi_err_set(err, PFI_ENOMEM, "out of memory for %d runs", nid);
    }
    for (int i = 0; rc == PFI_OK && i < nid; i++) {
        rc = pfi_store_load_run(st, ids[i], &out->runs[i], err);
        if (rc == PFI_OK)
            out->n++;
    }
    free(ids);
    return rc;
}

int pfi_runset_load(const char *db, int public_data, char **names, int nnames, const char *other,
                    pfi_runset *out, pfi_err *err)
{
    memset(out, 0, sizeof *out);
    pfi_store *st;
    int rc;
    if (public_data) {
        if (db)
            return pfi_err_set(err, PFI_EINVAL, "give either --db or --public, not both");
        rc = pfi_store_open(":memory:", PFI_STORE_CREATE, &st, err);
        if (rc != PFI_OK)
            return rc;
        int nr[PFI_IMPORT_NSOURCES], nl[PFI_IMPORT_NSOURCES];
        rc = pfi_import_all(st, NULL, nr, nl, err);
        if (rc != PFI_OK) {
            pfi_store_close(st);
            if (rc == PFI_ENOENT && !pfi_data_dir_from_env()) {
                /* the default is relative: from another folder it names nothing, and the
                 * message should say where it looked and how to point it elsewhere */
                char cwd[1024];
                char msg[sizeof err->msg];
                snprintf(msg, sizeof msg, "%s (no $PFI_DATA_DIR: %s is read from the working "
                         "folder %s; set PFI_DATA_DIR to the data folder)", err->msg,
                         pfi_data_dir(), getcwd(cwd, sizeof cwd) ? cwd : "?");
                pfi_err_set(err, rc, "%s", msg);
            }
            return pfi_err_prefix(err, "importing the public data from %s: ", pfi_data_dir());
        }
        snprintf(out->where, sizeof out->where, "public data in %s", pfi_data_dir());
    } else {
        /* Loading runs only reads: pfi index or predict never upgrades a store (an older pfi
         * sharing it would then refuse it), and they work for a user who can only read it. */
        rc = pfi_store_open(db, PFI_STORE_READONLY, &st, err);
        /* The hint names only what the caller takes (other): pfi model train and eval take no
         * --public, and a daemon takes no options at all. */
        if (rc == PFI_ENOENT) {
            char h[256];
            hint(h, sizeof h, db ? NULL : "give --db FILE", other);
            return pfi_err_set(err, PFI_ENOENT, "no store at %s: %s",
                               db ? db : pfi_store_default_path(), h);
        }
        if (rc != PFI_OK)
            return rc;
        snprintf(out->where, sizeof out->where, "%s", pfi_store_path(st));
    }
    rc = load_all(st, names, nnames, other, out, err);
    pfi_store_close(st);
    if (rc != PFI_OK)
        pfi_runset_free(out);
    return rc;
}

int pfi_runset_fleet(const char *which, int seed, char **names, int nnames, pfi_runset *out,
                     pfi_err *err)
{
    memset(out, 0, sizeof *out);
    pfi_fleet_opts fo = pfi_fleet_defaults();
    pfi_fleet_run *fr;
    int n, rc = pfi_fleet_build(which, (uint64_t)seed, &fo, &fr, &n, err);
    if (rc != PFI_OK)
        return rc;
    out->runs = calloc((size_t)(n ? n : 1), sizeof *out->runs);
    if (!out->runs) {
        free(fr);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory for %d runs", n);
    }
    for (int i = 0; i < n; i++) {
        int keep = nnames == 0;
        for (int k = 0; k < nnames && !keep; k++)
            keep = strcmp(names[k], fr[i].run.name) == 0;
        if (keep)
            out->runs[out->n++] = fr[i].run;
    }
    free(fr);
    snprintf(out->where, sizeof out->where, "simulated fleet '%s' seed %d", which, seed);
    if (out->n == 0) {
        pfi_runset_free(out);
        return pfi_err_set(err, PFI_ENOENT, "no run of the simulated fleet '%s' has that name",
                           which);
    }
    return PFI_OK;
}

void pfi_runset_free(pfi_runset *rs)
{
    free(rs->runs);
    rs->runs = NULL;
    rs->n = 0;
}

int pfi_run_is_transformer(const pfi_run *r)
{
    static const char *const fams[] = {"gpt", "bert", "t5", "bloom", "llama", "mixtral",
                                       "mistral", "qwen", "deepseek", "opt"};
    for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++) {
        size_t n = strlen(fams[i]);
        if (strncasecmp(r->meta.family, fams[i], n) == 0 && r->meta.family[0])
            return 1;
        if (strncasecmp(r->meta.model, fams[i], n) == 0 && r->meta.model[0])
            return 1;
    }
    return 0;
}
