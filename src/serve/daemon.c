/* SPDX-License-Identifier: Apache-2.0 */
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
#include "util/budget.h"
#include "util/fs.h"

static int write_port_file(const char *path, const char *where, pfi_err *err)
{
    char line[PFI_SERVE_PATH_MAX + 2];
    snprintf(line, sizeof line, "%s\n", where);
    return pfi_write_new(path, line, err);
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

/* --budget, else with resume the budget saved before the stop ("none": no budget).  A saved
 * budget that resume = no drops is said so: a restart that brings a node back uncapped without
 * a word (a package upgrade's, before it was a held one) looked like a node without a budget. */
static int initial_budget(srv_node *n, const pfi_serve_config *c, pfi_err *err)
{
    char budget_s[64] = "";
    if (c->budget[0]) {
        snprintf(budget_s, sizeof budget_s, "%s", c->budget);
    } else if (pfi_audit_get_state(n->audit, "budget_w", budget_s, sizeof budget_s) != PFI_OK ||
               !strcmp(budget_s, "none")) {
        budget_s[0] = '\0';
    } else if (!c->resume) {
        /* Read-only, the limits are whatever they are: nothing was restored at the stop */
        pfi_srv_event_add(n, "budget", "the budget of %.0f W saved before the stop is not in "
                                       "force (resume = no)%s; resume = yes takes it back at a "
                                       "start, or set it with pfi ctl budget set",
                          strtod(budget_s, NULL),
                          c->read_only ? "" : ": the GPUs run at their original limits");
        budget_s[0] = '\0';
    }
    if (!budget_s[0])
        return PFI_OK;
    double w;
    json_t *res = NULL;
    pfi_err e = {0};
    if (pfi_srv_budget_parse(n, budget_s, &w, &e) != PFI_OK ||
        pfi_srv_budget_set(n, w, 0, 1, &res, &e) != PFI_OK)
        return pfi_err_set(err, e.code ? e.code : PFI_EINVAL, "initial budget %s: %s", budget_s,
                           e.msg);
    json_decref(res);
    pfi_budget bt;
    char d[160];
    if (pfi_budget_parse(budget_s, &bt, NULL) == PFI_OK && bt.is_share)
        pfi_srv_event_add(n, "budget", "initial budget %s: %.0f W, %s", budget_s, w,
                          pfi_budget_describe(&bt, n->nominal_w, PFI_SRV_BUDGET_REF, d,
                                              sizeof d));
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

/* A start that holds limits (hold.c): the journal of a dead predecessor keeps its originals
 * (it is taken over, not restored: restoring would raise power behind a controller's back), or
 * a new one records the limits found; then every GPU comes down to its held cap where it sits
 * above it, before anything else. */
/* No journal at a held start: the limits found are the originals only where a GPU is not
 * sitting capped by the hold (above its held cap: put back by hand, e.g. pfi restore after a
 * stop that held; or at its default).  One below its default at or under its held cap is the
 * previous daemon's cap, and journaling it as the original would leave it capped for good
 * (a restart after kill -9 with another journal path did): refused, nothing touched. */
static int check_unjournaled(const char *jpath, const char *db, pfi_backend *b, const srv_hold *h,
                             int count, pfi_err *err)
{
    for (int i = 0; i < count && i < PFI_MAX_GPUS; i++) {
        pfi_device d;
        int rc = pfi_hw_info(b, i, &d, err);
        if (rc != PFI_OK)
            return rc;
        double cap = pfi_srv_hold_cap(h, &d, i);
        if (!isnan(cap) && d.limit_w < d.default_limit_w - 0.5 && d.limit_w <= cap + 0.5)
            return pfi_err_set(err, PFI_ESTATE,
                               "limits are held from before the restart (state database %s) "
                               "but no journal at %s holds the GPUs' original limits (GPU %d "
                               "is at %.0f W, its held cap, below its default %.0f W): start "
                               "with the journal the previous daemon used (--journal FILE, or "
                               "journal = FILE in the configuration), "
                               "or, if it is lost, set the limits back to their originals and "
                               "start with a new db",
                               db, jpath, i, d.limit_w, d.default_limit_w);
    }
    return PFI_OK;
}

/* Whether the journal has the original limit of this GPU (by UUID, else by index). */
static int journal_names(const pfi_journal *j, const pfi_device *d, int i)
{
    for (int k = 0; k < j->n; k++)
        if (j->e[k].uuid[0] ? !strcmp(j->e[k].uuid, d->uuid) : j->e[k].gpu == i)
            return 1;
    return 0;
}

/* Under a controller's caps, a GPU the hold does not name (it was not on the node when they
 * were held, or a hold of older code forgot it) would stay where it is, at its default limit
 * after a reboot, above what the controller counts it at: it goes to its minimum until the
 * controller's next caps.  Journaled first (its limit now is its original), so that a restore
 * puts it back; one that cannot be is left where it is (counted, the first one's reason in
 * why).  Marks them in to_min. */
static void unheld_to_min(pfi_backend *b, const srv_hold *h, pfi_journal *j,
                          unsigned char *to_min, int *unjournaled, char *why, size_t wsize)
{
    int count = 0;
    pfi_err e = {0};
    *unjournaled = 0;
    if (h->mode != SRV_MODE_EXTERNAL || pfi_hw_count(b, &count, &e) != PFI_OK)
        return; /* a count that fails now fails the clamp, which says so */
    for (int i = 0; i < count && i < PFI_MAX_GPUS; i++) {
        pfi_device d;
        if (pfi_hw_info(b, i, &d, &e) != PFI_OK || pfi_srv_hold_names(h, &d, i))
            continue;
        pfi_err ae = {0};
        if (!journal_names(j, &d, i) &&
            (pfi_journal_add(j, b, i, &ae) != PFI_OK || !journal_names(j, &d, i))) {
            if (!(*unjournaled)++)
                snprintf(why, wsize, "GPU %d: %s", i,
                         ae.code ? ae.msg : "the journal has another GPU at its index");
            continue;
        }
        to_min[i] = 1;
    }
}

static int start_held(const char *jpath, const char *db, pfi_backend *b, const srv_hold *h,
                      pfi_journal *j, char *note, size_t nsize, pfi_err *err)
{
    int rc = pfi_journal_adopt(j, jpath, err);
    int adopted = rc == PFI_OK;
    if (rc == PFI_ENOENT) {
        pfi_err_clear(err);
        int count = 0, all[PFI_MAX_GPUS];
        rc = pfi_hw_count(b, &count, err);
        if (rc == PFI_OK && (rc = check_unjournaled(jpath, db, b, h, count, err)) != PFI_OK)
            return rc;
        for (int i = 0; rc == PFI_OK && i < count && i < PFI_MAX_GPUS; i++)
            all[i] = i;
        if (rc == PFI_OK)
            rc = pfi_journal_begin(j, jpath, b, all, count < PFI_MAX_GPUS ? count : PFI_MAX_GPUS,
                                   err);
    }
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "journal %s: ", jpath);
    int lowered = 0, at_min = 0, failed = 0, unjournaled = 0;
    unsigned char to_min[PFI_MAX_GPUS] = {0};
    char why[120] = ""; /* the event holds 512 characters: the note fits */
    unheld_to_min(b, h, j, to_min, &unjournaled, why, sizeof why);
    rc = pfi_srv_hold_clamp(b, h, to_min, &lowered, &at_min, &failed);
    if (rc != PFI_OK)
        return pfi_err_set(err, rc, "the GPUs cannot be listed to hold their limits");
    char unheld[300] = "", left[180] = "";
    if (unjournaled)
        snprintf(left, sizeof left, ", %d not journaled left where they are (%s)", unjournaled,
                 why);
    if (at_min || unjournaled)
        snprintf(unheld, sizeof unheld,
                 "; %d GPU(s) the hold does not name put at their minimum limit until the "
                 "controller's caps%s",
                 at_min, left);
    snprintf(note, nsize,
             "limits held from before the restart (%s mode): %d GPU(s) lowered to their held "
             "caps, %d could not be%s%s",
             pfi_srv_mode_name(h->mode), lowered, failed, unheld,
             adopted ? "; the originals stay journaled" : "");
    return PFI_OK;
}

/* A new journal records the limits found as the originals.  One below its GPU's default is
 * what an operator set, or a cap that a daemon which died left behind when this start can
 * neither see its hold (another state database) nor take over its journal (another path):
 * pfi cannot tell which, so it says so at start, with the way back. */
static void warn_below_default(srv_node *n, const char *jpath)
{
    char list[512] = "";
    size_t len = 0;
    int k = 0;
    for (int i = 0; i < n->n_gpus; i++) {
        const pfi_device *d = &n->gpu[i].dev;
        if (!(d->limit_w < d->default_limit_w - 0.5))
            continue;
        if (len < sizeof list) {
            int w = snprintf(list + len, sizeof list - len, "%sGPU %d: %.0f of %.0f W",
                             k ? ", " : "", i, d->limit_w, d->default_limit_w);
            len += w > 0 ? (size_t)w : 0;
        }
        k++;
    }
    if (k)
        pfi_srv_event_add(n, "original_below_default",
                          "%d GPU(s) below their default limit, journaled in %s as the limits "
                          "to restore (%s): if a pfi daemon that did not restore left them there, "
                          "stop this one, run pfi restore --journal with that daemon's journal "
                          "(or set them back by hand) and start again",
                          k, jpath, list);
}

/* The originals are the journal's (taken over at a held start), matched by UUID. */
static void originals_from_journal(srv_node *n, const pfi_journal *j)
{
    for (int i = 0; i < n->n_gpus; i++)
        for (int k = 0; k < j->n; k++)
            if (j->e[k].uuid[0] ? !strcmp(j->e[k].uuid, n->gpu[i].dev.uuid) : j->e[k].gpu == i)
                n->gpu[i].original_w = j->e[k].limit_w;
}

/* Read-only, a journal left by a writer (a daemon killed with its caps, a sweep) is read, never
 * restored nor locked: its limits are the originals the GPUs' views report, and the operator
 * hears that they are not in force.  A read-only daemon said the GPUs ran at their original
 * limits and reported the dead writer's caps as the originals. */
static void read_only_journal(srv_node *n, const char *jpath)
{
    pfi_journal j;
    pfi_err e = {0};
    int rc = pfi_journal_peek(&j, jpath, &e);
    if (rc == PFI_ENOENT)
        return;
    if (rc != PFI_OK) {
        pfi_srv_event_add(n, "journal_unrestored", "journal %s cannot be read: %s", jpath, e.msg);
        return;
    }
    originals_from_journal(n, &j);
    if (j.writer_runs)
        return; /* its writer runs: the limits are its to keep */
    pfi_srv_event_add(n, "journal_unrestored",
                      "journal %s (pid %ld) holds the original limits of %d GPU(s), never "
                      "restored: the GPUs run at that run's caps; read-only, this daemon changes "
                      "nothing (pfi restore --journal %s puts the originals back)",
                      jpath, j.pid, j.n, jpath);
}

/* A held restart, asked for the next stop by the file JOURNAL.hold-next-stop (the package's
 * postinst writes it before its try-restart): an upgrade restarts the daemon, and with
 * on_stop = auto a standalone node's stop restored the originals and the new daemon came back
 * without its budget (resume = no).  The file goes at that stop, and at every start too, so
 * that one left while no daemon ran cannot turn a later, ordinary stop into a held one.
 * Returns whether it was there. */
static int take_hold_marker(const char *jpath, srv_node *n)
{
    char path[PFI_JOURNAL_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s.hold-next-stop", jpath);
    if (access(path, F_OK) != 0)
        return 0;
    if (unlink(path) != 0)
        pfi_srv_event_add(n, "hold", "%s cannot be removed (%s): the next stop holds the limits "
                                     "too",
                          path, strerror(errno));
    return 1;
}

/* At a stop: hold the limits (1) or restore the originals (0).  Nothing in force: restore
 * (the limits are the originals already).  A held restart asked (take_hold_marker) holds.  auto
 * holds when a cluster controller is in command (its caps, its watchdog armed, or its safe
 * budget) and while a grid event's cap applies (its ramp, window or restore): a stop for an
 * upgrade restored the originals, and the node drew over the utility's limit until it started
 * again. */
static int hold_at_stop(srv_node *n, int held_start_pending, int asked)
{
    if (held_start_pending)
        return 1; /* a held start that did not get as far as taking its hold back */
    char ev[PFI_EVENT_ID_MAX] = "";
    pthread_mutex_lock(&n->mu);
    int mode = n->mode;
    int active = mode != SRV_MODE_LOCAL || !isnan(n->budget_w);
    int controller = mode != SRV_MODE_LOCAL || n->hb_ttl_s > 0;
    int event = pfi_srv_grid_committed_locked(n, pfi_clock_wall(), ev, sizeof ev);
    pthread_mutex_unlock(&n->mu);
    if (!active || n->cfg->read_only)
        return 0;
    if (asked || n->cfg->on_stop == PFI_SERVE_ON_STOP_HOLD)
        return 1;
    if (n->cfg->on_stop == PFI_SERVE_ON_STOP_RESTORE) {
        if (event)
            pfi_srv_event_add(n, "stop", "grid event %s is in force: on_stop restore puts the "
                                         "original limits back, over its limit until the node "
                                         "starts again", ev);
        return 0;
    }
    if (event && !controller)
        pfi_srv_event_add(n, "stop", "grid event %s is in force: the limits are held (on_stop "
                                     "auto), so the node keeps to it while stopped", ev);
    return controller || event;
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
    char jpath[PFI_JOURNAL_PATH_MAX], note[512] = "";
    if (c->journal[0])
        snprintf(jpath, sizeof jpath, "%s", c->journal);
    else
        pfi_journal_default_path(jpath, sizeof jpath, pfi_hw_simulated(b));
    pfi_journal j;
    memset(&j, 0, sizeof j);
    j.lock_fd = -1;
    int journaled = 0, held_pending = 0;
    srv_http *http = NULL;
    pfi_audit *audit = NULL;
    srv_hold *hold = calloc(1, sizeof *hold);
    char where[PFI_SERVE_PATH_MAX + 32];

    /* The listeners before anything else: a start that cannot serve changes nothing.  Then
     * the state database: it says whether limits are held from before a restart. */
    rc = hold ? pfi_srv_http_bind(c, &http, where, sizeof where, err)
              : pfi_err_set(err, PFI_ENOMEM, "out of memory");
    if (rc == PFI_OK && c->port_file[0]) /* written once it serves */
        rc = pfi_parent_dir_check(c->port_file, "port file", err);
    if (rc == PFI_OK && (rc = pfi_audit_open(c->db, &audit, err)) != PFI_OK)
        pfi_err_prefix(err, "state database %s: ", c->db);
    else if (rc == PFI_OK && !c->read_only && (rc = pfi_srv_hold_load(audit, hold, err)) != PFI_OK)
        pfi_err_prefix(err, "state database %s: ", c->db);
    /* Empty rows of SLA breaches seen, one per job an older pfi ever registered, kept for good:
     * a job with none now keeps no row. */
    if (rc == PFI_OK && !c->read_only)
        pfi_audit_delete_states(audit, "sla_seen:", "[]");
    if (rc == PFI_OK && !c->read_only) {
        if (hold->active) {
            rc = start_held(jpath, c->db, b, hold, &j, note, sizeof note, err);
            journaled = held_pending = rc == PFI_OK;
        } else {
            rc = recover_journal(jpath, b, note, sizeof note, err);
        }
    }
    if (rc != PFI_OK) {
        if (journaled) /* limits held: nothing is raised, the journal stays */
            pfi_journal_close(&j);
        pfi_srv_http_stop(http);
        pfi_audit_close(audit);
        pfi_srv_library_free(&lib);
        free(hold);
        free(n);
        return rc;
    }
    rc = pfi_srv_node_init(n, c, b, err);
    n->lib = lib;
    n->audit = audit;
    if (rc != PFI_OK)
        goto out;
    if (hold->active && !c->read_only)
        pfi_srv_hold_absent(hold, n->gpu, n->n_gpus, &n->held_absent);
    n->model = model;
    if (journaled)
        originals_from_journal(n, &j);
    else if (c->read_only)
        read_only_journal(n, jpath);
    rc = pfi_srv_grid_open(n, err);
    if (rc != PFI_OK) {
        pfi_err_prefix(err, "grid events in %s: ", c->db);
        goto out;
    }
    if (note[0])
        pfi_srv_event_add(n, "journal_restore", "%s", note);
    if (n->held_absent.n)
        pfi_srv_event_add(n, "hold", "%d GPU(s) held before the restart are not on the node "
                                     "now: their held caps are kept for when they come back",
                          n->held_absent.n);
    if (c->token_file[0]) {
        rc = pfi_token_load(c->token_file, n->token, sizeof n->token, err);
        if (rc != PFI_OK)
            goto out;
    } else {
        pfi_srv_event_add(n, "auth", "no token_file configured: the API is read-only");
    }
    if (!c->read_only && !journaled) {
        int all[PFI_MAX_GPUS];
        for (int i = 0; i < n->n_gpus; i++)
            all[i] = i;
        rc = pfi_journal_begin(&j, jpath, b, all, n->n_gpus, err);
        if (rc != PFI_OK) {
            pfi_err_prefix(err, "journal %s: ", jpath);
            goto out;
        }
        journaled = 1;
        warn_below_default(n, jpath);
    }
    /* Asked before this start, while no daemon ran: not for this daemon's stop. */
    if (!c->read_only && take_hold_marker(jpath, n))
        pfi_srv_event_add(n, "hold", "%s.hold-next-stop found at start, removed: it asks the "
                                     "stop of a daemon that runs",
                          jpath);
    pfi_srv_event_add(n, "start", "%d GPU(s) on the %s backend, nominal %.0f W%s%s%s", n->n_gpus,
                  pfi_backend_name(b), n->nominal_w, c->read_only ? ", read-only" : "",
                  model ? ", predictor " : ", no predictor (jobs without a curve are planned "
                                           "at PFI 1)",
                      model ? c->model : "");
    if (n->lib.n)
        pfi_srv_event_add(n, "probe_library", "probes read through %d measured curves of %s",
                      n->lib.n, n->lib.where);
    /* Before the saved jobs are registered again: their decisions plan under what is held. */
    if (hold->active && !c->read_only) {
        /* Held limits win over `budget` and `resume`: the node comes back as it was. */
        pfi_err he = {0};
        if (pfi_srv_hold_resume(n, hold, &he) != PFI_OK) {
            /* Nothing may raise them: held as they are, as caps, until told otherwise. */
            pthread_mutex_lock(&n->mu);
            n->mode = SRV_MODE_EXTERNAL;
            for (int i = 0; i < n->n_gpus; i++)
                n->ext_caps[i] = n->gpu[i].dev.limit_w;
            pthread_mutex_unlock(&n->mu);
            pfi_srv_event_add(n, "hold", "the limits held could not be decided again (%s): they "
                                         "stay as lowered at start",
                              he.msg);
        } else
            pfi_srv_event_add(n, "hold", "%s mode taken back from before the restart (epoch %lld)",
                              pfi_srv_mode_name(hold->mode), hold->epoch);
        held_pending = 0;
    }
    pfi_err le = {0};
    /* The daemon still starts: the jobs can be registered again (Slurm's prolog does). */
    if (pfi_audit_load_jobs(n->audit, reload_one, n, &le) != PFI_OK)
        pfi_srv_event_add(n, "db_error", "saved jobs not registered again: %s", le.msg);

    if (!(hold->active && !c->read_only)) {
        rc = initial_budget(n, c, err);
        if (rc != PFI_OK)
            goto out;
    }

    rc = pfi_srv_ven_start(n, err);
    if (rc != PFI_OK)
        goto out;
    if (c->openadr.vtn_url[0])
        pfi_srv_event_add(n, "openadr", "OpenADR 3.0 client: program %s at %s, polled every %g s",
                          c->openadr.program, c->openadr.vtn_url, c->openadr.poll_s);

    rc = pfi_srv_http_serve(http, n, err);
    if (rc != PFI_OK)
        goto out;
    if (c->port_file[0]) {
        rc = write_port_file(c->port_file, where, err);
        if (rc != PFI_OK)
            goto out;
    }
    pfi_srv_event_add(n, "listen", "API on %s", where);

    run_loop(n, c, b, stop);
    pfi_srv_event_add(n, "stop", "shutting down");
    rc = PFI_OK;

out:
    pfi_srv_http_stop(http);
    pfi_srv_ven_stop(n); /* after the API (GET /v1/grid/openadr reads it), before the restore */
    int asked = !c->read_only && take_hold_marker(jpath, n);
    if (journaled && hold_at_stop(n, held_pending, asked)) {
        /* The limits stay as they are, and the journal with the originals for `pfi restore`
         * (or the next start, which comes back at these limits). */
        char why_s[PFI_JOURNAL_PATH_MAX + 96];
        if (asked)
            snprintf(why_s, sizeof why_s, "a held restart asked by %s.hold-next-stop: the next "
                                          "start takes them back", jpath);
        else
            snprintf(why_s, sizeof why_s, "%s", c->on_stop == PFI_SERVE_ON_STOP_HOLD
                                                   ? "on_stop = hold"
                                                   : "on_stop = auto: a controller or a grid event");
        pfi_srv_event_add(n, "held",
                          "power limits held at stop (%s); `pfi restore --journal %s` "
                          "puts the originals back",
                          why_s, jpath);
        pfi_journal_close(&j);
    } else if (journaled) {
        pfi_err e = {0};
        if (restore_at_exit(n, &j, jpath, &e) != PFI_OK) {
            if (rc == PFI_OK)
                rc = pfi_err_set(err, e.code ? e.code : PFI_EIO, "restoring limits: %s", e.msg);
        } else {
            pfi_srv_hold_clear(n);
        }
    }
    pfi_srv_grid_close(n);
    pfi_audit_close(n->audit);
    pfi_srv_follow_free(n);
    pfi_srv_node_destroy(n);
    pfi_srv_library_free(&n->lib);
    free(hold);
    free(n);
    return rc;
}
