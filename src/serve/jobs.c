/* SPDX-License-Identifier: Apache-2.0 */
/* jobs.c: registering, removing and hearing from jobs.  A registration is checked against the
 * node (GPUs, ranges, curve) and the other jobs (ids, GPUs) before a decision is made for it;
 * anything wrong is refused with nothing changed. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_int.h"
#include "util/units.h"

/* ---- jobs ---- */

int pfi_srv_only_keys(json_t *o, const char *const *keys, pfi_err *e)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        int known = 0;
        for (int i = 0; keys[i]; i++)
            known |= !strcmp(k, keys[i]);
        if (known)
            continue;
        /* Name them all: a client that misspelt one learns the right one here. */
        char list[256] = "";
        size_t at = 0;
        for (int i = 0; keys[i] && at < sizeof list; i++)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", keys[i]);
        return pfi_err_set(e, PFI_EINVAL, "unknown field '%s' (known: %s)", k, list);
    }
    return PFI_OK;
}

static int valid_id(const char *s)
{
    size_t l = strlen(s);
    if (l == 0 || l >= SRV_ID_MAX)
        return 0;
    for (size_t i = 0; i < l; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._:-", s[i]))
            return 0;
    return 1;
}

static const char *const job_keys[] = {"id",   "gpus",   "sla",  "weight", "curve",
                                       "pfi30", "tokens_per_s", "probe", "source", "node",
                                       "user", "name",   "log",    "seq_len",
                                       "tokens_per_step", NULL};

/* "seq_len" and "tokens_per_step": how the job's log becomes tokens/s where it gives samples/s
 * or steps/s (DeepSpeed, the Hugging Face Trainer, Lightning). */
static int parse_log_units(json_t *spec, srv_job *j, pfi_err *err)
{
    json_t *v = json_object_get(spec, "seq_len");
    if (v) {
        double x = json_is_number(v) ? json_number_value(v) : NAN;
        if (!(x >= 1 && x <= 16777216 && x == floor(x)))
            return pfi_err_set(err, PFI_EINVAL,
                               "seq_len: expected the job's tokens per sample, a whole number "
                               "in [1, 16777216]");
        j->seq_len = x;
    }
    v = json_object_get(spec, "tokens_per_step");
    if (v) {
        double x = json_is_number(v) ? json_number_value(v) : NAN;
        if (!(x >= 1 && x <= 1e12))
            return pfi_err_set(err, PFI_EINVAL,
                               "tokens_per_step: expected the job's tokens per iteration (global "
                               "batch x sequence length), in [1, 1e12]");
        j->tokens_per_step = x;
    }
    return PFI_OK;
}

/* "gpus": [0, 1] or "0-3", each a GPU of this node, none twice. */
static int parse_gpus(const srv_node *n, json_t *g, srv_job *j, pfi_err *err)
{
    int idx[PFI_MAX_GPUS], ni = 0;
    if (json_is_string(g)) {
        if (pfi_parse_index_list(json_string_value(g), n->n_gpus, idx, &ni, err) != PFI_OK) {
            /* A GPU the node lacks is a bad request (400), as in the array form, not a 404. */
            pfi_err_prefix(err, "gpus: ");
            return err->code = PFI_EINVAL;
        }
    } else if (json_is_array(g) && json_array_size(g) <= PFI_MAX_GPUS) {
        size_t k;
        json_t *v;
        json_array_foreach(g, k, v)
        {
            if (!json_is_integer(v))
                return pfi_err_set(err, PFI_EINVAL, "gpus[%zu]: expected a GPU index", k);
            json_int_t x = json_integer_value(v);
            if (x < 0 || x >= n->n_gpus) /* before it is cut to an int */
                return pfi_err_set(err, PFI_EINVAL, "gpus: no GPU %lld on this node (it has %d)",
                                   (long long)x, n->n_gpus);
            idx[ni++] = (int)x;
        }
    } else {
        return pfi_err_set(err, PFI_EINVAL, "gpus: expected an array of GPU indices or \"0-3\"");
    }
    if (ni == 0)
        return pfi_err_set(err, PFI_EINVAL, "gpus: a job needs at least one GPU");
    for (int a = 0; a < ni; a++) {
        if (idx[a] < 0 || idx[a] >= n->n_gpus)
            return pfi_err_set(err, PFI_EINVAL, "gpus: no GPU %d on this node (it has %d)",
                               idx[a], n->n_gpus);
        for (int b = 0; b < a; b++)
            if (idx[a] == idx[b])
                return pfi_err_set(err, PFI_EINVAL, "gpus: GPU %d listed twice", idx[a]);
        j->gpus[j->n_gpus++] = idx[a];
    }
    return PFI_OK;
}

/* Fills *j from a registration; checks everything against the node but not against other
 * jobs. */
static int parse_job(srv_node *n, json_t *spec, srv_job *j, pfi_err *err)
{
    memset(j, 0, sizeof *j);
    if (!json_is_object(spec))
        return pfi_err_set(err, PFI_EINVAL, "a job is a JSON object {\"id\", \"gpus\", ...}");
    if (pfi_srv_only_keys(spec, job_keys, err) != PFI_OK)
        return err->code;
    json_t *v;
    const char *id = json_string_value(json_object_get(spec, "id"));
    if (!id || !valid_id(id))
        return pfi_err_set(err, PFI_EINVAL,
                           "id: expected 1-%d characters of letters, digits and ._:-",
                           SRV_ID_MAX - 1);
    snprintf(j->id, sizeof j->id, "%s", id);
    int rc = parse_gpus(n, json_object_get(spec, "gpus"), j, err);
    if (rc != PFI_OK)
        return rc;
    v = json_object_get(spec, "sla");
    j->sla = n->cfg->default_sla;
    if (v && json_is_null(v))
        j->sla = NAN;
    else if (v) {
        double s = json_is_number(v) ? json_number_value(v) : NAN;
        if (!(s >= 0 && s < 1))
            return pfi_err_set(err, PFI_EINVAL,
                               "sla: expected a max slowdown in [0, 1) (0.1 = at most 10%% "
                               "slower), or null");
        j->sla = s;
    }
    v = json_object_get(spec, "weight");
    j->weight = 1.0;
    if (v) {
        double w = json_is_number(v) ? json_number_value(v) : NAN;
        if (!(w > 0 && w <= 1e6))
            return pfi_err_set(err, PFI_EINVAL, "weight: expected a number in (0, 1e6]");
        j->weight = w;
    }
    j->t0_tps = NAN;
    v = json_object_get(spec, "tokens_per_s");
    if (v) {
        double t = json_is_number(v) ? json_number_value(v) : NAN;
        if (!(t > 0 && t <= SRV_MAX_TPS))
            return pfi_err_set(err, PFI_EINVAL,
                               "tokens_per_s: expected the job's baseline tokens/s (> 0, at "
                               "most %g)",
                               SRV_MAX_TPS);
        j->t0_tps = t;
        j->t0_given = 1;
    }
    const char *src = json_string_value(json_object_get(spec, "source"));
    j->discovered = src && !strcmp(src, "discovered");
    for (int k = 0; k < 4; k++) {
        const char *meta[] = {"source", "node", "user", "name"};
        v = json_object_get(spec, meta[k]);
        if (v && (!json_is_string(v) || strlen(json_string_value(v)) > 128))
            return pfi_err_set(err, PFI_EINVAL, "%s: expected a string of at most 128 bytes",
                               meta[k]);
    }
    v = json_object_get(spec, "name");
    snprintf(j->name, sizeof j->name, "%s", v ? json_string_value(v) : "");
    v = json_object_get(spec, "log");
    if (v && (!json_is_string(v) || json_string_value(v)[0] != '/' ||
              strlen(json_string_value(v)) >= sizeof j->log))
        return pfi_err_set(err, PFI_EINVAL, "log: expected an absolute path to the job's log");
    snprintf(j->log, sizeof j->log, "%s", v ? json_string_value(v) : "");
    if ((rc = parse_log_units(spec, j, err)) != PFI_OK)
        return rc;
    rc = pfi_srv_probe_parse(json_object_get(spec, "probe"), &j->probe, err);
    if (rc != PFI_OK)
        return rc;
    double abs_t0;
    rc = pfi_srv_curve_from_json(n->snap, j, json_object_get(spec, "curve"),
                                 json_object_get(spec, "pfi30"), &j->curve, &j->curve_src,
                                 &abs_t0, err);
    if (rc != PFI_OK)
        return rc;
    if (isnan(j->t0_tps) && isfinite(abs_t0))
        j->t0_tps = abs_t0;
    j->pfi30 = NAN;
    if (j->curve_src != SRV_CURVE_NONE)
        j->pfi30 = pfi_fit_s(&j->curve.fit, 0.3) / 0.3;
    j->cap_w = j->predicted_tps = j->predicted_rel = NAN;
    j->observed_tps = NAN;
    j->registered_wall = pfi_clock_wall();
    return PFI_OK;
}

void pfi_srv_sla_seen_save(srv_node *n, const char *id, const pfi_alloc_seen *l)
{
    char key[SRV_ID_MAX + 16];
    snprintf(key, sizeof key, "sla_seen:%s", id);
    if (l->n == 0) { /* nothing seen (a job removed, or new): no row, not an empty one for good */
        if (pfi_audit_delete_state(n->audit, key) != PFI_OK)
            pfi_srv_event_add(n, "db_error", "job %s: its SLA breaches seen could not be removed "
                              "from the database", id);
        return;
    }
    json_t *arr = json_array();
    for (int k = 0; arr && k < l->n; k++)
        json_array_append_new(arr, json_pack("{s:f, s:f}", "cap_w", l->cap_w[k], "slowdown",
                                             l->s[k]));
    char *text = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
    if (!text || pfi_audit_set_state(n->audit, key, text) != PFI_OK)
        pfi_srv_event_add(n, "db_error",
                          "job %s: its SLA breaches seen could not be saved: a restart learns "
                          "them again from its log",
                          id);
    free(text);
    json_decref(arr);
}

void pfi_srv_sla_seen_load(pfi_audit *a, const char *id, pfi_alloc_seen *l)
{
    char key[SRV_ID_MAX + 16], text[1024];
    memset(l, 0, sizeof *l);
    snprintf(key, sizeof key, "sla_seen:%s", id);
    if (pfi_audit_get_state(a, key, text, sizeof text) != PFI_OK)
        return;
    json_t *arr = json_loads(text, 0, NULL), *o;
    size_t i;
    json_array_foreach(arr, i, o)
    {
        json_t *c = json_object_get(o, "cap_w"), *s = json_object_get(o, "slowdown");
        if (json_is_number(c) && json_is_number(s))
            pfi_alloc_seen_add(l, json_number_value(c), json_number_value(s), PFI_SEEN_LATEST,
                               NULL);
    }
    json_decref(arr);
}

/* Whether candidate o is a job discovery registered that registration j is: the same id (or
 * "slurm-N" for "N"), or on all its GPUs.  One GPU of a running 4-GPU job is not the job: taken
 * over, its other three GPUs went to the idle minimum while it trained on them (refused as
 * busy, as before). */
static int takes_over(const srv_job *j, const srv_job *o)
{
    if (!o->discovered || j->discovered)
        return 0;
    if (!strcmp(o->id, j->id) || (!strncmp(o->id, "slurm-", 6) && !strcmp(o->id + 6, j->id)))
        return 1;
    for (int q = 0; q < o->n_gpus; q++) {
        int in = 0;
        for (int k = 0; k < j->n_gpus; k++)
            in |= o->gpus[q] == j->gpus[k];
        if (!in)
            return 0;
    }
    return 1;
}

/* A registration by the plugin or the API takes over the jobs discovery registered for it
 * (docs/serve.md: it takes precedence): they are dropped from the candidate in the same
 * decision.  It was refused as busy when discovery came first (a slow prolog), and no SLA could
 * be attached.  Their ids go into taken (n_taken of them). */
static void take_over_discovered(srv_node *n, const srv_job *j, char (*taken)[SRV_ID_MAX],
                                 int *n_taken)
{
    *n_taken = 0;
    for (int o = 0; o < n->n_cand;) {
        if (!takes_over(j, &n->cand[o])) {
            o++;
            continue;
        }
        snprintf(taken[(*n_taken)++], SRV_ID_MAX, "%s", n->cand[o].id);
        memmove(&n->cand[o], &n->cand[o + 1], sizeof n->cand[0] * (size_t)(n->n_cand - o - 1));
        n->n_cand--;
    }
}

static int add_job_locked(srv_node *n, json_t *spec, int persist, json_t **result, pfi_err *err)
{
    pfi_srv_snapshot(n);
    if (n->n_cand >= SRV_MAX_JOBS)
        return pfi_err_set(err, PFI_EBUSY, "this node already runs %d jobs", n->n_cand);
    srv_job *j = &n->cand[n->n_cand];
    int rc = parse_job(n, spec, j, err);
    if (rc != PFI_OK)
        return rc;
    if (!persist) /* registered again at a restart: planned through what its log showed */
        pfi_srv_sla_seen_load(n->audit, j->id, &j->sla_seen);
    char taken[SRV_MAX_JOBS][SRV_ID_MAX];
    int n_taken = 0;
    if (persist) {
        srv_job keep = *j; /* j is the slot past the candidates, which the removal moves over */
        take_over_discovered(n, &keep, taken, &n_taken);
        j = &n->cand[n->n_cand];
        *j = keep;
    }
    if (pfi_srv_find_job(n->cand, n->n_cand, j->id) >= 0)
        return pfi_err_set(err, PFI_EBUSY, "job %s is already registered", j->id);
    for (int k = 0; k < j->n_gpus; k++)
        for (int o = 0; o < n->n_cand; o++)
            for (int q = 0; q < n->cand[o].n_gpus; q++)
                if (n->cand[o].gpus[q] == j->gpus[k])
                    /* The way out, for a job whose end was never told (an epilog lost). */
                    return pfi_err_set(err, PFI_EBUSY,
                                       "GPU %d already belongs to job %s (if it has ended: pfi "
                                       "ctl job rm %s)",
                                       j->gpus[k], n->cand[o].id, n->cand[o].id);
    n->n_cand++;
    const double *ext;
    int mode = pfi_srv_current_mode(n, &ext);
    char reason[96];
    snprintf(reason, sizeof reason, "job %s registered", j->id);
    rc = pfi_srv_decide(n, pfi_srv_current_budget(n), mode, ext, reason, result, err);
    if (rc != PFI_OK)
        return rc;
    for (int t = 0; t < n_taken; t++) {
        pfi_srv_event_add(n, "job_matched", "job %s takes over job %s, which discovery had "
                          "registered", j->id, taken[t]);
        if (pfi_audit_delete_job(n->audit, taken[t]) != PFI_OK)
            pfi_srv_event_add(n, "db_error", "job %s could not be removed from the database: a "
                              "restart brings it back", taken[t]);
    }
    if (!persist && j->sla_seen.n > 0)
        pfi_srv_event_add(n, "sla_breaches_reloaded",
                          "job %s: %d SLA breach(es) seen in its log before the restart, its "
                          "curve read through them",
                          j->id, j->sla_seen.n);
    if (persist) {
        pfi_alloc_seen none = {0}; /* a new registration: another job's breaches are not its */
        pfi_srv_sla_seen_save(n, j->id, &none);
        char *text = json_dumps(spec, JSON_COMPACT);
        if (!text || pfi_audit_save_job(n->audit, j->id, text) != PFI_OK)
            pfi_srv_event_add(n, "db_error", "job %s could not be saved: it will not survive a "
                                         "restart",
                          j->id);
        free(text);
    }
    return PFI_OK;
}

int pfi_srv_job_add(srv_node *n, json_t *spec, json_t **result, pfi_err *err)
{
    pthread_mutex_lock(&n->decide_mu);
    int rc = add_job_locked(n, spec, 1, result, err);
    pthread_mutex_unlock(&n->decide_mu);
    return rc;
}

int pfi_srv_job_reload(srv_node *n, json_t *spec, pfi_err *err)
{
    pthread_mutex_lock(&n->decide_mu);
    int rc = add_job_locked(n, spec, 0, NULL, err);
    pthread_mutex_unlock(&n->decide_mu);
    return rc;
}

int pfi_srv_job_remove(srv_node *n, const char *id, json_t **result, pfi_err *err)
{
    pthread_mutex_lock(&n->decide_mu);
    pfi_srv_snapshot(n);
    int j = pfi_srv_find_job(n->cand, n->n_cand, id);
    int rc;
    if (j < 0) {
        rc = pfi_err_set(err, PFI_ENOENT, "no job '%s' on this node", id);
    } else {
        memmove(&n->cand[j], &n->cand[j + 1], sizeof n->cand[0] * (size_t)(n->n_cand - j - 1));
        n->n_cand--;
        const double *ext;
        int mode = pfi_srv_current_mode(n, &ext);
        char reason[96];
        snprintf(reason, sizeof reason, "job %s removed", id);
        rc = pfi_srv_decide(n, pfi_srv_current_budget(n), mode, ext, reason, result, err);
        if (rc == PFI_OK && pfi_audit_delete_job(n->audit, id) != PFI_OK)
            pfi_srv_event_add(n, "db_error",
                          "job %s could not be removed from the database: a restart brings it "
                          "back",
                          id);
        if (rc == PFI_OK) {
            pfi_alloc_seen none = {0};
            pfi_srv_sla_seen_save(n, id, &none);
        }
    }
    pthread_mutex_unlock(&n->decide_mu);
    return rc;
}

/* The saved registration of job `id`, found among those pfi_audit_load_jobs gives. */
typedef struct saved_spec {
    const char *id;
    json_t *spec;
} saved_spec;

static void find_saved(void *ctx, const char *id, const char *spec)
{
    saved_spec *f = ctx;
    if (!f->spec && !strcmp(id, f->id))
        f->spec = json_loads(spec, 0, NULL);
}

/* The job's saved registration with its new GPUs, so that a restart brings it back on them:
 * a discovered job grown as its workers started was reloaded on the GPU it was first seen on,
 * its other GPUs planned as idle for a round and what was measured of it forgotten. */
static void save_gpus(srv_node *n, const char *id, const int *gpus, int ng)
{
    saved_spec f = {id, NULL};
    if (!n->audit || pfi_audit_load_jobs(n->audit, find_saved, &f, NULL) != PFI_OK || !f.spec)
        return; /* not saved (a registration that does not persist): nothing to change */
    json_t *g = json_array();
    for (int k = 0; k < ng; k++)
        json_array_append_new(g, json_integer(gpus[k]));
    json_object_set_new(f.spec, "gpus", g);
    char *text = json_dumps(f.spec, JSON_COMPACT);
    if (!text || pfi_audit_save_job(n->audit, id, text) != PFI_OK)
        pfi_srv_event_add(n, "db_error", "job %s's GPUs could not be saved: a restart brings it "
                          "back on its old ones", id);
    free(text);
    json_decref(f.spec);
}

int pfi_srv_job_set_gpus(srv_node *n, const char *id, const int *gpus, int ng, pfi_err *err)
{
    if (ng < 1 || ng > PFI_MAX_GPUS)
        return pfi_err_set(err, PFI_EINVAL, "job %s: %d GPUs", id, ng);
    pthread_mutex_lock(&n->decide_mu);
    pfi_srv_snapshot(n);
    int j = pfi_srv_find_job(n->cand, n->n_cand, id), rc = PFI_OK;
    if (j < 0)
        rc = pfi_err_set(err, PFI_ENOENT, "no job '%s' on this node", id);
    for (int k = 0; rc == PFI_OK && k < ng; k++) {
        if (gpus[k] < 0 || gpus[k] >= n->n_gpus)
            rc = pfi_err_set(err, PFI_EINVAL, "job %s: no GPU %d on this node", id, gpus[k]);
        for (int o = 0; rc == PFI_OK && o < n->n_cand; o++)
            for (int q = 0; o != j && rc == PFI_OK && q < n->cand[o].n_gpus; q++)
                if (n->cand[o].gpus[q] == gpus[k])
                    rc = pfi_err_set(err, PFI_EBUSY, "GPU %d already belongs to job %s", gpus[k],
                                     n->cand[o].id);
    }
    if (rc == PFI_OK) {
        srv_job *c = &n->cand[j];
        memcpy(c->gpus, gpus, sizeof *gpus * (size_t)ng);
        c->n_gpus = ng;
        /* Read on the other GPUs: a per-GPU rate scaled by the old count, a baseline of
         * their draw.  The commit does not carry them over either (node.c). */
        if (c->curve_src != SRV_CURVE_GIVEN && c->curve_src != SRV_CURVE_PFI) {
            c->curve_src = SRV_CURVE_NONE;
            c->pfi30 = NAN;
            c->t0_tps = NAN;
            c->t0_n = 0;
        }
        c->gpus_gen++;
        memset(&c->base, 0, sizeof c->base);
        memset(&c->probe, 0, sizeof c->probe);
        c->observed_tps = NAN;
        const double *ext;
        int mode = pfi_srv_current_mode(n, &ext);
        char reason[96];
        snprintf(reason, sizeof reason, "job %s now on %d GPU(s)", id, ng);
        rc = pfi_srv_decide(n, pfi_srv_current_budget(n), mode, ext, reason, NULL, err);
        if (rc == PFI_OK)
            save_gpus(n, id, gpus, ng);
    }
    pthread_mutex_unlock(&n->decide_mu);
    return rc;
}

int pfi_srv_job_throughput(srv_node *n, const char *id, double tps, double baseline_tps,
                           pfi_err *err)
{
    if (!(tps >= 0 && tps <= SRV_MAX_TPS) || !(baseline_tps >= 0 && baseline_tps <= SRV_MAX_TPS))
        return pfi_err_set(err, PFI_EINVAL, "tokens_per_s: expected a number from 0 to %g",
                           SRV_MAX_TPS);
    pthread_mutex_lock(&n->mu);
    int j = pfi_srv_find_job(n->jobs, n->n_jobs, id);
    if (j >= 0) {
        srv_job *jb = &n->jobs[j];
        jb->observed_tps = tps;
        jb->observed_wall = pfi_clock_wall();
        pfi_srv_probe_tps(jb, tps, pfi_clock_mono());
        /* Reported while uncapped, it is the job's baseline. */
        int uncapped = 1;
        for (int k = 0; k < jb->n_gpus; k++) {
            const srv_gpu *g = &n->gpu[jb->gpus[k]];
            if (g->dev.limit_w < g->dev.default_limit_w - 1.0)
                uncapped = 0;
        }
        /* Averaged, not the last report alone: one noisy sample became the baseline a probe
         * and every slowdown were read against (a probe's PFI30 came out 0.24-0.44 for 0.39 at
         * 10% noise); a registered baseline is not replaced. */
        if (uncapped && baseline_tps > 0 && jb->curve_src != SRV_CURVE_GIVEN && !jb->t0_given) {
            if (jb->t0_n < SRV_T0_REPORTS)
                jb->t0_n++;
            jb->t0_tps = jb->t0_n > 1 && isfinite(jb->t0_tps)
                             ? jb->t0_tps + (baseline_tps - jb->t0_tps) / jb->t0_n
                             : baseline_tps;
        }
    }
    pthread_mutex_unlock(&n->mu);
    if (j < 0)
        return pfi_err_set(err, PFI_ENOENT, "no job '%s' on this node", id);
    if (pfi_audit_observed(n->audit, pfi_clock_wall(), id, tps) != PFI_OK)
        pfi_srv_event_add(n, "db_error", "tokens/s of job %s not written to the audit log", id);
    return PFI_OK;
}

/* One token bucket (mu held): burst, then rate a second. */
static int bucket_take(double *tokens, double *last, double burst, double rate, double now)
{
    if (*last == 0)
        *tokens = burst;
    else
        *tokens += (now - *last) * rate;
    if (*tokens > burst)
        *tokens = burst;
    *last = now;
    if (*tokens < 1.0)
        return 0;
    *tokens -= 1.0;
    return 1;
}

void pfi_srv_rate_refund(srv_node *n, int controller)
{
    pthread_mutex_lock(&n->mu);
    double *t = controller ? &n->rl_ctl_tokens : &n->rl_tokens;
    double burst = controller ? SRV_CAPS_BURST : SRV_CHANGE_BURST;
    *t = *t + 1 > burst ? burst : *t + 1;
    pthread_mutex_unlock(&n->mu);
}

int pfi_srv_rate_take(srv_node *n, int controller)
{
    double now = pfi_clock_mono();
    pthread_mutex_lock(&n->mu);
    int ok = controller ? bucket_take(&n->rl_ctl_tokens, &n->rl_ctl_last, SRV_CAPS_BURST,
                                      SRV_CAPS_RATE, now)
                        : bucket_take(&n->rl_tokens, &n->rl_last, SRV_CHANGE_BURST,
                                      SRV_CHANGE_RATE, now);
    if (!ok)
        n->n_rate_limited++;
    pthread_mutex_unlock(&n->mu);
    return ok;
}

