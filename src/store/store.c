/* SPDX-License-Identifier: Apache-2.0 */
/* store.c: the writes of a sweep: jobs, runs, levels (opening is in open.c, telemetry in
 * telemetry.c, the SQLite plumbing every store file shares in sql.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "store/store.h"
#include "store/store_internal.h"
#include "util/text.h"

void pfi_store_close(pfi_store *st)
{
    if (!st)
        return;
    pfi_store_tx_rollback(st);
    if (st->db)
        sqlite3_close(st->db);
    free(st->path);
    free(st);
}

void pfi_store_set_busy_timeout(pfi_store *st, int ms)
{
    st->busy_ms = ms < 0 ? 0 : ms;
    sqlite3_busy_timeout(st->db, st->busy_ms);
}

const char *pfi_store_path(const pfi_store *st) { return st->path; }

const char *const pfi_store_sources[PFI_STORE_NSOURCES] = {"sweep", "sim", "perseus", "zeus-nsdi",
                                                           "zeus-plo"};
int pfi_store_schema_version(const pfi_store *st) { return st->version; }

/* ---- jobs ---- */

int pfi_store_create_job(pfi_store *st, const char *command, const char *config_json,
                         const char *const *tags, int ntags, long long *job_id, pfi_err *err)
{
    json_t *cfg = NULL, *tj = json_object();
    char *cfg_s = NULL, *tags_s = NULL;
    int rc = PFI_OK;
    if (config_json) {
        json_error_t je;
        cfg = json_loads(config_json, 0, &je);
        if (!cfg || !json_is_object(cfg)) {
            rc = pfi_err_set(err, PFI_EINVAL, "job configuration is not a JSON object%s%s",
                             cfg ? "" : ": ", cfg ? "" : je.text);
            goto out;
        }
    } else {
        cfg = json_object();
    }
    for (int i = 0; i < ntags; i++) {
        const char *eq = tags[i] ? strchr(tags[i], '=') : NULL;
        if (!eq || eq == tags[i]) {
            rc = pfi_err_set(err, PFI_EINVAL, "tag '%s' is not KEY=VALUE", tags[i] ? tags[i] : "");
            goto out;
        }
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)(eq - tags[i]), tags[i]);
        json_object_set_new(tj, key, json_string(eq + 1));
    }
    cfg_s = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
    tags_s = json_dumps(tj, JSON_COMPACT | JSON_SORT_KEYS);
    if (!cfg_s || !tags_s) {
        rc = pfi_err_set(err, PFI_EINVAL, "job configuration or tags are not valid UTF-8 JSON");
        goto out;
    }
    sqlite3_stmt *s;
    if ((rc = pfi_store_prepare(st, "INSERT INTO jobs(command, config_json, tags_json) "
                                    "VALUES (?, ?, ?)",
                                &s, err)) != PFI_OK)
        goto out;
    if (command)
        sqlite3_bind_text(s, 1, command, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, cfg_s, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, tags_s, -1, SQLITE_TRANSIENT);
    int src = sqlite3_step(s);
    sqlite3_finalize(s);
    if (src != SQLITE_DONE)
        rc = pfi_store_sqlerr(st, src, err, "recording the job");
    else if (job_id)
        *job_id = sqlite3_last_insert_rowid(st->db);
out:
    json_decref(cfg);
    json_decref(tj);
    free(cfg_s);
    free(tags_s);
    return rc;
}

/* ---- runs ---- */

static int check_text(const char *what, const char *s, pfi_err *err)
{
    char why[64];
    if (!s || pfi_text_printable(s, why, sizeof why))
        return PFI_OK;
    /* The text itself is not echoed: it is what must not reach a terminal. */
    return pfi_err_set(err, PFI_EINVAL, "the %s is not UTF-8 text without control characters "
                       "(%s)", what, why);
}

int pfi_store_check_run_text(const pfi_run *r, pfi_err *err)
{
    int rc;
    if ((rc = check_text("run name", r->name, err)) != PFI_OK ||
        (rc = check_text("source", r->source, err)) != PFI_OK ||
        (rc = check_text("GPU type", r->gpu_type, err)) != PFI_OK ||
        (rc = check_text("model", r->meta.model, err)) != PFI_OK)
        return rc;
    return check_text("model family", r->meta.family, err);
}

/* run_id: in, the id to use (0: the next free one); out, the id given. */
static int insert_run(pfi_store *st, long long job_id, const pfi_run *r, const char *backend,
                      const char *status, const char *label, int started_now, long long *run_id,
                      pfi_err *err)
{
    if (!r->name[0] || !r->source[0] || !r->gpu_type[0])
        return pfi_err_set(err, PFI_EINVAL, "a run needs a name, a source and a GPU type");
    int rc;
    if ((rc = pfi_store_check_run_text(r, err)) != PFI_OK ||
        (rc = check_text("backend", backend, err)) != PFI_OK ||
        (rc = check_text("throughput unit", label, err)) != PFI_OK)
        return rc;
    if (r->n_gpus < 1)
        return pfi_err_set(err, PFI_EINVAL, "run '%s': GPU count %d is not positive", r->name,
                           r->n_gpus);
    if (r->unit != PFI_TOKENS_PER_S && r->unit != PFI_SAMPLES_PER_S)
        return pfi_err_set(err, PFI_EINVAL, "run '%s': unknown throughput unit %d", r->name,
                           (int)r->unit);
    const char *unit = r->unit == PFI_TOKENS_PER_S ? "tokens/s" : "samples/s";
    sqlite3_stmt *s;
    rc = pfi_store_prepare(
        st,
        "INSERT INTO runs(id, job_id, name, source, backend, gpu_type, n_gpus, unit, unit_label,"
        " min_limit_w, max_limit_w, default_limit_w, model, family, moe, finetune, lora,"
        " params_b, dp, tp, pp, ep, seq_len, global_batch, started, status)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
        " CASE WHEN ? THEN strftime('%Y-%m-%dT%H:%M:%SZ','now') END, ?)",
        &s, err);
    if (rc != PFI_OK)
        return rc;
    const pfi_job_meta *m = &r->meta;
    int i = 1;
    if (*run_id > 0)
        sqlite3_bind_int64(s, i, *run_id);
    i++;
    sqlite3_bind_int64(s, i++, job_id);
    sqlite3_bind_text(s, i++, r->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, i++, r->source, -1, SQLITE_TRANSIENT);
    if (backend)
        sqlite3_bind_text(s, i, backend, -1, SQLITE_TRANSIENT);
    i++;
    sqlite3_bind_text(s, i++, r->gpu_type, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, i++, r->n_gpus);
    sqlite3_bind_text(s, i++, unit, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, i++, label && *label ? label : unit, -1, SQLITE_TRANSIENT);
    pfi_store_bind_real(s, i++, r->min_limit_w);
    pfi_store_bind_real(s, i++, r->max_limit_w);
    pfi_store_bind_real(s, i++, r->default_limit_w);
    sqlite3_bind_text(s, i++, m->model, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, i++, m->family, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, i++, m->moe);
    sqlite3_bind_int(s, i++, m->finetune);
    sqlite3_bind_int(s, i++, m->lora);
    pfi_store_bind_real(s, i++, m->params_b);
    sqlite3_bind_int(s, i++, m->dp);
    sqlite3_bind_int(s, i++, m->tp);
    sqlite3_bind_int(s, i++, m->pp);
    sqlite3_bind_int(s, i++, m->ep);
    sqlite3_bind_int(s, i++, m->seq_len);
    sqlite3_bind_int(s, i++, m->global_batch);
    sqlite3_bind_int(s, i++, started_now);
    sqlite3_bind_text(s, i++, status, -1, SQLITE_TRANSIENT);
    int src = sqlite3_step(s);
    sqlite3_finalize(s);
    if (src != SQLITE_DONE) {
        pfi_store_sqlerr(st, src, err, "recording the run");
        return pfi_err_prefix(err, "run '%s': ", r->name);
    }
    *run_id = sqlite3_last_insert_rowid(st->db);
    return PFI_OK;
}

int pfi_store_create_run(pfi_store *st, long long job_id, const pfi_run *run, const char *backend,
                         long long *run_id, pfi_err *err)
{
    long long id = 0;
    int rc = insert_run(st, job_id, run, backend, "running", NULL, 1, &id, err);
    if (rc == PFI_OK && run_id)
        *run_id = id;
    return rc;
}

static int update_run_text(pfi_store *st, const char *sql, long long run_id, const char *text,
                           pfi_err *err, const char *doing)
{
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(st, sql, &s, err);
    if (rc != PFI_OK)
        return rc;
    sqlite3_bind_text(s, 1, text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, run_id);
    int src = sqlite3_step(s);
    sqlite3_finalize(s);
    if (src != SQLITE_DONE)
        return pfi_store_sqlerr(st, src, err, doing);
    if (sqlite3_changes(st->db) == 0)
        return pfi_err_set(err, PFI_ENOENT, "no run %lld in '%s'", run_id, st->path);
    return PFI_OK;
}

int pfi_store_set_run_unit(pfi_store *st, long long run_id, pfi_tput_unit unit, pfi_err *err)
{
    const char *u = unit == PFI_SAMPLES_PER_S ? "samples/s" : "tokens/s";
    int rc = update_run_text(st, "UPDATE runs SET unit = ? WHERE id = ?", run_id, u, err,
                             "setting the unit");
    return rc != PFI_OK ? rc : pfi_store_set_unit_label(st, run_id, u, err);
}

int pfi_store_set_unit_label(pfi_store *st, long long run_id, const char *label, pfi_err *err)
{
    if (!label || !*label || strlen(label) >= sizeof(((pfi_run_summary *)0)->unit_label))
        return pfi_err_set(err, PFI_EINVAL, "unit label must be 1-47 characters");
    int rc = check_text("throughput unit", label, err);
    if (rc != PFI_OK)
        return rc;
    return update_run_text(st, "UPDATE runs SET unit_label = ? WHERE id = ?", run_id, label, err,
                           "setting the unit label");
}

int pfi_store_save_run(pfi_store *st, const pfi_run *run, const char *backend,
                       const char *const *tags, int ntags, long long *run_id, pfi_err *err)
{
    long long job, id, lid;
    int rc = pfi_store_create_job(st, NULL, NULL, tags, ntags, &job, err);
    if (rc == PFI_OK)
        rc = pfi_store_create_run(st, job, run, backend, &id, err);
    for (int k = 0; rc == PFI_OK && k < run->n_levels; k++) {
        rc = pfi_store_level_begin(st, err);
        if (rc == PFI_OK)
            rc = pfi_store_add_level(st, id, &run->levels[k], &lid, err);
        if (rc == PFI_OK)
            rc = pfi_store_level_commit(st, err);
        else
            pfi_store_level_abort(st);
    }
    if (rc == PFI_OK)
        rc = pfi_store_finish_run(st, id, "done", err);
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "storing %s: ", run->name);
    if (run_id)
        *run_id = id;
    return PFI_OK;
}

int pfi_store_finish_run(pfi_store *st, long long run_id, const char *status, pfi_err *err)
{
    if (!status || !*status || strlen(status) >= sizeof(((pfi_run_summary *)0)->status))
        return pfi_err_set(err, PFI_EINVAL, "run status must be 1-15 characters");
    return update_run_text(st,
                           "UPDATE runs SET status = ?, "
                           "ended = strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id = ?",
                           run_id, status, err, "finishing the run");
}

/* Inside the caller's transaction (or autocommit when none). */
static int delete_run_rows(pfi_store *st, long long run_id, pfi_err *err)
{
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(st, "SELECT job_id FROM runs WHERE id = ?", &s, err);
    if (rc != PFI_OK)
        return rc;
    sqlite3_bind_int64(s, 1, run_id);
    int src = sqlite3_step(s);
    long long job = src == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_finalize(s);
    if (src == SQLITE_DONE)
        return pfi_err_set(err, PFI_ENOENT, "no run %lld in '%s'", run_id, st->path);
    if (src != SQLITE_ROW)
        return pfi_store_sqlerr(st, src, err, "deleting a run");
    char sql[160];
    snprintf(sql, sizeof sql,
             "DELETE FROM runs WHERE id = %lld; DELETE FROM jobs WHERE id = %lld AND "
             "NOT EXISTS (SELECT 1 FROM runs WHERE job_id = %lld)",
             run_id, job, job);
    return pfi_store_exec(st, sql, err, "deleting a run");
}

int pfi_store_delete_run(pfi_store *st, long long run_id, pfi_err *err)
{
    int mode, rc = pfi_store_unit_begin(st, "pfi_delete", &mode, err);
    if (rc != PFI_OK)
        return rc;
    rc = delete_run_rows(st, run_id, err);
    int end = pfi_store_unit_end(st, "pfi_delete", mode, rc == PFI_OK, err);
    return rc == PFI_OK ? end : rc;
}

/* ---- levels ---- */

int pfi_store_level_begin(pfi_store *st, pfi_err *err)
{
    if (st->level)
        return pfi_err_set(err, PFI_ESTATE, "a level is already being written");
    int rc;
    if (st->in_tx) {
        /* Inside a batch: the level is a savepoint, so aborting it keeps the batch. */
        if ((rc = pfi_store_exec(st, "SAVEPOINT pfi_level", err, "starting a level")) == PFI_OK)
            st->level = 2;
        return rc;
    }
    if ((rc = pfi_store_tx_begin(st, err)) == PFI_OK)
        st->level = 1;
    return rc;
}

int pfi_store_level_commit(pfi_store *st, pfi_err *err)
{
    if (!st->level)
        return pfi_err_set(err, PFI_ESTATE, "no level is being written");
    int rc = st->level == 2 ? pfi_store_exec(st, "RELEASE pfi_level", err, "committing a level")
                            : pfi_store_tx_commit(st, err);
    if (rc == PFI_OK)
        st->level = 0;
    return rc;
}

void pfi_store_level_abort(pfi_store *st)
{
    if (!st || !st->level)
        return;
    if (st->level == 2)
        sqlite3_exec(st->db, "ROLLBACK TO pfi_level; RELEASE pfi_level", NULL, NULL, NULL);
    else
        pfi_store_tx_rollback(st);
    st->level = 0;
}

int pfi_store_batch_begin(pfi_store *st, pfi_err *err) { return pfi_store_tx_begin(st, err); }

int pfi_store_batch_commit(pfi_store *st, pfi_err *err)
{
    if (st->level)
        return pfi_err_set(err, PFI_ESTATE, "a level is still being written");
    return pfi_store_tx_commit(st, err);
}

void pfi_store_batch_abort(pfi_store *st)
{
    if (!st)
        return;
    pfi_store_level_abort(st);
    pfi_store_tx_rollback(st);
}

int pfi_store_add_level(pfi_store *st, long long run_id, const pfi_level *lv, long long *level_id,
                        pfi_err *err)
{
    if (!isfinite(lv->cap_w) || lv->cap_w <= 0)
        return pfi_err_set(err, PFI_EINVAL, "run %lld: level cap %g W is not a positive power",
                           run_id, lv->cap_w);
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(st, "SELECT (SELECT COUNT(*) FROM runs WHERE id = ?1),"
                                   " (SELECT COALESCE(MAX(seq) + 1, 0) FROM levels"
                                   "  WHERE run_id = ?1)",
                               &s, err);
    if (rc != PFI_OK)
        return rc;
    sqlite3_bind_int64(s, 1, run_id);
    int src = sqlite3_step(s);
    int exists = src == SQLITE_ROW && sqlite3_column_int(s, 0) > 0;
    int seq = src == SQLITE_ROW ? sqlite3_column_int(s, 1) : 0;
    sqlite3_finalize(s);
    if (src != SQLITE_ROW)
        return pfi_store_sqlerr(st, src, err, "adding a level");
    if (!exists)
        return pfi_err_set(err, PFI_ENOENT, "no run %lld in '%s'", run_id, st->path);
    if (seq >= PFI_MAX_LEVELS)
        return pfi_err_set(err, PFI_ENOTSUP,
                           "run %lld already has %d levels (the most a run holds)", run_id,
                           PFI_MAX_LEVELS);
    rc = pfi_store_prepare(st,
                           "INSERT INTO levels(run_id, seq, cap_w, enforced_w, power_w, tput,"
                           " tput_lo, tput_hi, sm_clock_mhz, powercap_frac, gpu_util, sm_active,"
                           " tensor_active, dram_active, nvlink_mibs, pcie_mibs, t_start_s,"
                           " t_end_s, n_samples, began_s, ended_s, enforced_min_w)"
                           " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           &s, err);
    if (rc != PFI_OK)
        return rc;
    int i = 1;
    sqlite3_bind_int64(s, i++, run_id);
    sqlite3_bind_int(s, i++, seq);
    const double v[] = {lv->cap_w,         lv->enforced_w,   lv->power_w,     lv->tput,
                        lv->tput_lo,       lv->tput_hi,      lv->sm_clock_mhz, lv->powercap_frac,
                        lv->gpu_util,      lv->sm_active,    lv->tensor_active, lv->dram_active,
                        lv->nvlink_mibs,   lv->pcie_mibs,    lv->t_start_s,   lv->t_end_s};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
        pfi_store_bind_real(s, i++, v[k]);
    sqlite3_bind_int(s, i++, lv->n_samples);
    int timed = lv->ended_s > lv->began_s; /* see core/run.h */
    pfi_store_bind_real(s, i++, timed ? lv->began_s : NAN);
    pfi_store_bind_real(s, i++, timed ? lv->ended_s : NAN);
    /* 0 is a zeroed struct's (an import, a test), never a limit: unknown. */
    pfi_store_bind_real(s, i++, lv->enforced_min_w > 0 ? lv->enforced_min_w : NAN);
    src = sqlite3_step(s);
    sqlite3_finalize(s);
    if (src != SQLITE_DONE)
        return pfi_store_sqlerr(st, src, err, "adding a level");
    if (level_id)
        *level_id = sqlite3_last_insert_rowid(st->db);
    return PFI_OK;
}

/* ---- imports ---- */

/* Deletes the imported run of this source and name; *reuse gets its id (0 if none), so a
 * re-imported run keeps the id people and scripts know it by.  status = 'imported' lets SQLite
 * search the partial index runs_imported (unique on source and name: at most one row); without
 * it every imported run scanned the whole runs table, a re-import quadratic in its runs.  Only
 * an import writes the sources it names (perseus, zeus-nsdi, zeus-plo), always so. */
static int delete_named(pfi_store *st, const char *source, const char *name, long long *reuse,
                        pfi_err *err)
{
    sqlite3_stmt *s;
    *reuse = 0;
    int rc = pfi_store_prepare(st, "SELECT id FROM runs WHERE source = ? AND name = ?"
                                   " AND status = 'imported' ORDER BY id",
                               &s, err);
    if (rc != PFI_OK)
        return rc;
    sqlite3_bind_text(s, 1, source, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, name, -1, SQLITE_TRANSIENT);
    long long ids[16];
    int n = 0, src;
    while ((src = sqlite3_step(s)) == SQLITE_ROW && n < 16)
        ids[n++] = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    if (src != SQLITE_DONE && src != SQLITE_ROW)
        return pfi_store_sqlerr(st, src, err, "replacing an imported run");
    for (int i = 0; i < n; i++)
        if ((rc = delete_run_rows(st, ids[i], err)) != PFI_OK)
            return rc;
    if (n > 0)
        *reuse = ids[0];
    return PFI_OK;
}

int pfi_store_write_imported(pfi_store *st, const pfi_run *run, const char *unit_label,
                             const char *config_json, pfi_err *err)
{
    long long job, id;
    int rc;
    if ((rc = delete_named(st, run->source, run->name, &id, err)) != PFI_OK ||
        (rc = pfi_store_create_job(st, NULL, config_json, NULL, 0, &job, err)) != PFI_OK ||
        (rc = insert_run(st, job, run, NULL, "imported", unit_label, 0, &id, err)) != PFI_OK)
        return rc;
    for (int i = 0; i < run->n_levels; i++)
        if ((rc = pfi_store_add_level(st, id, &run->levels[i], NULL, err)) != PFI_OK)
            return pfi_err_prefix(err, "run '%s': ", run->name);
    return PFI_OK;
}
