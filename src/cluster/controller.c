/* SPDX-License-Identifier: Apache-2.0 */
/* controller.c: the controller's state and its life: open, refresh (Slurm + node daemons),
 * heartbeats, the budget and its ramp, the periodic loop. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster/cl_int.h"
#include "core/alloc_keep.h"
#include "store/grid.h"
#include "core/curve.h"
#include "store/codec.h"
#include "util/budget.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/units.h"

void pfi_cl_config_defaults(pfi_cl_config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->node_url, sizeof c->node_url, "http://%%a:%d", PFI_CL_NODE_PORT);
    c->timeout_s = 2.0;
    c->max_parallel = 256;
    c->heartbeat_s = 5.0;
    c->node_ttl_s = 30.0;
    c->step_w = 1.0;
    c->client_timeout_s = 10.0;
    c->max_conns = 1024;
    c->max_client_conns = 32;
    snprintf(c->name, sizeof c->name, "pfi-cluster");
}

int pfi_cl_open(const pfi_cl_config *cfg, pfi_cl **out, pfi_err *err)
{
    *out = NULL;
    if (cfg->timeout_s <= 0 || cfg->max_parallel < 1 || cfg->step_w <= 0)
        return pfi_err_set(err, PFI_EINVAL, "cluster: timeout, parallelism and step must be > 0");
    if (!(cfg->client_timeout_s >= 1 && cfg->client_timeout_s <= 3600))
        return pfi_err_set(err, PFI_ERANGE, "client-timeout: must be 1s to 1h");
    if (cfg->max_conns < 1 || cfg->max_conns > 4096 || cfg->max_client_conns < 1 ||
        cfg->max_client_conns > 4096)
        return pfi_err_set(err, PFI_ERANGE,
                           "max-connections, max-client-connections: 1 to 4096 each");
    /* Written into JSON bodies as it is: a name a host could give. */
    size_t nl = strnlen(cfg->name, sizeof cfg->name);
    if (nl == 0 || nl == sizeof cfg->name ||
        strspn(cfg->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@#:-") != nl)
        return pfi_err_set(err, PFI_EINVAL, "cluster: the controller's name must be 1 to %zu "
                           "letters, digits and ._@#:-", sizeof cfg->name - 1);
    pfi_cl *c = calloc(1, sizeof *c);
    if (!c)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    c->cfg = *cfg;
    if (cfg->node_token_file[0] &&
        pfi_token_load(cfg->node_token_file, c->token, sizeof c->token, err) != PFI_OK) {
        free(c);
        return pfi_err_prefix(err, "node token: ");
    }
    c->http = pfi_http_new();
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->op_mu, NULL);
    pthread_mutex_init(&c->refresh_mu, NULL);
    c->budget_now_w = NAN;
    c->note_at = NAN;
    c->grid_short_w = NAN;
    pfi_series_init(&c->hist, 1.0);
    /* 10 s is a bound: the site apply-latency alert counts the changes above it */
    static const double apply_le[] = {0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
    pfi_prom_hist_init(&c->apply_hist, apply_le, (int)(sizeof apply_le / sizeof apply_le[0]));
    *out = c;
    return PFI_OK;
}

static void free_jobs(pfi_cl_job *jobs, int n)
{
    for (int j = 0; j < n; j++)
        free(jobs[j].nodes);
    free(jobs);
}

void pfi_cl_close(pfi_cl *c)
{
    if (!c)
        return;
    if (c->loop_running) {
        c->stop = 1;
        pthread_join(c->loop, NULL);
    }
    pfi_http_free(c->http);
    pfi_grid_close(c->grid);
    json_decref(c->gpus_seen);
    free(c->gpus_seen_text);
    free(c->nodes);
    free_jobs(c->jobs, c->n_jobs);
    pfi_alloc_keep_free(c->keep);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->op_mu);
    pthread_mutex_destroy(&c->refresh_mu);
    free(c);
}

static double jnum(json_t *o, const char *k)
{
    return pfi_json_num_or_nan(json_object_get(o, k));
}

int pfi_cl_decode_gpus(json_t *doc, pfi_cl_node *n, pfi_err *err)
{
    json_t *arr = json_is_array(doc) ? doc : json_object_get(doc, "gpus");
    if (!json_is_array(arr))
        return pfi_err_set(err, PFI_EINVAL, "GET /v1/gpus: no \"gpus\" array");
    size_t i;
    json_t *g;
    int count = 0;
    /* What a GPU the answer does not list reported before is not reported now: a daemon back
     * with 4 GPUs of 8 kept GPUs 4-7 as they were, passed as complete, was sent caps for them
     * at every heartbeat (refused, a failure counted each time), and put their default limits in
     * the site's 100%.  Their limits stay: while the node is not managed, its GPUs are counted
     * at the caps they last held. */
    for (int k = 0; k < PFI_MAX_GPUS; k++)
        n->gpu[k].min_limit_w = n->gpu[k].max_limit_w = n->gpu[k].default_limit_w = NAN;
    json_array_foreach(arr, i, g)
    {
        json_t *iv = json_object_get(g, "index");
        int idx = json_is_integer(iv) ? (int)json_integer_value(iv) : (int)i;
        if (idx < 0 || idx >= PFI_MAX_GPUS)
            return pfi_err_set(err, PFI_EINVAL, "GET /v1/gpus: GPU index %d out of range", idx);
        pfi_device *d = &n->gpu[idx];
        d->index = idx;
        d->min_limit_w = jnum(g, "min_limit_w");
        d->max_limit_w = jnum(g, "max_limit_w");
        d->default_limit_w = jnum(g, "default_limit_w");
        d->limit_w = jnum(g, "limit_w");
        d->enforced_w = jnum(g, "enforced_limit_w");
        n->power_w[idx] = jnum(g, "power_w");
        if (isnan(d->enforced_w))
            d->enforced_w = jnum(g, "enforced_w");
        if (!(d->min_limit_w > 0 && d->max_limit_w >= d->min_limit_w))
            return pfi_err_set(err, PFI_EINVAL, "GET /v1/gpus: GPU %d has no usable limits", idx);
        if (isnan(d->default_limit_w))
            d->default_limit_w = d->max_limit_w;
        if (idx + 1 > count)
            count = idx + 1;
    }
    if (count > n->n_gpus)
        n->n_gpus = count;
    const char *by = json_string_value(json_object_get(doc, "controller"));
    snprintf(n->commanded_by, sizeof n->commanded_by, "%s", by ? by : "");
    n->commanded_heard_s = jnum(doc, "controller_heard_s");
    n->commanded_for_s = jnum(doc, "controller_named_for_s");
    json_t *ep = json_object_get(doc, "caps_epoch");
    if (json_is_integer(ep) && json_integer_value(ep) > n->caps_epoch)
        n->caps_epoch = json_integer_value(ep);
    n->caps_named = json_is_true(json_object_get(doc, "caps_named"));
    return PFI_OK;
}

/* A curve known only by its parametric fit (predicted from telemetry): sampled at 12 caps
 * through core/curve.h, the same evaluation the node daemon uses.  Returns the points made. */
static int sample_fit(const pfi_curve_json *cv, double *cap_w, double *tput)
{
    pfi_fit f;
    memset(&f, 0, sizeof f);
    f.family = cv->family ? pfi_family_parse(cv->family) : -1;
    if (f.family < 0 || cv->n_p < 0)
        return 0;
    memcpy(f.p, cv->p, sizeof f.p);
    f.rmse = NAN;
    double lo = cv->min_cap_w, hi = cv->max_cap_w, p0 = cv->p0_w;
    double cap0 = cv->cap0_w, rmax = cv->r_max, t0 = cv->t0;
    pfi_curve c;
    if (!(lo > 0 && hi > lo && p0 > 0) ||
        pfi_curve_from_fit(&f, t0 > 0 ? t0 : 1.0, p0, cap0 > 0 ? cap0 : hi, lo, hi,
                           cv->has_n_gpus ? cv->n_gpus : 1, rmax > 0 ? rmax : 1.0, &c,
                           NULL) != PFI_OK)
        return 0;
    int n = 12;
    for (int k = 0; k < n; k++) {
        cap_w[k] = lo + (hi - lo) * k / (n - 1);
        tput[k] = pfi_curve_rel_at_cap(&c, PFI_VIEW_FIT, cap_w[k]);
    }
    return n;
}

int pfi_cl_decode_curve(json_t *json, pfi_cl_job *j)
{
    /* Either spelling (store/codec.h); a curve with no points but a fit is sampled from the
     * fit.  Points that say nothing usable are left out. */
    pfi_curve_json cv;
    pfi_curve_json_read(json, &cv);
    double t0 = cv.t0;
    int n = 0;
    if (cv.has_arrays && cv.n_cap == cv.n_tput) {
        for (size_t k = 0; k < cv.n_cap && n < PFI_CL_CURVE_MAX; k++) {
            pfi_curve_json_pair_at(&cv, k, &j->cap_w[n], &j->tput[n]);
            n++;
        }
    } else {
        for (size_t k = 0; k < cv.n_points && n < PFI_CL_CURVE_MAX; k++) {
            pfi_curve_json_point p;
            pfi_curve_json_point_at(&cv, k, &p);
            double cap = p.cap_w, t = p.tput, rel = p.rel;
            if (isnan(t) && !isnan(rel))
                t = rel * (t0 > 0 ? t0 : 1.0);
            if (isnan(cap) || isnan(t))
                continue;
            j->cap_w[n] = cap;
            j->tput[n] = t;
            n++;
        }
    }
    if (n < 2 && cv.has_fit)
        n = sample_fit(&cv, j->cap_w, j->tput);
    int ok = n >= 2;
    for (int k = 1; k < n && ok; k++)
        ok = j->cap_w[k] > j->cap_w[k - 1] && j->tput[k] >= 0 && !isnan(j->tput[k]);
    if (!ok)
        return 0;
    j->n_points = n;
    j->has_curve = 1;
    j->t0 = t0 > 0 ? t0 : j->tput[n - 1];
    j->p0_w = cv.p0_w;
    return 1;
}

/* The breaches a node daemon saw (sla_breaches_seen: {"cap_w", "slowdown"}), kept in j's list
 * for this refresh (jobs are joined anew at each): the larger slowdown where the job's nodes
 * disagree (pfi_alloc_seen_add); the plan reads only those in the job's cap range. */
static void absorb_seen(pfi_cl_job *j, json_t *arr)
{
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        pfi_alloc_seen_add(&j->seen, jnum(o, "cap_w"), jnum(o, "slowdown"), PFI_SEEN_LARGER,
                           NULL); /* nonsense refused, the rest kept */
    }
}

/* The jobs one node daemon reports, folded into c->jobs by id (c->mu held). */
static void absorb_jobs(pfi_cl *c, json_t *doc)
{
    json_t *arr = json_is_array(doc) ? doc : json_object_get(doc, "jobs");
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        json_t *idv = json_object_get(o, "id");
        char id[PFI_CL_NAME_MAX];
        if (json_is_string(idv))
            snprintf(id, sizeof id, "%s", json_string_value(idv));
        else if (json_is_integer(idv))
            snprintf(id, sizeof id, "%lld", (long long)json_integer_value(idv));
        else
            continue;
        pfi_cl_job *j = NULL;
        for (int k = 0; k < c->n_jobs && !j; k++)
            if (!strcmp(c->jobs[k].id, id))
                j = &c->jobs[k];
        if (!j)
            continue; /* a job Slurm does not run (any more): the node daemon's own business */
        j->registered = 1;
        double sla = jnum(o, "sla"), w = jnum(o, "weight"), p30 = jnum(o, "pfi30");
        if (!isnan(sla))
            j->sla = sla;
        if (!isnan(p30))
            j->pfi30 = p30;
        if (w > 0)
            j->weight = w;
        json_t *cv = json_object_get(o, "curve");
        if (!j->has_curve && json_is_object(cv))
            pfi_cl_decode_curve(cv, j);
        json_t *seen = json_object_get(o, "sla_breaches_seen");
        if (json_is_array(seen))
            absorb_seen(j, seen);
    }
}

/* Slurm's GRES count against the daemon's GPUs: a GPU Slurm hands out that the daemon does not
 * have cannot be capped, so the node is not managed until the two agree. */
static int gpus_complete(const pfi_cl_node *n, pfi_err *e)
{
    for (int g = 0; g < n->n_gpus; g++)
        if (isnan(n->gpu[g].min_limit_w) || isnan(n->gpu[g].max_limit_w)) {
            pfi_err_set(e, PFI_ESTATE,
                        "Slurm lists %d GPUs but the node daemon does not report GPU %d", n->n_gpus,
                        g);
            return 0;
        }
    return 1;
}

double pfi_cl_slurm_timeout(const pfi_cl_config *cfg)
{
    if (!(cfg->node_ttl_s > 0))
        return 60; /* no watchdog on the nodes: only the API's patience bounds it */
    double t = (cfg->node_ttl_s - cfg->heartbeat_s) / 2;
    return t < 1 ? 1 : t > 60 ? 60 : t;
}

/* The topology: a file given in the configuration (tests, sites without Slurm), else Slurm's.
 * Reads only the configuration, so the controller runs it without op_mu: a slow Slurm delays
 * the refresh, not a budget change.  `pfi cluster topology` shows the same. */
int pfi_cl_topo_load(const pfi_cl_config *cfg, pfi_cl_topo *t, pfi_err *err)
{
    if (!cfg->topo_file[0])
        return pfi_cl_topo_from_slurm(pfi_cl_slurm_timeout(cfg), t, err);
    if (pfi_input_not_dir(cfg->topo_file, err) != PFI_OK)
        return pfi_err_prefix(err, "topology: ");
    FILE *f = fopen(cfg->topo_file, "r");
    if (!f)
        return pfi_err_set(err, errno == ENOENT ? PFI_ENOENT : PFI_EIO,
                           "cannot open topology %s: %s", cfg->topo_file, strerror(errno));
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len = getdelim(&buf, &cap, '\0', f);
    fclose(f);
    int rc = len < 0 ? pfi_err_set(err, PFI_EIO, "cannot read %s", cfg->topo_file)
                     : pfi_cl_topo_parse_json(buf, t, err);
    free(buf);
    return rc;
}

/* Nodes of the last refresh that t no longer lists with GPUs, kept as departed (cluster.h)
 * after the nn listed ones; the count of all. */
static int carry_departed(const pfi_cl *c, pfi_cl_node *nodes, int nn)
{
    for (int k = 0; k < c->n_nodes; k++) {
        const pfi_cl_node *o = &c->nodes[k];
        int listed = 0;
        for (int i = 0; i < nn && !listed; i++)
            listed = !strcmp(nodes[i].name, o->name);
        if (listed || !o->ever_up)
            continue; /* never answered: never took a cap from this controller */
        /* The same daemon (its boot id) answering for a listed node: the node was renamed, and
         * its GPUs are counted there already (counted twice, 2,000 W were held for GPUs that
         * do not exist). */
        int same_daemon = 0;
        for (int i = 0; i < nn && !same_daemon && o->boot_id[0]; i++)
            same_daemon = !strcmp(nodes[i].boot_id, o->boot_id);
        if (same_daemon)
            continue;
        pfi_cl_node *n = &nodes[nn++];
        *n = *o;
        if (!n->departed)
            snprintf(n->why, sizeof n->why, "no longer listed by Slurm");
        n->departed = 1;
        n->n_gpus_slurm = 0;
        if (n->n_gpus_seen > n->n_gpus)
            n->n_gpus = n->n_gpus_seen;
        for (int g = 0; g < PFI_MAX_GPUS; g++)
            n->job_of[g] = -1;
    }
    return nn;
}

/* The new node list, keeping what was known of nodes seen before (c->mu held). */
static int carry_nodes(const pfi_cl *c, const pfi_cl_topo *t, pfi_cl_node *nodes)
{
    int nn = 0;
    for (int i = 0; i < t->n_nodes; i++) {
        if (t->nodes[i].n_gpus <= 0)
            continue;
        pfi_cl_node *n = &nodes[nn++];
        int old = -1;
        for (int k = 0; k < c->n_nodes && old < 0; k++)
            if (!strcmp(c->nodes[k].name, t->nodes[i].name))
                old = k;
        if (old >= 0) {
            *n = c->nodes[old];
            n->n_gpus = t->nodes[i].n_gpus; /* Slurm's count again; the daemon's is checked */
            n->departed = 0;                /* listed again */
        } else {
            snprintf(n->name, sizeof n->name, "%s", t->nodes[i].name);
            n->n_gpus = t->nodes[i].n_gpus;
            n->n_gpus_seen = pfi_cl_gpus_seen_saved(c, n->name); /* before a restart */
            for (int g = 0; g < PFI_MAX_GPUS; g++) {
                n->gpu[g].index = g;
                n->gpu[g].min_limit_w = n->gpu[g].max_limit_w = n->gpu[g].default_limit_w = NAN;
                n->gpu[g].limit_w = n->gpu[g].enforced_w = NAN;
            }
            snprintf(n->why, sizeof n->why, "not asked yet");
        }
        n->n_gpus_slurm = t->nodes[i].n_gpus;
        pfi_cl_node_url(&c->cfg, &t->nodes[i], n->url, sizeof n->url);
        for (int g = 0; g < PFI_MAX_GPUS; g++)
            n->job_of[g] = -1;
    }
    return carry_departed(c, nodes, nn);
}

/* Jobs from Slurm joined with the node list: each job's nodes, and each GPU's job. */
static int join_jobs(const pfi_cl_topo *t, pfi_cl_node *nodes, int nn, pfi_cl_job *jobs,
                     int *njobs, pfi_err *err)
{
    int nj = 0;
    for (int j = 0; j < t->n_jobs; j++) {
        pfi_cl_job *J = &jobs[nj];
        snprintf(J->id, sizeof J->id, "%s", t->jobs[j].id);
        J->nodes = calloc((size_t)t->jobs[j].n_parts + 1, sizeof *J->nodes);
        if (!J->nodes) {
            *njobs = nj;
            return pfi_err_set(err, PFI_ENOMEM, "out of memory for job %s", t->jobs[j].id);
        }
        J->sla = J->pfi30 = NAN;
        J->weight = 1.0;
        J->cap_now_w = J->cap_target_w = J->tput_target = NAN;
        J->min_cap_w = 0;
        J->max_cap_w = INFINITY;
        for (int p = 0; p < t->jobs[j].n_parts; p++) {
            const pfi_cl_topo_part *pt = &t->jobs[j].parts[p];
            int ni = -1;
            for (int k = 0; k < nn && ni < 0; k++)
                if (!strcmp(nodes[k].name, t->nodes[pt->node].name))
                    ni = k;
            if (ni < 0)
                continue;
            J->nodes[J->n_nodes++] = ni;
            for (int g = 0; g < pt->n_gpus; g++)
                if (pt->gpus[g] < nodes[ni].n_gpus) {
                    nodes[ni].job_of[pt->gpus[g]] = nj;
                    J->n_gpus++;
                }
        }
        if (J->n_gpus == 0) {
            free(J->nodes);
            memset(J, 0, sizeof *J);
            continue;
        }
        nj++;
    }
    *njobs = nj;
    return PFI_OK;
}

/* Why a read of a node failed, for its "why": a 401 says what to do about it (the node's body
 * would crowd that out of the field), anything else what the request said. */
static void node_read_why(const pfi_cl *c, pfi_cl_node *n, const char *what,
                          const pfi_http_req *r)
{
    if (r->status == 401)
        snprintf(n->why, sizeof n->why, "%s: HTTP 401: %s", what,
                 c->token[0] ? "the node refused the token of --node-token-file"
                             : "the node wants its bearer token on reads (read_auth = token): "
                               "pass --node-token-file");
    else
        snprintf(n->why, sizeof n->why, "%s: %s", what, r->err);
}

/* A node's answers to GET /v1/gpus (rg) and /v1/jobs (rj): up with its GPUs and jobs' curves,
 * or down with the reason. */
static void absorb_node(pfi_cl *c, pfi_cl_node *n, const pfi_http_req *rg, const pfi_http_req *rj,
                        double wall)
{
    json_t *dg = NULL, *dj = NULL;
    pfi_err e = {0};
    if (rg->status == 200 && rj->status == 200 && (dg = json_loads(rg->reply, 0, NULL)) &&
        (dj = json_loads(rj->reply, 0, NULL)) && pfi_cl_decode_gpus(dg, n, &e) == PFI_OK &&
        gpus_complete(n, &e)) {
        /* A node that refuses this controller's changes stays down with its reason. */
        n->up = !n->refused;
        n->ever_up = 1;
        n->unusable = 0;
        if (!n->refused)
            n->why[0] = '\0';
        n->last_ok_wall = wall;
        n->n_gpus_seen = n->n_gpus;
        absorb_jobs(c, dj);
    } else {
        n->up = 0;
        n->unusable = rg->status == 200 && rj->status == 200;
        /* Its GPUs beyond Slurm's count hold the caps they last acknowledged: counted back at
         * Slurm's count alone, their watts went to other nodes and the site went over. */
        if (n->n_gpus_seen > n->n_gpus)
            n->n_gpus = n->n_gpus_seen;
        if (rg->status != 200)
            node_read_why(c, n, "GET /v1/gpus", rg);
        else if (rj->status != 200)
            node_read_why(c, n, "GET /v1/jobs", rj);
        else
            snprintf(n->why, sizeof n->why, "%s", e.msg[0] ? e.msg : "unreadable answer");
    }
    json_decref(dg);
    json_decref(dj);
}

/* Cap range and current cap of every job, over all its GPUs: one pass over the site. */
static void job_caps(pfi_cl_job *jobs, int nj, const pfi_cl_node *nodes, int nn)
{
    for (int j = 0; j < nj; j++)
        jobs[j].cap_now_w = NAN;
    for (int i = 0; i < nn; i++)
        for (int g = 0; g < nodes[i].n_gpus; g++) {
            int j = nodes[i].job_of[g];
            if (j < 0 || j >= nj)
                continue;
            pfi_cl_job *J = &jobs[j];
            const pfi_device *d = &nodes[i].gpu[g];
            if (!nodes[i].up)
                J->pinned = 1;
            if (d->min_limit_w > J->min_cap_w)
                J->min_cap_w = d->min_limit_w;
            if (d->max_limit_w < J->max_cap_w)
                J->max_cap_w = d->max_limit_w;
            if (!isnan(d->limit_w) && (isnan(J->cap_now_w) || d->limit_w > J->cap_now_w))
                J->cap_now_w = d->limit_w;
        }
}

/* What the last allocation gave each job that is still there with as many GPUs: a refresh
 * joins the jobs anew, and until the next plan a reader of GET /v1/jobs would otherwise see
 * them without targets.  The lists are in Slurm's order, mostly the same from one refresh to
 * the next: the same place is looked at first. */
static void carry_targets(const pfi_cl_job *old, int no, pfi_cl_job *jobs, int nj)
{
    for (int j = 0; j < nj; j++) {
        const pfi_cl_job *o = j < no && !strcmp(old[j].id, jobs[j].id) ? &old[j] : NULL;
        for (int k = 0; !o && k < no; k++)
            if (!strcmp(old[k].id, jobs[j].id))
                o = &old[k];
        if (o && o->n_gpus == jobs[j].n_gpus) {
            jobs[j].cap_target_w = o->cap_target_w;
            jobs[j].tput_target = o->tput_target;
        }
        jobs[j].last_sla = !o ? NAN : o->registered ? o->sla : o->last_sla;
        jobs[j].last_weight = !o ? NAN : o->registered ? o->weight : o->last_weight;
        jobs[j].last_pfi30 = !o ? NAN : o->registered ? o->pfi30 : o->last_pfi30;
    }
}

/* Takes t (freed here); c->op_mu held. */
static int refresh_locked(pfi_cl *c, pfi_cl_topo t, pfi_err *err)
{
    int rc = PFI_OK;
    /* Room for the nodes listed and those departed (op_mu held: c->n_nodes stays). */
    size_t room = (size_t)t.n_nodes + (size_t)c->n_nodes + 1;
    pfi_cl_node *nodes = calloc(room, sizeof *nodes);
    pfi_cl_job *jobs = calloc((size_t)t.n_jobs + 1, sizeof *jobs);
    /* Two requests a node, GPUs and jobs, all sent at once. */
    pfi_http_req *rq = calloc(room * 2, sizeof *rq);
    char(*urls)[PFI_CL_URL_MAX + 32] = calloc(room * 2, sizeof *urls);
    int nn = 0, nj = 0;
    if (!nodes || !jobs || !rq || !urls) {
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    pthread_mutex_lock(&c->mu);
    nn = carry_nodes(c, &t, nodes);
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; i < nn; i++) {
        for (int k = 0; k < 2; k++) {
            pfi_cl_build_url(nodes[i].url, k ? "/v1/jobs" : "/v1/gpus", urls[2 * i + k],
                             sizeof urls[0]);
            rq[2 * i + k].url = urls[2 * i + k];
            rq[2 * i + k].unix_sock = pfi_cl_unix_sock(nodes[i].url);
            rq[2 * i + k].method = "GET";
            rq[2 * i + k].affinity = (unsigned)i + 1; /* a node's requests on one connection */
        }
    }
    pfi_http_many(c->http, rq, nn * 2, c->token, c->cfg.timeout_s, c->cfg.max_parallel);
    rc = join_jobs(&t, nodes, nn, jobs, &nj, err);
    if (rc != PFI_OK)
        goto out;

    pthread_mutex_lock(&c->mu);
    carry_targets(c->jobs, c->n_jobs, jobs, nj);
    free(c->nodes);
    free_jobs(c->jobs, c->n_jobs);
    c->nodes = nodes;
    c->n_nodes = nn;
    c->jobs = jobs;
    c->n_jobs = nj;
    nodes = NULL;
    jobs = NULL;
    double wall = pfi_clock_wall();
    for (int i = 0; i < nn; i++)
        absorb_node(c, &c->nodes[i], &rq[2 * i], &rq[2 * i + 1], wall);
    job_caps(c->jobs, nj, c->nodes, nn);
    pthread_mutex_unlock(&c->mu);
    pfi_cl_gpus_seen_save(c);
out:
    if (rq)
        pfi_http_req_free(rq, nn * 2);
    free(rq);
    free(urls);
    free(nodes);
    if (jobs)
        free_jobs(jobs, nj);
    pfi_cl_topo_free(&t);
    return rc;
}

/* A node daemon that answers with a new boot id restarted: it came back at no more than the
 * caps it held (pfi serve keeps them), but it is treated conservatively all the same: its caps
 * go out again in the apply that follows this heartbeat, and the restart is counted (c->mu
 * held). */
static void note_boot(pfi_cl *c, pfi_cl_node *nd, const char *reply)
{
    json_t *d = reply ? json_loads(reply, 0, NULL) : NULL;
    const char *id = json_string_value(json_object_get(d, "boot_id"));
    if (id && *id && strcmp(id, nd->boot_id) != 0) {
        if (nd->boot_id[0]) {
            nd->resend = 1;
            nd->restarts++;
            c->stats.n_node_restarts++;
            pfi_cl_note(c, 0, "node %s restarted (boot id %s): its caps are sent "
                     "again", nd->name, id);
        }
        snprintf(nd->boot_id, sizeof nd->boot_id, "%s", id);
    }
    json_decref(d);
}

static void heartbeat_locked(pfi_cl *c)
{
    pthread_mutex_lock(&c->mu);
    int n = c->n_nodes;
    pfi_http_req *rq = calloc((size_t)n + 1, sizeof *rq);
    char(*urls)[PFI_CL_URL_MAX + 32] = calloc((size_t)n + 1, sizeof *urls);
    char body[256];
    snprintf(body, sizeof body, "{\"controller\":\"%s\",\"ttl_s\":%g}", c->cfg.name,
             c->cfg.node_ttl_s);
    for (int i = 0; rq && urls && i < n; i++) {
        pfi_cl_build_url(c->nodes[i].url, "/v1/heartbeat", urls[i], sizeof urls[0]);
        rq[i].url = urls[i];
        rq[i].unix_sock = pfi_cl_unix_sock(c->nodes[i].url);
        rq[i].method = "POST";
        rq[i].body = body;
        rq[i].affinity = (unsigned)i + 1;
    }
    pthread_mutex_unlock(&c->mu);
    if (!rq || !urls) {
        free(rq);
        free(urls);
        return;
    }
    /* unix_sock points into c->nodes: only refresh replaces them, and it runs under op_mu
     * as this does. */
    pfi_http_many(c->http, rq, n, c->token, c->cfg.timeout_s, c->cfg.max_parallel);
    pthread_mutex_lock(&c->mu);
    double wall = pfi_clock_wall();
    for (int i = 0; i < n && i < c->n_nodes; i++) {
        pfi_cl_node *nd = &c->nodes[i];
        if (rq[i].status >= 200 && rq[i].status < 300) {
            nd->last_ok_wall = wall;
            note_boot(c, nd, rq[i].reply);
            nd->refused = 0;
            if (nd->ever_up && !nd->up && !nd->unusable) {
                nd->up = 1;
                nd->why[0] = '\0';
            }
        } else {
            if (nd->up)
                c->stats.n_node_fail++;
            nd->up = 0;
            pfi_cl_node_refused(nd, "heartbeat", &rq[i]);
        }
    }
    pthread_mutex_unlock(&c->mu);
    pfi_http_req_free(rq, n);
    free(rq);
    free(urls);
}

int pfi_cl_refresh(pfi_cl *c, pfi_err *err)
{
    pthread_mutex_lock(&c->refresh_mu);
    pfi_cl_topo t;
    int rc = pfi_cl_topo_load(&c->cfg, &t, err);
    if (rc == PFI_OK) {
        pthread_mutex_lock(&c->op_mu);
        rc = refresh_locked(c, t, err);
        pthread_mutex_unlock(&c->op_mu);
    }
    pthread_mutex_unlock(&c->refresh_mu);
    return rc;
}

void pfi_cl_heartbeat(pfi_cl *c)
{
    pthread_mutex_lock(&c->op_mu);
    heartbeat_locked(c);
    pthread_mutex_unlock(&c->op_mu);
}

double pfi_cl_site_default_w(pfi_cl *c)
{
    double s = 0;
    for (int i = 0; i < c->n_nodes; i++)
        for (int g = 0; g < c->nodes[i].n_gpus; g++)
            if (!isnan(c->nodes[i].gpu[g].default_limit_w))
                s += c->nodes[i].gpu[g].default_limit_w;
    return s;
}

int pfi_cl_parse_budget(pfi_cl *c, const char *text, double *watts, pfi_err *err)
{
    pfi_budget b;
    int rc = pfi_budget_parse(text, &b, err);
    if (rc != PFI_OK)
        return rc;
    pthread_mutex_lock(&c->mu);
    double base = pfi_cl_site_default_w(c);
    pthread_mutex_unlock(&c->mu);
    return pfi_budget_watts(&b, text, base, PFI_CL_BUDGET_REF, watts, err);
}

int pfi_cl_set_budget_text(pfi_cl *c, const char *text, double ramp_s, pfi_err *err)
{
    pfi_cl_budget b = {.set = strcmp(text, "none") != 0, .ramp_s = ramp_s};
    if (b.set) {
        int rc = pfi_cl_parse_budget(c, text, &b.watts, err);
        if (rc != PFI_OK)
            return rc;
    }
    return pfi_cl_set_budget(c, &b, err);
}

/* Budget in force at time now, on a ramp from ramp_from_w to budget.watts. */
static double ramp_value(const pfi_cl *c, double now)
{
    if (!c->budget.set)
        return NAN;
    if (now >= c->ramp_t1 || isnan(c->ramp_from_w))
        return c->budget.watts;
    double f = (now - c->ramp_t0) / (c->ramp_t1 - c->ramp_t0);
    return c->ramp_from_w + f * (c->budget.watts - c->ramp_from_w);
}

/* The budget an apply plans now (c->mu held): the manual one on its ramp, or lower where a
 * grid event holds it (sets grid_binding, grid_event and sla_yield). */
static double budget_in_force(pfi_cl *c)
{
    double w = ramp_value(c, pfi_clock_mono());
    double g = pfi_cl_grid_limit(c, w, pfi_clock_wall()); /* a grid event may hold it lower */
    return isnan(g) ? w : g;
}

static int reapply_locked(pfi_cl *c, const pfi_cl_planned *pre, pfi_err *err)
{
    pfi_cl_grid_note_levels(c);
    pthread_mutex_lock(&c->mu);
    double w = budget_in_force(c);
    pthread_mutex_unlock(&c->mu);
    int rc = pfi_cl_apply(c, w, pre, err);
    if (rc == PFI_EINFEASIBLE) /* an event the SLAs cannot meet: the least the site can hold */
        rc = pfi_cl_grid_hold_least(c, w, err);
    return rc;
}

/* An apply that failed after the budget was taken (a node that answered the last refresh
 * did not answer a lowering, and the plan without it no longer fits): the budget is in force
 * and the lowerings made stand.  The error says so and is not EINFEASIBLE or EINVAL, which the
 * API answers as refused with nothing changed.  Who applies the rest depends on the loop: it
 * re-applies every heartbeat; without it (--heartbeat 0, or the one-shot `pfi cluster budget`)
 * nothing does until the next refresh or budget change, and saying "as nodes answer" there
 * promised something that never came. */
static int in_force(const pfi_cl *c, const pfi_cl_budget *b, int rc, pfi_err *err)
{
    if (rc == PFI_OK)
        return rc;
    char was[PFI_ERR_MSG_MAX];
    snprintf(was, sizeof was, "%s", err ? err->msg : "");
    const char *who = c->loop_running ? "the controller applies it as nodes answer"
                                      : "no loop runs to apply the rest: the next refresh or "
                                        "budget change does";
    if (b->set)
        return pfi_err_set(err, PFI_EIO, "site budget %.0f W is in force but not met yet (%s): %s",
                           b->watts, who, was);
    return pfi_err_set(err, PFI_EIO,
                       "the site budget is removed but the caps are not all back yet (%s): %s",
                       c->loop_running ? "the controller restores them as nodes answer"
                                       : "no loop runs to restore them: the next refresh or "
                                         "budget change does",
                       was);
}

int pfi_cl_set_budget(pfi_cl *c, const pfi_cl_budget *b, pfi_err *err)
{
    return pfi_cl_set_budget_answer(c, b, NULL, NULL, err);
}

int pfi_cl_set_budget_answer(pfi_cl *c, const pfi_cl_budget *b, pfi_cl_answer_fn answer,
                             void *ctx, pfi_err *err)
{
    /* The bound every budget text has (util/budget.h): a number such as 1e300 is a typo, and
     * planning it only produced a 409 with a 300-digit figure. */
    if (b->set && !(b->watts > 0 && b->watts <= PFI_BUDGET_MAX_W))
        return pfi_err_set(err, PFI_EINVAL,
                           "site budget %g W: expected more than 0 W and at most %g W", b->watts,
                           PFI_BUDGET_MAX_W);
    if (b->ramp_s < 0 || b->ramp_s > 86400)
        return pfi_err_set(err, PFI_EINVAL, "ramp must be between 0 s and 1 day");
    pthread_mutex_lock(&c->op_mu);
    int rc = PFI_OK;
    pfi_cl_planned pre = {.target = NULL};
    pthread_mutex_lock(&c->mu);
    int taken = b->only_if_none && c->budget.set;
    pthread_mutex_unlock(&c->mu);
    if (taken) {
        pthread_mutex_unlock(&c->op_mu);
        return pfi_err_set(err, PFI_EBUSY, "a site budget was set meanwhile");
    }
    if (b->set) {
        /* The final budget must be feasible before anything moves.  Without a ramp, that plan
         * is the one the apply below uses when it plans the same budget: op_mu is held from
         * one to the other, so the nodes and jobs are the same. */
        pthread_mutex_lock(&c->mu);
        if (b->ramp_s == 0)
            pre.target = pfi_cl_targets_new(c);
        double t = pfi_clock_mono();
        rc = pfi_cl_plan(c, b->watts, pre.target, err);
        pre.alloc_s = pfi_clock_mono() - t;
        pre.budget_w = b->watts;
        pre.sla_yield = c->sla_yield;
        pre.n_nodes = c->n_nodes;
        pthread_mutex_unlock(&c->mu);
        if (rc != PFI_OK) {
            pthread_mutex_unlock(&c->op_mu);
            free(pre.target);
            return rc;
        }
    }
    double now = pfi_clock_mono();
    pthread_mutex_lock(&c->mu);
    /* A ramp starts where the site is: the budget in force, or the caps held when they are
     * lower (no budget since a restart, or one far above the site such as 1MW).  From the
     * default limits, a ramp down first raised a capped site by 60%. */
    double from = c->budget_now_w, caps = pfi_cl_cap_held_w(c);
    if (!(caps > 0))
        caps = pfi_cl_site_default_w(c);
    if (!(from <= caps))
        from = caps;
    c->budget = *b;
    c->ramp_from_w = b->set && b->ramp_s > 0 ? from : NAN;
    c->ramp_t0 = now;
    c->ramp_t1 = now + (b->set ? b->ramp_s : 0);
    pthread_mutex_unlock(&c->mu);
    pfi_cl_budget_save(c); /* in force from here, applied or not */

    if (b->set && b->ramp_s > 0 && !c->loop_running) {
        pthread_mutex_unlock(&c->op_mu);
        /* No loop to step the ramp: step it here, about ten times. */
        double dt = b->ramp_s / 10;
        for (int k = 1; k <= 10 && rc == PFI_OK; k++) {
            pfi_clock_sleep(dt);
            rc = pfi_cl_reapply(c, err);
        }
        if (answer) /* a ramp stepped here: its end, as the last step left it */
            answer(c, ctx);
        return in_force(c, b, rc, err);
    }
    rc = reapply_locked(c, pre.target ? &pre : NULL, err);
    /* The answer is this change's state, taken before another change may run: read after the
     * lock, one request of several at once was answered with another's budget. */
    if (answer)
        answer(c, ctx);
    pthread_mutex_unlock(&c->op_mu);
    free(pre.target);
    return in_force(c, b, rc, err);
}

int pfi_cl_commanded(pfi_cl *c, pfi_err *err)
{
    int found = 0;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n_nodes && !found; i++)
        if (c->nodes[i].up && c->nodes[i].commanded_by[0]) {
            const pfi_cl_node *n = &c->nodes[i];
            char when[96] = ""; /* a node older than the field does not say */
            if (n->commanded_for_s > 0)
                snprintf(when, sizeof when, " %.0f s after its last heartbeat",
                         n->commanded_for_s);
            pfi_err_set(err, PFI_EBUSY,
                        "node %s holds the caps of a running controller (%s, its last "
                        "heartbeat %.0f s ago): change the site budget through it (PUT "
                        "/v1/budget); a controller stopped is no longer counted%s",
                        n->name, n->commanded_by, n->commanded_heard_s,
                        when[0] ? when : " once the node stops naming it");
            found = 1;
        }
    pthread_mutex_unlock(&c->mu);
    return found;
}

int pfi_cl_reapply(pfi_cl *c, pfi_err *err)
{
    pthread_mutex_lock(&c->op_mu);
    int rc = reapply_locked(c, NULL, err);
    pthread_mutex_unlock(&c->op_mu);
    return rc;
}

void pfi_cl_get_stats(pfi_cl *c, pfi_cl_stats *out)
{
    pthread_mutex_lock(&c->mu);
    *out = c->stats;
    pthread_mutex_unlock(&c->mu);
}

/* A heartbeat that planned and applied cleanly ends a condition said before it began. */
static void note_clean_cycle(pfi_cl *c, long long seq_before)
{
    pthread_mutex_lock(&c->mu);
    if (c->note_condition && c->note_seq == seq_before) {
        c->note[0] = 0;
        c->note_at = NAN;
        c->note_condition = 0;
    }
    pthread_mutex_unlock(&c->mu);
}

static void *loop_main(void *arg)
{
    pfi_cl *c = arg;
    double next = 0;
    while (!c->stop) {
        double now = pfi_clock_mono();
        pthread_mutex_lock(&c->mu);
        /* A ramp runs until a step at or after its end was applied: the step before the end
         * stayed in force until the next heartbeat, up to 880 W over the budget reached. */
        double t1 = c->ramp_t1;
        int on_ramp = c->budget.set && isfinite(c->ramp_from_w);
        int ramping = on_ramp || pfi_cl_grid_busy(c, pfi_clock_wall());
        long long seq = c->note_seq;
        pthread_mutex_unlock(&c->mu);
        if (now >= next || ramping) {
            pfi_err e = {0};
            int rc = PFI_OK;
            /* A ramp step only re-plans; Slurm and the daemons are re-read once a period. */
            if (now >= next) {
                pfi_cl_heartbeat(c);
                rc = pfi_cl_refresh(c, &e);
                pfi_cl_grid_record(c);
            }
            pfi_cl_history_record(c);
            if (rc == PFI_OK)
                rc = pfi_cl_reapply(c, &e);
            if (on_ramp && now >= t1) { /* applied, or the heartbeats retry it */
                pthread_mutex_lock(&c->mu);
                if (c->ramp_t1 == t1) /* not a new ramp set meanwhile */
                    c->ramp_from_w = NAN;
                pthread_mutex_unlock(&c->mu);
            }
            if (rc != PFI_OK) {
                pthread_mutex_lock(&c->mu);
                pfi_cl_note(c, 1, "%s", e.msg);
                pthread_mutex_unlock(&c->mu);
            } else {
                note_clean_cycle(c, seq);
            }
            if (now >= next)
                next = now + c->cfg.heartbeat_s;
        }
        /* Short sleeps so close() and ramps are prompt. */
        usleep(ramping ? 200000 : 100000);
    }
    return NULL;
}

int pfi_cl_start_loop(pfi_cl *c, pfi_err *err)
{
    if (c->cfg.heartbeat_s <= 0)
        return PFI_OK;
    if (pthread_create(&c->loop, NULL, loop_main, c) != 0)
        return pfi_err_set(err, PFI_EINTERNAL, "cannot start the controller thread");
    c->loop_running = 1;
    return PFI_OK;
}
