/* daemon.c: the life of `pfi serve`.
 *
 * Start: restore what a crashed predecessor left (its journal), read the original limits,
 * journal them durably before anything can change, reload registered jobs, listen.  Run: sample
 * telemetry, advance ramps, watch heartbeats, re-plan.  Stop (SIGTERM/SIGINT): stop listening,
 * put every original limit back, remove the journal.  A SIGKILL skips the last step; the next
 * start does it. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw/backend_sim.h"
#include "measure/journal.h"
#include "serve/serve_int.h"

static int write_port_file(const char *path, const char *where, pfi_err *err)
{
    char tmp[PFI_SERVE_PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return pfi_err_set(err, PFI_EIO, "cannot write %s: %s", tmp, strerror(errno));
    fprintf(f, "%s\n", where);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        return pfi_err_set(err, PFI_EIO, "cannot write %s: %s", path, strerror(errno));
    return PFI_OK;
}

/* Limits a crashed or killed predecessor left behind go back before anything else. */
static int recover_journal(const char *path, pfi_backend *b, char *note, size_t nsize,
                           pfi_err *err)
{
    pfi_journal old;
    memset(&old, 0, sizeof old);
    old.lock_fd = -1;
    int rc = pfi_journal_load(&old, path, 0, err);
    if (rc == PFI_ENOENT) {
        pfi_err_clear(err);
        return PFI_OK;
    }
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "journal %s: ", path);
    int restored = 0;
    rc = pfi_journal_restore(&old, b, &restored, err);
    pfi_journal_close(&old);
    if (rc != PFI_OK)
        return pfi_err_prefix(err,
                              "limits journaled by process %ld could not all be restored "
                              "(%d of %d put back; fix it, then `pfi restore --journal %s`): ",
                              old.pid, restored, old.n, path);
    snprintf(note, nsize,
             "restored %d original power limit(s) left by process %ld (crashed or killed)",
             restored, old.pid);
    return PFI_OK;
}

/* 1 when every journaled GPU (matched by UUID) reads back its journaled limit. */
static int journal_matches(const pfi_journal *j, pfi_backend *b)
{
    int count = 0;
    pfi_err e = {0};
    if (pfi_hw_count(b, &count, &e) != PFI_OK)
        return 0;
    for (int k = 0; k < j->n; k++) {
        int found = 0;
        for (int i = 0; i < count && !found; i++) {
            pfi_device d;
            if (pfi_hw_info(b, i, &d, &e) == PFI_OK && !strcmp(d.uuid, j->e[k].uuid)) {
                if (!(fabs(d.limit_w - j->e[k].limit_w) <= 0.5))
                    return 0;
                found = 1;
            }
        }
        if (!found)
            return 0;
    }
    return 1;
}

static void reload_one(void *ctx, const char *id, const char *spec)
{
    srv_node *n = ctx;
    json_error_t je;
    json_t *doc = json_loads(spec, 0, &je);
    pfi_err e = {0};
    if (!doc || pfi_srv_job_reload(n, doc, &e) != PFI_OK) {
        pfi_srv_event_add(n, "job_dropped", "saved job %s not registered again: %s", id,
                      doc ? e.msg : je.text);
        if (pfi_audit_delete_job(n->audit, id) != PFI_OK)
            pfi_srv_event_add(n, "db_error", "saved job %s could not be removed from the database",
                          id);
    } else {
        pfi_srv_event_add(n, "job_reloaded", "job %s registered again from the database", id);
    }
    json_decref(doc);
}

static void sleep_until(double t, volatile sig_atomic_t *stop)
{
    while (!*stop) {
        double left = t - pfi_clock_mono();
        if (left <= 0)
            return;
        pfi_clock_sleep(left > 0.02 ? 0.02 : left);
    }
}

/* --budget, else with resume the budget saved before the stop ("none": no budget). */
static int initial_budget(srv_node *n, const pfi_serve_config *c, pfi_err *err)
{
    char budget_s[64] = "";
    if (c->budget[0])
        snprintf(budget_s, sizeof budget_s, "%s", c->budget);
    else if (c->resume && pfi_audit_get_state(n->audit, "budget_w", budget_s, sizeof budget_s) ==
                              PFI_OK &&
             !strcmp(budget_s, "none"))
        budget_s[0] = '\0';
    if (!budget_s[0])
        return PFI_OK;
    double w;
    json_t *res = NULL;
    pfi_err e = {0};
    if (pfi_srv_budget_parse(n, budget_s, &w, &e) != PFI_OK ||
        pfi_srv_budget_set(n, w, 0, &res, &e) != PFI_OK)
        return pfi_err_set(err, e.code ? e.code : PFI_EINVAL, "initial budget %s: %s", budget_s,
                           e.msg);
    json_decref(res);
    return PFI_OK;
}

static void run_loop(srv_node *n, const pfi_serve_config *c, pfi_backend *b,
                     volatile sig_atomic_t *stop)
{
    double next = pfi_clock_mono(), last = next;
    /* The simulator without a shared state runs in virtual time, which only moves when someone
     * sleeps on it: move it with the wall clock, so a simulated node behaves like a real one. */
    int virt = pfi_backend_sim_virtual(b);
    while (!*stop) {
        if (virt) {
            double now = pfi_clock_mono();
            pthread_mutex_lock(&n->hw_mu);
            pfi_hw_sleep(b, now - last);
            pthread_mutex_unlock(&n->hw_mu);
            last = now;
        }
        pfi_srv_sample(n);
        pfi_srv_discover(n);
        pfi_srv_follow_tick(n);
        pfi_srv_tick(n);
        next += c->sample_interval_s;
        if (next < pfi_clock_mono())
            next = pfi_clock_mono();
        sleep_until(next, stop);
    }
}

/* Restores in the safe order first; then the journal puts back (the same) originals by UUID
 * and removes itself, or stays for the next start if a GPU refused.  Closes j. */
static int restore_at_exit(srv_node *n, pfi_journal *j, const char *jpath, pfi_err *e)
{
    int r1 = pfi_srv_restore_originals(n, e);
    int restored = 0, r2;
    if (r1 == PFI_OK && journal_matches(j, n->b)) {
        /* Every GPU already holds its journaled limit: setting them again could only fail on
         * a GPU that is already right (a lost one refuses every set). */
        restored = j->n;
        r2 = unlink(j->path) == 0 ? PFI_OK : pfi_err_set(e, PFI_EIO, "cannot remove %s: %s",
                                                           j->path, strerror(errno));
    } else {
        r2 = pfi_journal_restore(j, n->b, &restored, r1 == PFI_OK ? e : NULL);
    }
    if (r1 == PFI_OK && r2 == PFI_OK)
        pfi_srv_event_add(n, "restored", "original power limits restored on %d GPU(s)", restored);
    else
        pfi_srv_event_add(n, "restore_failed", "%s (journal %s kept for the next start)", e->msg,
                      jpath);
    pfi_journal_close(j);
    return r1 != PFI_OK ? r1 : r2;
}

int pfi_serve_run(const pfi_serve_config *c, pfi_backend *b, const struct pfi_model *model,
                  volatile sig_atomic_t *stop, pfi_err *err)
{
    int rc = pfi_serve_config_check(c, err);
    if (rc != PFI_OK)
        return rc;
    srv_node *n = calloc(1, sizeof *n);
    if (!n)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    /* Before any GPU is touched: a library that cannot be read is bad input, nothing changes.
     * (pfi_srv_node_init clears the node: the library joins it after.) */
    srv_library lib;
    if ((rc = pfi_srv_library_load(c->probe_library, &lib, err)) != PFI_OK) {
        free(n);
        return rc;
    }
    char jpath[PFI_JOURNAL_PATH_MAX], note[256] = "";
    if (c->journal[0])
        snprintf(jpath, sizeof jpath, "%s", c->journal);
    else
        pfi_journal_default_path(jpath, sizeof jpath);
    pfi_journal j;
    memset(&j, 0, sizeof j);
    j.lock_fd = -1;
    int journaled = 0;
    srv_http *http = NULL;

    if (!c->read_only) {
        rc = recover_journal(jpath, b, note, sizeof note, err);
        if (rc != PFI_OK) {
            pfi_srv_library_free(&lib);
            free(n);
            return rc;
        }
    }
    rc = pfi_srv_node_init(n, c, b, err);
    n->lib = lib;
    if (rc != PFI_OK)
        goto out;
    n->model = model;
    rc = pfi_audit_open(c->db, &n->audit, err);
    if (rc != PFI_OK) {
        pfi_err_prefix(err, "state database %s: ", c->db);
        goto out;
    }
    rc = pfi_srv_grid_open(n, err);
    if (rc != PFI_OK) {
        pfi_err_prefix(err, "grid events in %s: ", c->db);
        goto out;
    }
    if (note[0])
        pfi_srv_event_add(n, "journal_restore", "%s", note);
    if (c->token_file[0]) {
        rc = pfi_serve_token_load(c->token_file, n->token, sizeof n->token, err);
        if (rc != PFI_OK)
            goto out;
    } else {
        pfi_srv_event_add(n, "auth", "no token_file configured: the API is read-only");
    }
    if (!c->read_only) {
        int all[PFI_MAX_GPUS];
        for (int i = 0; i < n->n_gpus; i++)
            all[i] = i;
        rc = pfi_journal_begin(&j, jpath, b, all, n->n_gpus, err);
        if (rc != PFI_OK) {
            pfi_err_prefix(err, "journal %s: ", jpath);
            goto out;
        }
        journaled = 1;
    }
    pfi_srv_event_add(n, "start", "%d GPU(s) on the %s backend, nominal %.0f W%s%s%s", n->n_gpus,
                  pfi_backend_name(b), n->nominal_w, c->read_only ? ", read-only" : "",
                  model ? ", predictor " : ", no predictor (jobs without a curve are planned "
                                           "at PFI 1)",
                      model ? c->model : "");
    if (n->lib.n)
        pfi_srv_event_add(n, "probe_library", "probes read through %d measured curves of %s",
                      n->lib.n, n->lib.where);
    pfi_err le = {0};
    /* The daemon still starts: the jobs can be registered again (Slurm's prolog does). */
    if (pfi_audit_load_jobs(n->audit, reload_one, n, &le) != PFI_OK)
        pfi_srv_event_add(n, "db_error", "saved jobs not registered again: %s", le.msg);

    rc = initial_budget(n, c, err);
    if (rc != PFI_OK)
        goto out;

    char where[PFI_SERVE_PATH_MAX + 32];
    rc = pfi_srv_http_start(n, &http, where, sizeof where, err);
    if (rc != PFI_OK)
        goto out;
    if (c->port_file[0]) {
        rc = write_port_file(c->port_file, where, err);
        if (rc != PFI_OK)
            goto out;
    }
    pfi_srv_event_add(n, "listen", "API on %s", where);

    run_loop(n, c, b, stop);
    pfi_srv_event_add(n, "stop", "shutting down: restoring original power limits");
    rc = PFI_OK;

out:
    pfi_srv_http_stop(http);
    if (journaled) {
        pfi_err e = {0};
        if (restore_at_exit(n, &j, jpath, &e) != PFI_OK && rc == PFI_OK)
            rc = pfi_err_set(err, e.code ? e.code : PFI_EIO, "restoring limits: %s", e.msg);
    }
    pfi_srv_grid_close(n);
    pfi_audit_close(n->audit);
    pfi_srv_follow_free(n);
    pfi_srv_node_destroy(n);
    pfi_srv_library_free(&n->lib);
    free(n);
    return rc;
}
