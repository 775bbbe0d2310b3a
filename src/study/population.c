/* SPDX-License-Identifier: Apache-2.0 */
/* population.c: the jobs of an allocation experiment (population.h). */
#include "study/population.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "study/fleet.h"
#include "study/runset.h"

void pfi_expt_pop_free(pfi_expt_pop *p)
{
    free(p->run);
    free(p->group);
    free(p->truth);
    free(p->run_of);
    free(p->own);
    memset(p, 0, sizeof *p);
}

int pfi_expt_source_wanted(const char *list, const char *src)
{
    if (!list)
        return 1;
    size_t n = strlen(src);
    for (const char *t = list; *t;) {
        const char *e = strchr(t, ',');
        size_t len = e ? (size_t)(e - t) : strlen(t);
        if (len == n && strncmp(t, src, n) == 0)
            return 1;
        t += len + (e ? 1 : 0);
    }
    return 0;
}

static int alloc_runs(pfi_expt_pop *p, int n, pfi_err *err)
{
    size_t m = (size_t)(n ? n : 1);
    p->run = malloc(sizeof *p->run * m);
    p->group = malloc(sizeof *p->group * m);
    p->truth = malloc(sizeof *p->truth * m);
    p->run_of = malloc(sizeof *p->run_of * m);
    if (!p->run || !p->group || !p->truth || !p->run_of)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    p->nruns = n;
    return PFI_OK;
}

/* Every name of a --source list is one some writer gives (store.h's pfi_store_sources): a
 * typo is refused, not read as "no runs". */
static int check_sources(const char *list, pfi_err *err)
{
    for (const char *t = list; t && *t;) {
        const char *e = strchr(t, ',');
        size_t len = e ? (size_t)(e - t) : strlen(t);
        int known = 0;
        for (int i = 0; i < PFI_STORE_NSOURCES && !known; i++)
            known = strlen(pfi_store_sources[i]) == len && strncmp(t, pfi_store_sources[i], len) == 0;
        if (!known) {
            char names[128] = "";
            for (int i = 0; i < PFI_STORE_NSOURCES; i++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         i ? ", " : "", pfi_store_sources[i]);
            return pfi_err_set(err, PFI_EINVAL, "unknown source '%.*s' (%s)", (int)len, t, names);
        }
        t += len + (e ? 1 : 0);
    }
    return PFI_OK;
}

/* The jobs: the wanted runs whose measured curve is usable. */
static void find_jobs(pfi_expt_pop *p, const char *sources)
{
    for (int i = 0; i < p->nruns; i++) {
        pfi_err e2 = {0};
        if (!pfi_expt_source_wanted(sources, p->run[i]->source))
            continue;
        if (pfi_curve_from_run(p->run[i], -1, &p->truth[p->n], &e2)) {
            p->skipped++;
            continue;
        }
        p->run_of[p->n++] = i;
    }
}

int pfi_expt_pop_check(const pfi_expt_pop *p, pfi_err *err)
{
    if (p->n < 2)
        return pfi_err_set(err, PFI_EINVAL, "%s: %d run(s) with a usable curve; need at least 2",
                           p->where, p->n);
    return PFI_OK;
}

int pfi_expt_pop_fleet(const char *which, uint64_t seed, const char *sources, pfi_expt_pop *p,
                       pfi_err *err)
{
    memset(p, 0, sizeof *p);
    int rc = check_sources(sources, err);
    if (rc)
        return rc;
    pfi_fleet_run *fr = NULL;
    int n = 0;
    pfi_fleet_opts fo = pfi_fleet_defaults();
    rc = pfi_fleet_build(which, seed, &fo, &fr, &n, err);
    if (rc)
        return rc;
    if ((rc = alloc_runs(p, n, err)) || !(p->own = malloc(sizeof *p->own * (size_t)(n ? n : 1)))) {
        free(fr);
        return rc ? rc : pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        p->own[i] = fr[i].run;
        p->run[i] = &p->own[i];
        p->group[i] = fr[i].group;
    }
    free(fr);
    snprintf(p->where, sizeof p->where, "simulated fleet '%s' (seed %llu)", which,
             (unsigned long long)seed);
    find_jobs(p, sources);
    return pfi_expt_pop_check(p, err);
}

/* Model names as the sources spell them: "bert-base-uncased" (zeus-plo) and
 * "bert_base_uncased" (zeus-nsdi) are one model, and one job group. */
static int same_model(const char *a, const char *b)
{
    for (;; a++, b++) {
        char x = *a == '-' ? '_' : (char)tolower((unsigned char)*a);
        char y = *b == '-' ? '_' : (char)tolower((unsigned char)*b);
        if (x != y)
            return 0;
        if (!x)
            return 1;
    }
}

int pfi_expt_pop_load(const char *db, int public_data, const char *sources, pfi_expt_pop *p,
                      pfi_err *err)
{
    memset(p, 0, sizeof *p);
    int rc = check_sources(sources, err);
    if (rc)
        return rc;
    pfi_runset rs;
    rc = pfi_runset_load(db, public_data, NULL, 0, "pass --public", &rs, err);
    if (rc)
        return rc;
    p->own = rs.runs;
    snprintf(p->where, sizeof p->where, "%s", rs.where);
    if ((rc = alloc_runs(p, rs.n, err)))
        return rc;
    /* Without a fleet's configuration groups, runs of the same model share a group. */
    for (int i = 0; i < rs.n; i++) {
        p->run[i] = &p->own[i];
        p->group[i] = i;
        for (int k = 0; k < i; k++)
            if (p->own[k].meta.model[0] && same_model(p->own[k].meta.model, p->own[i].meta.model)) {
                p->group[i] = p->group[k];
                break;
            }
    }
    find_jobs(p, sources);
    return pfi_expt_pop_check(p, err);
}

int pfi_expt_pop_runs(const pfi_run *const *runs, const int *groups, int n, const char *where,
                      pfi_expt_pop *p, pfi_err *err)
{
    memset(p, 0, sizeof *p);
    int rc = alloc_runs(p, n, err);
    if (rc)
        return rc;
    for (int i = 0; i < n; i++) {
        p->run[i] = runs[i];
        p->group[i] = groups[i];
    }
    snprintf(p->where, sizeof p->where, "%s", where);
    find_jobs(p, NULL);
    return PFI_OK;
}

int pfi_expt_pop_save(const pfi_expt_pop *p, const char *path, pfi_err *err)
{
    pfi_store *st;
    int rc = pfi_store_open(path, PFI_STORE_CREATE, &st, err);
    if (rc)
        return rc;
    const char *tag[1] = {"source=pfi evaluate --fleet"};
    for (int i = 0; !rc && i < p->nruns; i++)
        rc = pfi_store_save_run(st, p->run[i], "sim", tag, 1, NULL, err);
    pfi_store_close(st);
    return rc;
}
