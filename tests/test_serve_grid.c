/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of a node's grid events in the daemon (src/serve/grid.c) on the simulator backend,
 * driven tick by tick: a finished event's compliance report is a fixed record, whatever budget
 * is set after it; an event changed while in force is judged against each definition in its
 * time. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "hw/backend_impl.h"
#include "serve/serve_int.h"
#include "store/grid.h"
#include "support/sim_node.h"

#define TOKEN "test-token-0123456789abcdef"

typedef pfi_test_node fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (!f || pfi_test_node_start(f, "serve-grid", NULL) != 0)
        return -1;
    snprintf(f->n->token, sizeof f->n->token, "%s", TOKEN);
    pfi_err e = {0};
    if (pfi_srv_grid_open(f->n, &e) != PFI_OK) {
        fprintf(stderr, "grid store: %s\n", e.msg);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    pfi_srv_grid_close(f->n);
    pfi_test_node_stop(f);
    free(f);
    return 0;
}

/* One request; returns the status and (if doc) the parsed JSON answer. */
static int call(fx *f, const char *method, const char *url, const char *body, json_t **doc)
{
    int st = 0;
    const char *ctype;
    size_t len;
    char *out = pfi_srv_api_handle(f->n, method, url, NULL, body, body ? strlen(body) : 0, 1,
                                   &st, &ctype, &len);
    assert_non_null(out);
    if (doc) {
        *doc = json_loads(out, 0, NULL);
        assert_non_null(*doc);
    }
    free(out);
    return st;
}

static void sleep_until(double wall)
{
    for (double left; (left = wall - pfi_clock_wall()) > 0;) {
        struct timespec ts = {(time_t)left, (long)((left - (time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* The report's compliance, as text (keys sorted): what must not change once it is complete. */
static char *compliance_text(fx *f, const char *id)
{
    char url[128];
    snprintf(url, sizeof url, "/v1/grid/events/%s/report", id);
    json_t *d;
    assert_int_equal(call(f, "GET", url, NULL, &d), 200);
    char *s = json_dumps(json_object_get(d, "compliance"), JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(d);
    assert_non_null(s);
    return s;
}

/* An event whose 100 s ramp the node followed from its maximum with no manual budget: a budget
 * of 4800 W set after the event leaves its report as it was (taken now, the ramp line started
 * at 4800 W and the node, at its maximum then, read as over it). */
static void test_report_fixed_after_budget(void **state)
{
    fx *f = *state;
    double max = pfi_srv_grid_site(f->n, NAN).max_w, now = pfi_clock_wall();
    double start = now + 0.5, end = now + 1.0, target = 4000, r0 = start - 100;
    char body[256];
    snprintf(body, sizeof body,
             "{\"id\": \"e5\", \"start\": %.3f, \"end\": %.3f, \"limit_w\": %.0f, "
             "\"ramp_down_s\": 100, \"ramp_up_s\": 0}",
             start, end, target);
    assert_int_equal(call(f, "POST", "/v1/grid/events", body, NULL), 201);
    pfi_err e = {0};
    for (double t = r0; t < now; t += 1) /* the draw 10 W under the ramp line */
        assert_int_equal(pfi_grid_power_add(f->n->grid, t,
                                            max + (target - max) * (t - r0) / 100 - 10, NAN,
                                            "e5", &e),
                         PFI_OK);
    pfi_srv_grid_tick(f->n); /* its ramp under way: the level it ramps from is noted */
    sleep_until(end + 0.05);
    char *before = compliance_text(f, "e5");
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"watts\": 4800}", NULL), 200);
    char *after = compliance_text(f, "e5");
    if (strcmp(before, after))
        fail_msg("the report of a finished event changed with a budget set after it:\n%s\n%s",
                 before, after);
    /* Kept in the store: a restarted daemon reports the same. */
    pfi_srv_grid_close(f->n);
    assert_int_equal(pfi_srv_grid_open(f->n, &e), PFI_OK);
    char *reopened = compliance_text(f, "e5");
    assert_string_equal(before, reopened);
    free(before);
    free(after);
    free(reopened);
}

/* An event that holds a budget ramp lower sets the budget: it binds, on its GET, the allocation
 * and /metrics (they said binding false, grid_event null, pfi_grid_event_binding 0 for the
 * whole ramp while the limits followed the event). */
static void test_binding_during_ramp(void **state)
{
    fx *f = *state;
    double max = pfi_srv_grid_site(f->n, NAN).max_w;
    char body[256];
    snprintf(body, sizeof body, "{\"watts\": %.0f, \"ramp_s\": 60}", 0.9 * max);
    assert_int_equal(call(f, "PUT", "/v1/budget", body, NULL), 200);
    assert_true(f->n->ramping);
    snprintf(body, sizeof body, "{\"id\": \"g3\", \"start\": %.3f, \"duration_s\": 600, "
             "\"limit_w\": %.0f}", pfi_clock_wall() - 1, 0.6 * max);
    assert_int_equal(call(f, "POST", "/v1/grid/events", body, NULL), 201);
    pfi_srv_tick(f->n);
    pfi_srv_tick(f->n);
    assert_true(f->n->ramping); /* still on the ramp, held at the event's limit */
    assert_true(fabs(f->n->budget_w - 0.6 * max) < 1);
    json_t *d;
    assert_int_equal(call(f, "GET", "/v1/grid/events/g3", NULL, &d), 200);
    assert_true(json_is_true(json_object_get(d, "binding")));
    json_decref(d);
    assert_int_equal(call(f, "GET", "/v1/allocation", NULL, &d), 200);
    assert_string_equal(json_string_value(json_object_get(d, "grid_event")), "g3");
    json_decref(d);
    int st = 0;
    const char *ctype;
    size_t len;
    char *m = pfi_srv_api_handle(f->n, "GET", "/metrics", NULL, NULL, 0, 1, &st, &ctype, &len);
    assert_non_null(m);
    assert_non_null(strstr(m, "\npfi_grid_event_binding 1\n"));
    free(m);
    /* The event gone, the ramp's own step sets the budget again. */
    assert_int_equal(call(f, "DELETE", "/v1/grid/events/g3", NULL, NULL), 200);
    pfi_srv_tick(f->n);
    pfi_srv_tick(f->n);
    assert_int_equal(call(f, "GET", "/v1/allocation", NULL, &d), 200);
    assert_true(json_is_null(json_object_get(d, "grid_event")));
    json_decref(d);
}

/* An event lowered while in force (the same id posted again): its report judges the time before
 * the change against the target then, says it was changed and when, and keeps that across a
 * restart; the change is a revision, a re-post of the same terms is not. */
static void test_changed_in_force(void **state)
{
    fx *f = *state;
    double now = pfi_clock_wall(), start = now - 30, end = now + 30;
    char body[256];
    snprintf(body, sizeof body,
             "{\"id\": \"m1\", \"start\": %.3f, \"end\": %.3f, \"limit_w\": 4500}", start,
             end);
    assert_int_equal(call(f, "POST", "/v1/grid/events", body, NULL), 201);
    pfi_err e = {0};
    for (double t = start - 10; t < now; t += 1) /* under 4500 W all along */
        assert_int_equal(pfi_grid_power_add(f->n->grid, t, 4450, 4500, "m1", &e), PFI_OK);
    assert_int_equal(call(f, "POST", "/v1/grid/events", body, NULL), 200); /* the same terms */
    snprintf(body, sizeof body,
             "{\"id\": \"m1\", \"start\": %.3f, \"end\": %.3f, \"limit_w\": 3500}", start,
             end);
    assert_int_equal(call(f, "POST", "/v1/grid/events", body, NULL), 200);
    double changed = pfi_clock_wall();
    for (double t = changed + 2; t < end + 10; t += 1) /* under 3500 W two seconds on */
        assert_int_equal(pfi_grid_power_add(f->n->grid, t, 3450, 3500, "m1", &e), PFI_OK);
    for (int pass = 0; pass < 2; pass++) {
        json_t *d;
        assert_int_equal(call(f, "GET", "/v1/grid/events/m1/report", NULL, &d), 200);
        json_t *c = json_object_get(d, "compliance"), *revs = json_object_get(c, "revisions");
        assert_int_equal(json_array_size(revs), 2);
        json_t *r1 = json_array_get(revs, 1);
        assert_true(fabs(json_number_value(json_object_get(r1, "from_s")) - changed) < 0.5);
        assert_true(json_number_value(json_object_get(json_array_get(revs, 0), "target_w")) ==
                    4500);
        assert_true(json_number_value(json_object_get(r1, "target_w")) == 3500);
        /* Over only while the node came down after the change: not the 30 s before it. */
        double over = json_number_value(json_object_get(c, "seconds_over_target"));
        if (!(over <= 2.5))
            fail_msg("%.1f s over the target: the time before the change was judged against "
                     "the later target", over);
        assert_non_null(strstr(json_string_value(json_object_get(d, "state_message")),
                               "changed while under way at"));
        json_decref(d);
        pfi_srv_grid_close(f->n); /* and again after a restart */
        assert_int_equal(pfi_srv_grid_open(f->n, &e), PFI_OK);
    }
}

static double sum_limits(fx *f)
{
    double s = 0;
    for (int i = 0; i < f->n->n_gpus; i++) {
        pfi_device d;
        pfi_err e = {0};
        assert_int_equal(pfi_hw_info(f->b, i, &d, &e), PFI_OK);
        s += d.limit_w;
    }
    return s;
}

/* How many events of this kind the node's log holds. */
static int events_of(fx *f, const char *kind)
{
    json_t *d;
    assert_int_equal(call(f, "GET", "/v1/events", NULL, &d), 200);
    int k = 0;
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(d, "events"), i, x)
    {
        const char *kd = json_string_value(json_object_get(x, "kind"));
        k += kd && !strcmp(kd, kind);
    }
    json_decref(d);
    return k;
}

typedef struct poster {
    fx *f;
    const char *body;
    int status;
} poster;

static void *post_event(void *arg)
{
    poster *p = arg;
    int st = 0;
    const char *ctype;
    size_t len;
    char *out = pfi_srv_api_handle(p->f->n, "POST", "/v1/grid/events", NULL, p->body,
                                   strlen(p->body), 1, &st, &ctype, &len);
    free(out);
    p->status = st;
    return NULL;
}

/* One new id posted by several clients at once is created once: one 201, the others 200 (a
 * replace).  The answer was read off the count of events before and after, outside the lock
 * that stores them: 30 POSTs at once got four 201s. */
static void test_created_once(void **state)
{
    fx *f = *state;
    double now = pfi_clock_wall();
    char body[256];
    snprintf(body, sizeof body, "{\"id\": \"race\", \"start\": %.3f, \"end\": %.3f, "
             "\"limit_w\": 5000}", now + 3600, now + 7200);
    enum { NP = 8 };
    poster p[NP];
    pthread_t th[NP];
    for (int round = 0; round < 5; round++) {
        char id[16];
        snprintf(id, sizeof id, "race%d", round);
        char b[300];
        snprintf(b, sizeof b, "%.*s%s%s", 8, body, id, body + 12);
        for (int i = 0; i < NP; i++) {
            p[i] = (poster){f, b, 0};
            assert_int_equal(pthread_create(&th[i], NULL, post_event, &p[i]), 0);
        }
        int created = 0, replaced = 0;
        for (int i = 0; i < NP; i++) {
            pthread_join(th[i], NULL);
            created += p[i].status == 201;
            replaced += p[i].status == 200;
        }
        if (created != 1 || replaced != NP - 1)
            fail_msg("round %d: %d created, %d replaced of %d", round, created, replaced, NP);
    }
}

/* An event below what a job's SLA allows: the API refuses it (409, with the hint to let the
 * SLAs yield); taken as a VTN's event, it is held at the least the node can hold, said once
 * (grid_infeasible) and in its GET (feasible false), not re-planned and said again at every
 * tick, and its report shows the budget held above the target. */
/* An event whose SLAs yield sets them aside while it binds, not for good: after it, a budget
 * below what the SLA needs is refused again (the yielding decision committed the jobs with no
 * SLA, and a 0.95 SLA job ran at 0.918 under a later budget without a word). */
static void test_yield_gives_slas_back(void **state)
{
    fx *f = *state;
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"a\",\"gpus\":[0,1,2,3,4,5,6,7],"
                                                 "\"sla\":0.05}", NULL),
                     201);
    double now = pfi_clock_wall();
    char body[256];
    snprintf(body, sizeof body, "{\"id\": \"y\", \"start\": %.3f, \"end\": %.3f, "
             "\"limit_w\": 3000, \"sla\": \"yield\"}", now - 1, now + 600);
    json_t *d = NULL;
    assert_int_equal(call(f, "POST", "/v1/grid/events", body, &d), 201);
    json_decref(d);
    pfi_srv_tick(f->n);
    assert_true(sum_limits(f) <= 3000 + 0.5);
    /* While it binds, the node's own decisions set the SLAs aside too: a job registered then
     * is taken (with its SLA given back after, it was planned with every SLA under 3000 W and
     * refused). */
    d = NULL;
    assert_int_equal(call(f, "DELETE", "/v1/jobs/a", NULL, &d), 200);
    json_decref(d);
    d = NULL;
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"a\",\"gpus\":[0,1,2,3,4,5,6,7],"
                                                 "\"sla\":0.05}", &d),
                     201);
    json_decref(d);
    assert_true(sum_limits(f) <= 3000 + 0.5);
    d = NULL;
    assert_int_equal(call(f, "DELETE", "/v1/grid/events/y", NULL, &d), 200);
    json_decref(d);
    pfi_srv_tick(f->n);
    pthread_mutex_lock(&f->n->mu);
    double sla = f->n->jobs[0].sla;
    pthread_mutex_unlock(&f->n->mu);
    if (!(fabs(sla - 0.05) < 1e-12))
        fail_msg("job a's SLA after the yielding event: %g, registered 0.05", sla);
    d = NULL;
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"watts\":4000}", &d), 409);
    json_decref(d);
}

static void test_vtn_event_held_short(void **state)
{
    fx *f = *state;
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"a\",\"gpus\":[0,1,2,3,4,5,6,7],"
                                                 "\"sla\":0.05}", NULL),
                     201);
    double now = pfi_clock_wall(), max = sum_limits(f);
    char body[256];
    snprintf(body, sizeof body, "{\"id\": \"oadr-cap-0\", \"start\": %.3f, \"end\": %.3f, "
             "\"limit_w\": 3000}", now - 1, now + 600);
    json_t *d;
    assert_int_equal(call(f, "POST", "/v1/grid/events", body, &d), 409);
    double ach = json_number_value(json_object_get(d, "achievable_w"));
    assert_true(ach > 3000 && ach < max);
    json_decref(d);
    json_t *b = json_loads(body, 0, NULL), *res = NULL;
    pfi_err e = {0};
    /* The advice fits the case: "yield" where the SLA raises the floor; where the event yields
     * already, the GPUs' minimum limits are the floor, and it says so (it advised "yield"). */
    assert_int_equal(pfi_srv_grid_add(f->n, b, 0, &res, NULL, &e), PFI_EINFEASIBLE);
    if (!strstr(e.msg, "send \"sla\": \"yield\""))
        fail_msg("no advice to yield: %s", e.msg);
    json_decref(res);
    res = NULL;
    char yb[256];
    snprintf(yb, sizeof yb, "{\"id\": \"y\", \"start\": %.3f, \"end\": %.3f, \"limit_w\": 100, "
             "\"sla\": \"yield\"}", now + 600, now + 1200);
    json_t *y = json_loads(yb, 0, NULL);
    assert_int_equal(pfi_srv_grid_add(f->n, y, 0, &res, NULL, &e), PFI_EINFEASIBLE);
    if (strstr(e.msg, "yield") || !strstr(e.msg, "minimum power limits sum to"))
        fail_msg("an event that yields, below the minimum limits: %s", e.msg);
    json_decref(res);
    json_decref(y);
    res = NULL;
    if (pfi_srv_grid_add(f->n, b, SRV_GRID_TAKE_SHORT, &res, NULL, &e) != PFI_OK)
        fail_msg("a VTN's event the SLAs cannot meet: %s", e.msg);
    assert_true(json_is_false(json_object_get(res, "feasible")));
    assert_true(json_is_true(json_object_get(res, "binding")));
    json_decref(res);
    json_decref(b);
    double held = sum_limits(f);
    if (!(held <= ach + 0.5 && held < max - 100))
        fail_msg("limits sum to %.0f W: the least the node can hold is %.0f W (max %.0f W)",
                 held, ach, max);
    int said = events_of(f, "grid_infeasible");
    long long counted = f->n->n_grid_infeasible, decisions = f->n->n_grid_decisions;
    assert_true(said >= 1 && counted == 1);
    for (int k = 0; k < 3; k++)
        pfi_srv_grid_tick(f->n);
    assert_int_equal(events_of(f, "grid_infeasible"), said);
    assert_true(f->n->n_grid_infeasible == counted && f->n->n_grid_decisions == decisions);
    assert_true(fabs(sum_limits(f) - held) < 0.5);
    assert_int_equal(call(f, "GET", "/v1/grid/events/oadr-cap-0/report", NULL, &d), 200);
    json_t *h = json_object_get(json_object_get(d, "compliance"), "held_above_target");
    assert_non_null(h);
    assert_true(fabs(json_number_value(json_object_get(h, "budget_w")) - ach) < 0.5);
    assert_true(json_number_value(json_object_get(h, "seconds")) > 0);
    /* An interval held shows the budget held, not the 3000 W it could not meet (one not yet
     * recorded shows the plan). */
    json_t *ivs = json_object_get(json_object_get(d, "compliance"), "intervals"), *x;
    size_t i;
    int held_iv = 0;
    json_array_foreach(ivs, i, x)
    {
        double bw = json_number_value(json_object_get(x, "budget_w"));
        if (json_number_value(json_object_get(x, "covered_s")) > 0 && fabs(bw - ach) < 0.5)
            held_iv++;
        if (json_number_value(json_object_get(x, "covered_s")) > 0 && fabs(bw - 3000) < 0.5)
            fail_msg("interval %zu shows the target 3000 W as its budget (held %.0f W)", i, ach);
    }
    assert_true(held_iv >= 1);
    json_decref(d);
}

/* A cut posted without a baseline while another event holds the node: its baseline is the draw
 * before that event, not the draw it curtailed (the cut then cut again from it: 20% of a 20%
 * cut was a 36% cut).  Recorded a sample a second: 80% of the maximum for an hour, then 50%
 * for the last 50 minutes while event "a" bound. */
static void test_cut_baseline_outside_events(void **state)
{
    fx *f = *state;
    double max = pfi_srv_grid_site(f->n, NAN).max_w, now = pfi_clock_wall();
    pfi_err e = {0};
    for (double t = now - 6600; t < now; t += 1) {
        int bound = t >= now - 3000;
        assert_int_equal(pfi_grid_power_add(f->n->grid, t, (bound ? 0.5 : 0.8) * max,
                                            bound ? 0.5 * max : NAN, bound ? "a" : NULL, &e),
                         PFI_OK);
    }
    char body[256];
    snprintf(body, sizeof body, "{\"id\": \"b\", \"start\": %.3f, \"duration_s\": 3600, "
             "\"cut\": 0.1}", now + 600);
    json_t *d;
    assert_int_equal(call(f, "POST", "/v1/grid/events", body, &d), 201);
    double base = json_number_value(json_object_get(d, "baseline_w"));
    const char *how = json_string_value(json_object_get(d, "baseline_method"));
    if (!(fabs(base - 0.8 * max) < 1e-6))
        fail_msg("the cut's baseline %.1f W (%s), not the %.1f W before event a", base, how,
                 0.8 * max);
    assert_non_null(strstr(how, "leaving out the 50 min other events bound (3600 samples)"));
    json_decref(d);
}

/* A daemon up for seconds: its cut's baseline says how little was recorded (it said "over the
 * 60 min" of a mean of 6 samples). */
static void test_cut_baseline_short_record(void **state)
{
    fx *f = *state;
    double max = pfi_srv_grid_site(f->n, NAN).max_w, now = pfi_clock_wall();
    pfi_err e = {0};
    for (double t = now - 5; t < now; t += 1)
        assert_int_equal(pfi_grid_power_add(f->n->grid, t, 0.8 * max, NAN, NULL, &e), PFI_OK);
    char body[256];
    snprintf(body, sizeof body, "{\"id\": \"s\", \"start\": %.3f, \"duration_s\": 600, "
             "\"cut\": 0.1}", now + 600);
    json_t *d;
    assert_int_equal(call(f, "POST", "/v1/grid/events", body, &d), 201);
    const char *how = json_string_value(json_object_get(d, "baseline_method"));
    if (!how || !strstr(how, "(5 samples, only ") || !strstr(how, " s recorded)"))
        fail_msg("a baseline of seconds: %s", how ? how : "-");
    json_decref(d);
}

/* PUT /v1/caps's body: epoch, every GPU of f's node at cap_w. */
static void caps_all(fx *f, int epoch, double cap_w, char *out, size_t size)
{
    int o = snprintf(out, size, "{\"epoch\": %d, \"caps\": [", epoch);
    for (int i = 0; i < f->n->n_gpus; i++)
        o += snprintf(out + o, size - (size_t)o, "%s{\"gpu\": %d, \"cap_w\": %.3f}",
                      i ? ", " : "", i, cap_w);
    snprintf(out + o, size - (size_t)o, "]}");
}

/* A cluster controller's caps that come while an event taken on the node binds are held to
 * the event's budget (they replaced it without a word while the event showed itself binding and
 * its report counted the excess); an event taken before the caps that starts after them holds
 * them when it starts; with the events gone the caps are as sent. */
static void test_caps_held_to_event(void **state)
{
    fx *f = *state;
    double max = sum_limits(f), now = pfi_clock_wall();
    double ahead = pfi_srv_grid_site(f->n, NAN).plan_ahead_s;
    char body[256], caps[1024];
    snprintf(body, sizeof body, "{\"id\": \"e1\", \"start\": %.3f, \"duration_s\": 600, "
             "\"limit_w\": %.0f}", now - 1, 0.6 * max);
    assert_int_equal(call(f, "POST", "/v1/grid/events", body, NULL), 201);
    /* e2, tighter, starts once the caps have come (beyond what the node plans ahead). */
    snprintf(body, sizeof body, "{\"id\": \"e2\", \"start\": %.3f, \"duration_s\": 600, "
             "\"limit_w\": %.0f}", now + ahead + 1.5, 0.5 * max);
    assert_int_equal(call(f, "POST", "/v1/grid/events", body, NULL), 201);
    assert_true(sum_limits(f) <= 0.6 * max + 1e-3);
    caps_all(f, 1, f->n->gpu[0].dev.max_limit_w /* every GPU alike */, caps, sizeof caps);
    json_t *d;
    assert_int_equal(call(f, "PUT", "/v1/caps", caps, &d), 200);
    const char *why = json_string_value(json_object_get(d, "reason"));
    if (!why || !strstr(why, "held to grid event e1"))
        fail_msg("the caps' decision does not say the event holds them: %s", why ? why : "-");
    json_decref(d);
    if (!(sum_limits(f) <= 0.6 * max + 1e-3 && sum_limits(f) > 0.6 * max - 1))
        fail_msg("limits sum to %.3f W under event e1's %.0f W", sum_limits(f), 0.6 * max);
    assert_int_equal(events_of(f, "grid"), 3); /* e1, e2 added; the caps held */
    assert_int_equal(call(f, "GET", "/v1/allocation", NULL, &d), 200);
    assert_string_equal(json_string_value(json_object_get(d, "mode")), "external");
    assert_string_equal(json_string_value(json_object_get(d, "grid_event")), "e1");
    json_decref(d);
    sleep_until(now + 1.7); /* e2 now within the plan's look-ahead */
    pfi_srv_tick(f->n);
    if (!(sum_limits(f) <= 0.5 * max + 1e-3))
        fail_msg("limits sum to %.3f W once e2 (%.0f W) binds", sum_limits(f), 0.5 * max);
    assert_int_equal(call(f, "GET", "/v1/allocation", NULL, &d), 200);
    assert_string_equal(json_string_value(json_object_get(d, "grid_event")), "e2");
    json_decref(d);
    assert_int_equal(call(f, "DELETE", "/v1/grid/events/e2", NULL, NULL), 200);
    assert_int_equal(call(f, "DELETE", "/v1/grid/events/e1", NULL, NULL), 200);
    pfi_srv_tick(f->n);
    if (fabs(sum_limits(f) - max) > 1e-3)
        fail_msg("the events gone, limits sum to %.3f W, not the caps' %.3f W", sum_limits(f),
                 max);
    assert_int_equal(call(f, "GET", "/v1/allocation", NULL, &d), 200);
    assert_true(json_is_null(json_object_get(d, "grid_event")));
    json_decref(d);
}

/* Caps that name some GPUs keep the others' caps (a controller names only the GPUs whose caps
 * change): all of them are held to an event that starts later, and given back after it (only
 * the named ones were lowered, and the node stayed over the event's budget).  An event whose
 * budget the caps are under is not said to hold them. */
static void test_caps_held_partial(void **state)
{
    fx *f = *state;
    double max = sum_limits(f), now = pfi_clock_wall();
    double ahead = pfi_srv_grid_site(f->n, NAN).plan_ahead_s;
    int ng = f->n->n_gpus;
    char body[256], caps[1024];
    snprintf(body, sizeof body, "{\"id\": \"e0\", \"start\": %.3f, \"duration_s\": 600, "
             "\"limit_w\": %.0f}", now - 1, 0.99 * max);
    assert_int_equal(call(f, "POST", "/v1/grid/events", body, NULL), 201);
    snprintf(body, sizeof body, "{\"id\": \"e1\", \"start\": %.3f, \"duration_s\": 600, "
             "\"limit_w\": %.0f}", now + ahead + 1.5, 0.6 * max);
    assert_int_equal(call(f, "POST", "/v1/grid/events", body, NULL), 201);
    double low = 0.75 * max / ng; /* every GPU: under e0's budget */
    caps_all(f, 1, low, caps, sizeof caps);
    json_t *d;
    assert_int_equal(call(f, "PUT", "/v1/caps", caps, NULL), 200);
    assert_int_equal(call(f, "GET", "/v1/allocation", NULL, &d), 200);
    assert_true(json_is_null(json_object_get(d, "grid_event")));
    json_decref(d);
    double top = f->n->gpu[0].dev.max_limit_w;
    snprintf(caps, sizeof caps, "{\"epoch\": 2, \"caps\": [{\"gpu\": 0, \"cap_w\": %.3f}]}",
             top);
    assert_int_equal(call(f, "PUT", "/v1/caps", caps, NULL), 200);
    double sent = top + (ng - 1) * low;
    if (fabs(sum_limits(f) - sent) > 1e-3)
        fail_msg("limits sum to %.3f W, the caps to %.3f W", sum_limits(f), sent);
    sleep_until(now + 1.7); /* e1 now within the plan's look-ahead */
    pfi_srv_tick(f->n);
    if (!(sum_limits(f) <= 0.6 * max + 1e-3))
        fail_msg("limits sum to %.3f W once e1 (%.0f W) binds", sum_limits(f), 0.6 * max);
    assert_int_equal(call(f, "GET", "/v1/allocation", NULL, &d), 200);
    assert_string_equal(json_string_value(json_object_get(d, "grid_event")), "e1");
    json_decref(d);
    assert_int_equal(call(f, "DELETE", "/v1/grid/events/e1", NULL, NULL), 200);
    assert_int_equal(call(f, "DELETE", "/v1/grid/events/e0", NULL, NULL), 200);
    pfi_srv_tick(f->n);
    if (fabs(sum_limits(f) - sent) > 1e-3)
        fail_msg("the events gone, limits sum to %.3f W, not the caps' %.3f W", sum_limits(f),
                 sent);
}

/* A controller's wave that lowers one GPU raises none, even where a node-local event holds the
 * caps: the others took what it gave up (375 W to 400 W each), which the controller spends on
 * other nodes. */
static void test_caps_lower_raises_none(void **state)
{
    fx *f = *state;
    double max = sum_limits(f), now = pfi_clock_wall();
    int ng = f->n->n_gpus;
    double top = f->n->gpu[0].dev.max_limit_w, bottom = f->n->gpu[0].dev.min_limit_w;
    char body[256], caps[1024];
    snprintf(body, sizeof body, "{\"id\": \"e\", \"start\": %.3f, \"duration_s\": 600, "
             "\"limit_w\": %.0f}", now - 1, 0.6 * max);
    assert_int_equal(call(f, "POST", "/v1/grid/events", body, NULL), 201);
    caps_all(f, 1, top, caps, sizeof caps);
    assert_int_equal(call(f, "PUT", "/v1/caps", caps, NULL), 200);
    double before[PFI_MAX_GPUS];
    for (int i = 0; i < ng; i++)
        before[i] = f->n->gpu[i].dev.limit_w;
    snprintf(caps, sizeof caps, "{\"epoch\": 2, \"caps\": [{\"gpu\": 0, \"cap_w\": %.3f}]}",
             bottom);
    assert_int_equal(call(f, "PUT", "/v1/caps", caps, NULL), 200);
    for (int i = 1; i < ng; i++)
        if (f->n->gpu[i].dev.limit_w > before[i] + 1e-6)
            fail_msg("GPU %d rose from %.3f to %.3f W on a wave that lowered GPU 0", i, before[i],
                     f->n->gpu[i].dev.limit_w);
    /* The event gone, the caps as the controller sent them. */
    assert_int_equal(call(f, "DELETE", "/v1/grid/events/e", NULL, NULL), 200);
    pfi_srv_tick(f->n);
    double sent = bottom + (ng - 1) * top;
    if (fabs(sum_limits(f) - sent) > 1e-3)
        fail_msg("the event gone, limits sum to %.3f W, not the caps' %.3f W", sum_limits(f),
                 sent);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_report_fixed_after_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_binding_during_ramp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_changed_in_force, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vtn_event_held_short, setup, teardown),
        cmocka_unit_test_setup_teardown(test_yield_gives_slas_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_created_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cut_baseline_outside_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cut_baseline_short_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_caps_held_to_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_caps_held_partial, setup, teardown),
        cmocka_unit_test_setup_teardown(test_caps_lower_raises_none, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
