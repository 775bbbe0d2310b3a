/* SPDX-License-Identifier: Apache-2.0 */
/* query.c: reading runs back: the list, one run's summary, and a whole pfi_run. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store/store_internal.h"

#define RUN_COLS                                                                                  \
    "id, job_id, name, source, gpu_type, COALESCE(backend, ''), status, unit_label,"             \
    " COALESCE(started, ''), COALESCE(ended, ''), n_gpus, unit, default_limit_w"

static void summary_from_row(sqlite3_stmt *s, pfi_run_summary *r)
{
    memset(r, 0, sizeof *r);
    r->id = sqlite3_column_int64(s, 0);
    r->job_id = sqlite3_column_int64(s, 1);
    pfi_store_col_text(s, 2, r->name, sizeof r->name);
    pfi_store_col_text(s, 3, r->source, sizeof r->source);
    pfi_store_col_text(s, 4, r->gpu_type, sizeof r->gpu_type);
    pfi_store_col_text(s, 5, r->backend, sizeof r->backend);
    pfi_store_col_text(s, 6, r->status, sizeof r->status);
    pfi_store_col_text(s, 7, r->unit_label, sizeof r->unit_label);
    pfi_store_col_text(s, 8, r->started, sizeof r->started);
    pfi_store_col_text(s, 9, r->ended, sizeof r->ended);
    r->n_gpus = sqlite3_column_int(s, 10);
    const unsigned char *u = sqlite3_column_text(s, 11);
    r->unit = (u && strcmp((const char *)u, "tokens/s") == 0) ? PFI_TOKENS_PER_S
                                                                 : PFI_SAMPLES_PER_S;
    r->default_limit_w = pfi_store_col_real(s, 12);
    r->t0 = r->p0 = r->cap0_w = NAN;
}

/* The baseline level: the one at the default limit (within 1 W), else the highest cap; the
 * first such when a sweep measured it twice. */
static int baseline_index(const double *caps, int n, double default_w)
{
    int best = -1;
    if (isfinite(default_w))
        for (int i = 0; i < n && best < 0; i++)
            if (fabs(caps[i] - default_w) <= 1.0)
                best = i;
    for (int i = 0; i < n && best < 0; i++) {
        int top = 1;
        for (int j = 0; j < n; j++)
            if (caps[j] > caps[i])
                top = 0;
        if (top)
            best = i;
    }
    return best;
}

static int fill_baseline(pfi_store *st, sqlite3_stmt *lv, pfi_run_summary *r, pfi_err *err)
{
    double caps[PFI_MAX_LEVELS], pw[PFI_MAX_LEVELS], tp[PFI_MAX_LEVELS];
    int n = 0, src;
    sqlite3_reset(lv);
    sqlite3_bind_int64(lv, 1, r->id);
    while ((src = sqlite3_step(lv)) == SQLITE_ROW) {
        if (n < PFI_MAX_LEVELS) {
            caps[n] = sqlite3_column_double(lv, 0);
            pw[n] = pfi_store_col_real(lv, 1);
            tp[n] = pfi_store_col_real(lv, 2);
        }
        n++;
    }
    if (src != SQLITE_DONE)
        return pfi_store_sqlerr(st, src, err, "reading levels");
    r->n_levels = n;
    int b = baseline_index(caps, n < PFI_MAX_LEVELS ? n : PFI_MAX_LEVELS, r->default_limit_w);
    if (b >= 0) {
        r->cap0_w = caps[b];
        r->p0 = pw[b];
        r->t0 = tp[b];
    }
    return PFI_OK;
}

static int prepare_levels(pfi_store *st, sqlite3_stmt **lv, pfi_err *err)
{
    return pfi_store_prepare(st, "SELECT cap_w, power_w, tput FROM levels WHERE run_id = ?"
                                 " ORDER BY seq",
                             lv, err);
}

int pfi_store_list_runs(pfi_store *st, pfi_run_summary **out, int *n, pfi_err *err)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *s, *lv;
    int rc = pfi_store_prepare(st, "SELECT " RUN_COLS " FROM runs ORDER BY id", &s, err);
    if (rc != PFI_OK)
        return rc;
    if ((rc = prepare_levels(st, &lv, err)) != PFI_OK) {
        sqlite3_finalize(s);
        return rc;
    }
    pfi_run_summary *v = NULL;
    int cap = 0, src;
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        if (*n == cap) {
            int nc = cap ? 2 * cap : 64;
            pfi_run_summary *nv = realloc(v, (size_t)nc * sizeof *nv);
            if (!nv) {
                rc = pfi_err_set(err, PFI_ENOMEM, "out of memory listing runs");
                break;
            }
            v = nv;
            cap = nc;
        }
        summary_from_row(s, &v[*n]);
        if ((rc = fill_baseline(st, lv, &v[*n], err)) != PFI_OK)
            break;
        (*n)++;
    }
    if (rc == PFI_OK && src != SQLITE_DONE)
        rc = pfi_store_sqlerr(st, src, err, "listing runs");
    sqlite3_finalize(s);
    sqlite3_finalize(lv);
    if (rc != PFI_OK || *n == 0) {
        free(v);
        v = NULL;
        if (rc != PFI_OK)
            *n = 0;
    }
    *out = v;
    return rc;
}

int pfi_store_run_summary(pfi_store *st, long long run_id, pfi_run_summary *out, pfi_err *err)
{
    sqlite3_stmt *s, *lv;
    int rc = pfi_store_prepare(st, "SELECT " RUN_COLS " FROM runs WHERE id = ?", &s, err);
    if (rc != PFI_OK)
        return rc;
    sqlite3_bind_int64(s, 1, run_id);
    int src = sqlite3_step(s);
    if (src == SQLITE_ROW)
        summary_from_row(s, out);
    sqlite3_finalize(s);
    if (src == SQLITE_DONE)
        return pfi_err_set(err, PFI_ENOENT, "no run %lld in '%s'", run_id, st->path);
    if (src != SQLITE_ROW)
        return pfi_store_sqlerr(st, src, err, "reading a run");
    if ((rc = prepare_levels(st, &lv, err)) != PFI_OK)
        return rc;
    rc = fill_baseline(st, lv, out, err);
    sqlite3_finalize(lv);
    return rc;
}

int pfi_store_find_run(pfi_store *st, const char *key, long long *run_id, pfi_err *err)
{
    if (!key || !*key)
        return pfi_err_set(err, PFI_EINVAL, "no run given");
    sqlite3_stmt *s;
    char *end;
    errno = 0;
    long long id = strtoll(key, &end, 10);
    int numeric = *end == '\0' && errno == 0;
    int rc = pfi_store_prepare(st, numeric ? "SELECT id FROM runs WHERE id = ?"
                                           : "SELECT id FROM runs WHERE name = ? ORDER BY id",
                               &s, err);
    if (rc != PFI_OK)
        return rc;
    if (numeric)
        sqlite3_bind_int64(s, 1, id);
    else
        sqlite3_bind_text(s, 1, key, -1, SQLITE_TRANSIENT);
    int src = sqlite3_step(s), found = 0;
    if (src == SQLITE_ROW) {
        *run_id = sqlite3_column_int64(s, 0);
        found = 1;
        /* The same name twice (two sweeps named alike): ask for the id rather than guess. */
        if (!numeric && sqlite3_step(s) == SQLITE_ROW) {
            long long other = sqlite3_column_int64(s, 0);
            sqlite3_finalize(s);
            return pfi_err_set(err, PFI_EINVAL,
                               "more than one run is named '%s' (ids %lld, %lld...): give the id",
                               key, *run_id, other);
        }
    }
    sqlite3_finalize(s);
    if (!found && (src == SQLITE_DONE || src == SQLITE_ROW))
        return pfi_err_set(err, PFI_ENOENT,
                           "no run %s%s%s in '%s' (pfi runs lists them)", numeric ? "" : "'",
                           key, numeric ? "" : "'", st->path);
    if (!found)
        return pfi_store_sqlerr(st, src, err, "looking up a run");
    return PFI_OK;
}

int pfi_store_load_run(pfi_store *st, long long run_id, pfi_run *out, pfi_err *err)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(
        st,
        "SELECT id, name, source, gpu_type, n_gpus, unit, min_limit_w, max_limit_w,"
        " default_limit_w, model, family, moe, finetune, lora, params_b, dp, tp, pp, ep,"
        " seq_len, global_batch FROM runs WHERE id = ?",
        &s, err);
    if (rc != PFI_OK)
        return rc;
    sqlite3_bind_int64(s, 1, run_id);
    int src = sqlite3_step(s);
    if (src == SQLITE_ROW) {
        int i = 0;
        out->id = sqlite3_column_int64(s, i++);
        pfi_store_col_text(s, i++, out->name, sizeof out->name);
        pfi_store_col_text(s, i++, out->source, sizeof out->source);
        pfi_store_col_text(s, i++, out->gpu_type, sizeof out->gpu_type);
        out->n_gpus = sqlite3_column_int(s, i++);
        const unsigned char *u = sqlite3_column_text(s, i++);
        out->unit = (u && strcmp((const char *)u, "tokens/s") == 0) ? PFI_TOKENS_PER_S
                                                                     : PFI_SAMPLES_PER_S;
        out->min_limit_w = pfi_store_col_real(s, i++);
        out->max_limit_w = pfi_store_col_real(s, i++);
        out->default_limit_w = pfi_store_col_real(s, i++);
        pfi_job_meta *m = &out->meta;
        pfi_store_col_text(s, i++, m->model, sizeof m->model);
        pfi_store_col_text(s, i++, m->family, sizeof m->family);
        m->moe = sqlite3_column_int(s, i++);
        m->finetune = sqlite3_column_int(s, i++);
        m->lora = sqlite3_column_int(s, i++);
        m->params_b = pfi_store_col_real(s, i++);
        m->dp = sqlite3_column_int(s, i++);
        m->tp = sqlite3_column_int(s, i++);
        m->pp = sqlite3_column_int(s, i++);
        m->ep = sqlite3_column_int(s, i++);
        m->seq_len = sqlite3_column_int(s, i++);
        m->global_batch = sqlite3_column_int(s, i++);
    }
    sqlite3_finalize(s);
    if (src == SQLITE_DONE)
        return pfi_err_set(err, PFI_ENOENT, "no run %lld in '%s'", run_id, st->path);
    if (src != SQLITE_ROW)
        return pfi_store_sqlerr(st, src, err, "loading a run");
    rc = pfi_store_prepare(st,
                           "SELECT cap_w, enforced_w, power_w, tput, tput_lo, tput_hi,"
                           " sm_clock_mhz, powercap_frac, gpu_util, sm_active, tensor_active,"
                           " dram_active, nvlink_mibs, pcie_mibs, t_start_s, t_end_s, n_samples,"
                           " began_s, ended_s, enforced_min_w FROM levels WHERE run_id = ?"
                           " ORDER BY seq",
                           &s, err);
    if (rc != PFI_OK)
        return rc;
    sqlite3_bind_int64(s, 1, run_id);
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        if (out->n_levels >= PFI_MAX_LEVELS) {
            sqlite3_finalize(s);
            return pfi_err_set(err, PFI_ENOTSUP, "run %lld has more than %d levels", run_id,
                               PFI_MAX_LEVELS);
        }
        pfi_level *l = &out->levels[out->n_levels++];
        double *v[] = {&l->cap_w,        &l->enforced_w,   &l->power_w,     &l->tput,
                       &l->tput_lo,      &l->tput_hi,      &l->sm_clock_mhz, &l->powercap_frac,
                       &l->gpu_util,     &l->sm_active,    &l->tensor_active, &l->dram_active,
                       &l->nvlink_mibs,  &l->pcie_mibs,    &l->t_start_s,   &l->t_end_s};
        for (int k = 0; k < (int)(sizeof v / sizeof v[0]); k++)
            *v[k] = pfi_store_col_real(s, k);
        l->n_samples = sqlite3_column_int(s, 16);
        l->began_s = pfi_store_col_real(s, 17);
        l->ended_s = pfi_store_col_real(s, 18);
        l->enforced_min_w = pfi_store_col_real(s, 19);
    }
    sqlite3_finalize(s);
    if (src != SQLITE_DONE)
        return pfi_store_sqlerr(st, src, err, "loading levels");
    return PFI_OK;
}
