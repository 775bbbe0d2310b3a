/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the daemon's control path (src/serve/control.c, node.c) under concurrency: the
 * control loop re-planning every tick in its own thread while commands (budgets, caps) arrive,
 * as issue 14 reproduced it over HTTP (10 ms re-plans, budgets alternating ~4000/~5000 W).
 * A command, once answered, must stay in force: a re-plan never brings back an older budget or
 * mode, and the sum of the limits never exceeds the budget the last command set. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hw/backend_impl.h"
#include "serve/serve_int.h"
#include "store/grid.h"
#include "support/sim_node.h"
#include "util/http_query.h"

typedef struct fx {
    pfi_test_node node;
    pthread_t ticker;
    volatile int stop;
    volatile long long ticks;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    pfi_serve_config c;
    pfi_serve_config_defaults(&c);
    /* The recipe: re-plan at every tick, no rate limit, no hysteresis. */
    c.reoptimize_interval_s = 0;
    c.min_change_interval_s = 0;
    c.hysteresis_w = 0;
    if (!f || pfi_test_node_start(&f->node, "serve-ctl", &c) != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    pfi_test_node_stop(&f->node);
    free(f);
    return 0;
}

static void *tick_loop(void *arg)
{
    fx *f = arg;
    while (!f->stop) {
        pfi_srv_tick(f->node.n);
        f->ticks++;
    }
    return NULL;
}

static void ticker_start(fx *f)
{
    f->stop = 0;
    assert_int_equal(pthread_create(&f->ticker, NULL, tick_loop, f), 0);
}

static void ticker_stop(fx *f)
{
    f->stop = 1;
    pthread_join(f->ticker, NULL);
}

/* Waits until the control loop has run a few more ticks (counted, not timed). */
static void wait_ticks(fx *f, int k)
{
    long long t0 = f->ticks;
    while (f->ticks < t0 + k) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
}

/* The sum of the limits as the GPUs hold them, in whole milliwatts. */
static long long sum_mw(fx *f)
{
    long long s = 0;
    pthread_mutex_lock(&f->node.n->hw_mu);
    for (int i = 0; i < f->node.n->n_gpus; i++) {
        pfi_device d;
        pfi_err e = {0};
        assert_int_equal(pfi_hw_info(f->node.b, i, &d, &e), PFI_OK);
        s += pfi_hw_held_mw(d.limit_w > d.enforced_w ? d.limit_w : d.enforced_w);
    }
    pthread_mutex_unlock(&f->node.n->hw_mu);
    return s;
}

static void add_job(fx *f, const char *spec)
{
    json_t *j = json_loads(spec, 0, NULL);
    assert_non_null(j);
    json_t *res = NULL;
    pfi_err e = {0};
    int rc = pfi_srv_job_add(f->node.n, j, &res, &e);
    if (rc != PFI_OK)
        fprintf(stderr, "job: %s\n", e.msg);
    assert_int_equal(rc, PFI_OK);
    json_decref(res);
    json_decref(j);
}

static void register_three(fx *f)
{
    add_job(f, "{\"id\":\"a\",\"gpus\":[0,1,2,3],\"sla\":0.05}");
    add_job(f, "{\"id\":\"b\",\"gpus\":[4,5],\"pfi30\":0.2}");
    add_job(f, "{\"id\":\"c\",\"gpus\":[6,7],\"pfi30\":0.9,\"weight\":2}");
}

/* Item 1: budgets alternating ~4000/~5000 W while the loop re-plans continuously.  After each
 * answered change and a few ticks, the budget in force is the one set, the mode is local and
 * the limits sum to at most it. */
static void test_replan_keeps_new_budget(void **state)
{
    fx *f = *state;
    register_three(f);
    ticker_start(f);
    int undone = 0, over = 0;
    for (int k = 0; k < 200; k++) {
        double w = (k % 2 ? 4000.0 : 5000.0) + (k % 7);
        pfi_err e = {0};
        json_t *res = NULL;
        assert_int_equal(pfi_srv_budget_set(f->node.n, w, 0, 0, &res, &e), PFI_OK);
        json_decref(res);
        wait_ticks(f, 3);
        pthread_mutex_lock(&f->node.n->mu);
        double b = f->node.n->budget_w;
        int mode = f->node.n->mode;
        pthread_mutex_unlock(&f->node.n->mu);
        if (b != w || mode != SRV_MODE_LOCAL)
            undone++;
        if (sum_mw(f) > pfi_hw_cap_mw(w))
            over++;
    }
    ticker_stop(f);
    if (undone || over)
        fprintf(stderr, "%d of 200 budgets undone, %d over the new budget\n", undone, over);
    assert_int_equal(undone, 0);
    assert_int_equal(over, 0);
}

/* Item 1 with caps: caps from a controller, once answered, are not replaced by a local plan
 * and the mode stays external. */
static void test_replan_keeps_controller_caps(void **state)
{
    fx *f = *state;
    register_three(f);
    ticker_start(f);
    int replaced = 0;
    for (int k = 0; k < 100; k++) {
        /* A local budget first (the loop re-plans it), then the controller's caps. */
        pfi_err e = {0};
        json_t *res = NULL;
        assert_int_equal(pfi_srv_budget_set(f->node.n, 4500.0 + k, 0, 0, &res, &e), PFI_OK);
        json_decref(res);
        double caps[PFI_MAX_GPUS];
        for (int i = 0; i < f->node.n->n_gpus; i++)
            caps[i] = 300.0 + 10.0 * (k % 5) + i;
        res = NULL;
        assert_int_equal(pfi_srv_caps_set(f->node.n, k + 1, caps, NULL, &res, &e), PFI_OK);
        json_decref(res);
        wait_ticks(f, 3);
        pthread_mutex_lock(&f->node.n->hw_mu);
        int differs = 0;
        for (int i = 0; i < f->node.n->n_gpus; i++) {
            pfi_device d;
            assert_int_equal(pfi_hw_info(f->node.b, i, &d, &e), PFI_OK);
            differs += pfi_hw_cap_mw(d.limit_w) != pfi_hw_cap_mw(caps[i]);
        }
        pthread_mutex_unlock(&f->node.n->hw_mu);
        pthread_mutex_lock(&f->node.n->mu);
        int mode = f->node.n->mode;
        pthread_mutex_unlock(&f->node.n->mu);
        if (differs || mode != SRV_MODE_EXTERNAL)
            replaced++;
    }
    ticker_stop(f);
    if (replaced)
        fprintf(stderr, "%d of 100 controller caps replaced by a local plan\n", replaced);
    assert_int_equal(replaced, 0);
}

/* A ramp under way, then a plain budget: the ramp's next step must not bring it back. */
static void test_ramp_then_budget(void **state)
{
    fx *f = *state;
    register_three(f);
    ticker_start(f);
    int undone = 0;
    for (int k = 0; k < 100; k++) {
        pfi_err e = {0};
        json_t *res = NULL;
        assert_int_equal(pfi_srv_budget_set(f->node.n, 5000.0, 0, 0, &res, &e), PFI_OK);
        json_decref(res);
        res = NULL;
        assert_int_equal(pfi_srv_budget_set(f->node.n, 4000.0, 60, 0, &res, &e), PFI_OK);
        json_decref(res);
        wait_ticks(f, 1);
        res = NULL;
        assert_int_equal(pfi_srv_budget_set(f->node.n, 4200.0, 0, 0, &res, &e), PFI_OK);
        json_decref(res);
        wait_ticks(f, 3);
        pthread_mutex_lock(&f->node.n->mu);
        if (f->node.n->budget_w != 4200.0 || f->node.n->ramping)
            undone++;
        pthread_mutex_unlock(&f->node.n->mu);
    }
    ticker_stop(f);
    assert_int_equal(undone, 0);
}

/* Item 9: on a fresh daemon (no budget yet) a ramp starts from the current sum of the limits,
 * not in one step to its end. */
static void test_first_budget_ramps(void **state)
{
    fx *f = *state;
    register_three(f);
    long long start = sum_mw(f);
    double to = 0.7 * f->node.n->nominal_w;
    pfi_err e = {0};
    json_t *res = NULL;
    assert_int_equal(pfi_srv_budget_set(f->node.n, to, 30, 0, &res, &e), PFI_OK);
    json_decref(res);
    assert_true(f->node.n->ramping);
    assert_true(fabs(f->node.n->ramp_from_w * 1000.0 - (double)start) < 1.0);
    pfi_srv_tick(f->node.n);
    /* Seconds into a 30 s ramp the node is still near where it started, far above the end. */
    long long now = sum_mw(f);
    assert_true(now <= start);
    assert_true(now > pfi_hw_cap_mw(to) + 1000 * 100);
}

static int caps_at(fx *f, long long epoch, double w)
{
    double caps[PFI_MAX_GPUS];
    for (int i = 0; i < f->node.n->n_gpus; i++)
        caps[i] = w;
    pfi_err e = {0};
    json_t *res = NULL;
    int rc = pfi_srv_caps_set(f->node.n, epoch, caps, NULL, &res, &e);
    json_decref(res);
    return rc;
}

/* Item 10: an epoch out of bounds is refused and changes nothing (it used to be taken and lock
 * every later epoch out until a restart); a budget set on the node ends the controller's
 * command, and with it its epochs. */
static void test_epoch_bounds_and_reset(void **state)
{
    fx *f = *state;
    register_three(f);
    assert_int_equal(caps_at(f, 10, 500), PFI_OK);
    assert_int_equal(caps_at(f, 9223372036854775807LL, 450), PFI_EINVAL);
    assert_int_equal(f->node.n->caps_epoch, 10);
    assert_true(sum_mw(f) == 500LL * 1000 * f->node.n->n_gpus);
    assert_int_equal(caps_at(f, 11, 480), PFI_OK);
    assert_int_equal(caps_at(f, 11, 470), PFI_EBUSY); /* stale: still refused */
    assert_int_equal(caps_at(f, 5, 470), PFI_EBUSY);
    pfi_err e = {0};
    json_t *res = NULL;
    assert_int_equal(pfi_srv_budget_set(f->node.n, 4000, 0, 0, &res, &e), PFI_OK);
    json_decref(res);
    assert_int_equal(f->node.n->caps_epoch, 0);
    assert_int_equal(caps_at(f, 5, 470), PFI_OK);
    /* A controller whose clock runs a week ahead is taken (more than a day ahead was refused,
     * and such a controller could cap nothing); past 2^53 is not. */
    long long week = (long long)(pfi_clock_wall() * 1000.0) + 7LL * 86400 * 1000;
    assert_int_equal(caps_at(f, week, 460), PFI_OK);
    assert_int_equal(caps_at(f, 9007199254740993LL, 450), PFI_EINVAL);
    assert_int_equal(f->node.n->caps_epoch, week);
}

/* A node over the fake NVML with a fault rule (PFI_FAKENVML: the library make check builds). */
static int setup_faulty(void **state, const char *faults)
{
    const char *lib = getenv("PFI_FAKENVML");
    if (!lib || access(lib, R_OK) != 0) {
        fprintf(stderr, "PFI_FAKENVML is not set to the fake NVML library\n");
        return -1;
    }
    fx *f = calloc(1, sizeof *f);
    const char *base = getenv("PFI_TEST_TMP");
    snprintf(f->node.dir, sizeof f->node.dir, "%s/serve-ctl-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(f->node.dir))
        return -1;
    unsetenv("PFI_SIM_STATE");
    unsetenv("PFI_FAKENVML_FAULTS_FILE");
    setenv("PFI_FAKENVML_FAULTS", faults, 1);
    pfi_serve_config_defaults(&f->node.cfg);
    snprintf(f->node.cfg.db, sizeof f->node.cfg.db, "%s/serve.db", f->node.dir);
    pfi_err e = {0};
    int rc = pfi_hw_open("nvml", lib, 0, &f->node.b, &e);
    unsetenv("PFI_FAKENVML_FAULTS");
    if (rc != PFI_OK) {
        fprintf(stderr, "nvml backend: %s\n", e.msg);
        return -1;
    }
    f->node.n = calloc(1, sizeof *f->node.n);
    if (pfi_srv_node_init(f->node.n, &f->node.cfg, f->node.b, &e) != PFI_OK ||
        pfi_audit_open(f->node.cfg.db, &f->node.n->audit, &e) != PFI_OK) {
        fprintf(stderr, "node: %s\n", e.msg);
        return -1;
    }
    snprintf(f->node.n->token, sizeof f->node.n->token, "%s", "test-token-0123456789abcdef");
    *state = f;
    return 0;
}

static int setup_not_root(void **state)
{
    return setup_faulty(state, "not-root");
}

/* GPU 5 answers its first power reading, then is lost (the fake NVML's fault rule). */
static int setup_lost_gpu5(void **state)
{
    return setup_faulty(state, "nvmlDeviceGetPowerUsage@5=GPU_IS_LOST;after=1");
}

/* One request; url may end in "?name=value" (one parameter, as the transport hands it). */
static int api(fx *f, const char *method, const char *url, const char *body, json_t **doc)
{
    int st = 0;
    const char *ctype;
    size_t len;
    char path[256], *qm;
    snprintf(path, sizeof path, "%s", url);
    pfi_http_query q = {0};
    if ((qm = strchr(path, '?'))) {
        *qm++ = '\0';
        char *eq = strchr(qm, '=');
        assert_non_null(eq);
        *eq++ = '\0';
        pfi_http_query_note(&q, qm, eq);
    }
    char *out = pfi_srv_api_handle(f->node.n, method, path, qm ? &q : NULL, body,
                                   body ? strlen(body) : 0, 1, &st, &ctype, &len);
    assert_non_null(out);
    if (doc) {
        *doc = json_loads(out, 0, NULL);
        if (!*doc) /* not JSON: /metrics */
            *doc = json_string(out);
    }
    free(out);
    return st;
}

/* Under a cluster controller heard lately (external mode), a budget on the node that would
 * raise its limits is refused (409 naming the controller), nothing changed: the node went up at
 * once and the site was over its budget until the controller's next caps.  A lower one is taken,
 * and ?force=1 takes a higher one. */
static void test_controller_guard(void **state)
{
    fx *f = *state;
    register_three(f);
    json_t *d;
    assert_int_equal(api(f, "POST", "/v1/heartbeat", "{\"controller\":\"site-ctl:9460\"}", NULL),
                     200);
    assert_int_equal(caps_at(f, 1, 500), PFI_OK);
    long long held = sum_mw(f);
    double held_w = (double)held / 1000;
    assert_int_equal(api(f, "DELETE", "/v1/budget", NULL, &d), 409);
    const char *m = json_string_value(json_object_get(json_object_get(d, "error"), "message"));
    if (!m || !strstr(m, "come from site-ctl:9460") || !strstr(m, "force"))
        fail_msg("budget clear under a controller: %s", m ? m : "-");
    json_decref(d);
    char body[64];
    snprintf(body, sizeof body, "{\"watts\": %.0f}", held_w + 100);
    assert_int_equal(api(f, "PUT", "/v1/budget", body, NULL), 409);
    assert_int_equal(api(f, "PUT", "/v1/budget?force=0", body, NULL), 409);
    assert_true(sum_mw(f) == held && f->node.n->mode == SRV_MODE_EXTERNAL);
    assert_int_equal(f->node.n->caps_epoch, 1);
    snprintf(body, sizeof body, "{\"watts\": %.0f}", held_w - 100);
    assert_int_equal(api(f, "PUT", "/v1/budget", body, NULL), 200);
    assert_true(sum_mw(f) <= held - 100000);
    assert_int_equal(caps_at(f, 2, 500), PFI_OK);
    assert_int_equal(api(f, "DELETE", "/v1/budget?force=1", NULL, NULL), 200);
    assert_true(sum_mw(f) > held && f->node.n->mode == SRV_MODE_LOCAL);
    assert_int_equal(api(f, "PUT", "/v1/budget?force=2", body, NULL), 400);
    /* Caps at every GPU's original limit: removing the budget raises nothing, and is taken. */
    assert_int_equal(caps_at(f, 3, f->node.n->gpu[0].original_w), PFI_OK);
    assert_int_equal(api(f, "DELETE", "/v1/budget", NULL, NULL), 200);
}

/* One controller at a time: caps and heartbeats of a second, named one are refused (409,
 * nothing changed, said in the events) while the first holds the node's caps and was heard
 * within SRV_CONTROLLER_HEARD_S; the first restarted (the same name), and a caller that names
 * none, are taken; once the first is silent, the second takes the node.  Two controllers over
 * one node took turns over its caps at every heartbeat, the site over the lower budget. */
static void test_second_controller(void **state)
{
    fx *f = *state;
    register_three(f);
    const char *hb_a = "{\"controller\":\"pfi-cluster@a#1\",\"ttl_s\":30}",
               *hb_b = "{\"controller\":\"pfi-cluster@b#2\",\"ttl_s\":30}",
               *caps_b = "{\"epoch\":9,\"controller\":\"pfi-cluster@b#2\",\"caps\":[{\"gpu\":0,"
                         "\"cap_w\":700}]}";
    assert_int_equal(api(f, "POST", "/v1/heartbeat", hb_a, NULL), 200);
    assert_int_equal(api(f, "PUT", "/v1/caps",
                         "{\"epoch\":5,\"controller\":\"pfi-cluster@a#1\",\"caps\":[{\"gpu\":0,"
                         "\"cap_w\":300}]}",
                         NULL),
                     200);
    long long held = sum_mw(f);
    json_t *d = NULL;
    assert_int_equal(api(f, "POST", "/v1/heartbeat", hb_b, &d), 409);
    json_decref(d);
    assert_int_equal(api(f, "PUT", "/v1/caps", caps_b, &d), 409);
    json_decref(d);
    pfi_err e = {0};
    double caps[PFI_MAX_GPUS];
    for (int i = 0; i < PFI_MAX_GPUS; i++)
        caps[i] = NAN;
    caps[1] = 650;
    assert_int_equal(pfi_srv_caps_set(f->node.n, 10, caps, "pfi-cluster@b#2", NULL, &e), PFI_EBUSY);
    assert_non_null(strstr(e.msg, "held by controller pfi-cluster@a#1"));
    assert_true(sum_mw(f) == held);
    assert_string_equal(f->node.n->hb_controller, "pfi-cluster@a#1");
    assert_int_equal(api(f, "GET", "/v1/events", NULL, &d), 200);
    int said = 0;
    json_t *ev = json_object_get(d, "events");
    for (size_t k = 0; k < json_array_size(ev); k++)
        said += strstr(json_string_value(json_object_get(json_array_get(ev, k), "message")),
                       "refused pfi-cluster@b#2") != NULL;
    json_decref(d);
    assert_int_equal(said, 1); /* once, not at every refusal */
    /* The same controller (restarted) and an unnamed caller are taken. */
    assert_int_equal(api(f, "POST", "/v1/heartbeat", hb_a, NULL), 200);
    assert_int_equal(pfi_srv_caps_set(f->node.n, 11, caps, "pfi-cluster@a#1", NULL, &e), PFI_OK);
    caps[1] = 640;
    assert_int_equal(pfi_srv_caps_set(f->node.n, 12, caps, NULL, NULL, &e), PFI_OK);
    /* The first silent past SRV_CONTROLLER_HEARD_S: the second takes the node. */
    pthread_mutex_lock(&f->node.n->mu);
    f->node.n->hb_last -= SRV_CONTROLLER_HEARD_S + 1;
    pthread_mutex_unlock(&f->node.n->mu);
    assert_int_equal(api(f, "POST", "/v1/heartbeat", hb_b, NULL), 200);
    assert_string_equal(f->node.n->hb_controller, "pfi-cluster@b#2");
    assert_int_equal(api(f, "PUT", "/v1/caps",
                         "{\"epoch\":13,\"controller\":\"pfi-cluster@b#2\",\"caps\":[{\"gpu\":0,"
                         "\"cap_w\":700}]}",
                         NULL),
                     200);
    /* A name that is not a string is refused by name. */
    assert_int_equal(api(f, "PUT", "/v1/caps", "{\"epoch\":20,\"controller\":7,\"caps\":[{\"gpu\":0,"
                                              "\"cap_w\":600}]}", &d),
                     400);
    json_decref(d);
}

/* The operator takes the node back (budget set or removed here): the watchdog a controller
 * armed goes with it; it stayed armed and, its ttl later, cut every GPU to the safe budget
 * under the operator's own limits (local mode).  The controller's next heartbeat arms it. */
static void test_operator_disarms_watchdog(void **state)
{
    fx *f = *state;
    register_three(f);
    assert_int_equal(api(f, "POST", "/v1/heartbeat", "{\"controller\":\"c1\",\"ttl_s\":0.2}",
                         NULL),
                     200);
    assert_true(f->node.n->hb_ttl_s > 0);
    assert_int_equal(api(f, "DELETE", "/v1/budget?force=1", NULL, NULL), 200);
    assert_true(f->node.n->hb_ttl_s == 0);
    long long held = sum_mw(f);
    struct timespec ts = {0, 400 * 1000 * 1000};
    nanosleep(&ts, NULL);
    for (int k = 0; k < 3; k++)
        pfi_srv_tick(f->node.n);
    assert_int_equal(f->node.n->mode, SRV_MODE_LOCAL);
    assert_true(sum_mw(f) == held);
    /* Armed again by a heartbeat; a budget forced disarms it the same way. */
    assert_int_equal(api(f, "POST", "/v1/heartbeat", "{\"controller\":\"c1\",\"ttl_s\":0.2}",
                         NULL),
                     200);
    assert_true(f->node.n->hb_ttl_s > 0);
    assert_int_equal(api(f, "PUT", "/v1/budget?force=1", "{\"watts\": 4000}", NULL), 200);
    assert_true(f->node.n->hb_ttl_s == 0);
    nanosleep(&ts, NULL);
    for (int k = 0; k < 3; k++)
        pfi_srv_tick(f->node.n);
    assert_int_equal(f->node.n->mode, SRV_MODE_LOCAL);
    assert_true(sum_mw(f) <= 4000000);
    /* A budget (not forced) from a controller heard just now is its own steering: the watchdog
     * stays armed and fires when it falls silent. */
    assert_int_equal(api(f, "POST", "/v1/heartbeat", "{\"controller\":\"c1\",\"ttl_s\":0.2}",
                         NULL),
                     200);
    assert_int_equal(api(f, "PUT", "/v1/budget", "{\"watts\": 3900}", NULL), 200);
    assert_true(f->node.n->hb_ttl_s > 0);
    nanosleep(&ts, NULL);
    for (int k = 0; k < 3; k++)
        pfi_srv_tick(f->node.n);
    assert_int_equal(f->node.n->mode, SRV_MODE_SAFE);
}

/* Item 6: a cut that cannot be applied (no permission to set limits) answers non-2xx naming
 * the GPUs that failed; /healthz says degraded; /metrics carries pfi_over_budget 1 and the
 * excess in watts. */
static void test_unapplied_cut_reported(void **state)
{
    fx *f = *state;
    json_t *d;
    int st = api(f, "PUT", "/v1/budget", "{\"percent\":70}", &d);
    char *txt = json_dumps(d, JSON_COMPACT);
    fprintf(stderr, "PUT 70%% -> %d %s\n", st, txt);
    assert_true(st >= 300);
    assert_non_null(strstr(txt, "GPU 0"));
    free(txt);
    json_decref(d);
    assert_int_equal(api(f, "GET", "/healthz", NULL, &d), 200);
    assert_string_equal(json_string_value(json_object_get(d, "status")), "degraded");
    double over = json_number_value(json_object_get(d, "over_budget_w"));
    assert_true(over > 1000);
    json_decref(d);
    assert_int_equal(api(f, "GET", "/metrics", NULL, &d), 200);
    const char *m = json_string_value(d);
    assert_non_null(m);
    assert_non_null(strstr(m, "\npfi_over_budget 1\n"));
    char want[96];
    snprintf(want, sizeof want, "\npfi_budget_excess_watts %.17g\n", over);
    assert_non_null(strstr(m, want));
    json_decref(d);
    /* Without a budget nothing is over. */
    assert_int_equal(api(f, "DELETE", "/v1/budget", NULL, NULL), 200);
    assert_int_equal(api(f, "GET", "/metrics", NULL, &d), 200);
    assert_non_null(strstr(json_string_value(d), "\npfi_over_budget 0\n"));
    json_decref(d);
}

/* A value of /metrics (a series without labels); NAN when absent. */
static double metric(fx *f, const char *name)
{
    json_t *d;
    assert_int_equal(api(f, "GET", "/metrics", NULL, &d), 200);
    char want[96];
    snprintf(want, sizeof want, "\n%s ", name);
    const char *at = strstr(json_string_value(d), want);
    double v = at ? strtod(at + strlen(want), NULL) : NAN;
    json_decref(d);
    return v;
}

/* A GPU that stopped answering no longer adds its last draw to the node's: pfi_node_power_watts
 * summed every GPU's last reading, so a lost GPU "drew" its last watts for good.  Its own series
 * stay marked as lost (pfi_gpu_up 0, no pfi_gpu_power_watts), as before. */
static void test_lost_gpu_not_in_node_draw(void **state)
{
    fx *f = *state;
    srv_node *n = f->node.n;
    pfi_srv_sample(n);
    assert_int_equal(n->gpu[5].up, 1);
    assert_true(n->gpu[5].s.have & PFI_F_POWER);
    double all = 0;
    for (int i = 0; i < n->n_gpus; i++)
        all += n->gpu[i].s.power_w;
    assert_true(fabs(metric(f, "pfi_node_power_watts") - all) < 1e-6);
    pfi_srv_sample(n);
    assert_int_equal(n->gpu[5].up, 0);
    double last5 = n->gpu[5].s.power_w, up = 0;
    assert_true(last5 > 0); /* its last reading is still held */
    for (int i = 0; i < n->n_gpus; i++)
        if (i != 5)
            up += n->gpu[i].s.power_w;
    double w = metric(f, "pfi_node_power_watts");
    if (fabs(w - up) > 1e-6)
        fail_msg("node draw %.17g W with GPU 5 lost; the answering GPUs draw %.17g W (GPU 5's "
                 "last reading %.17g W)",
                 w, up, last5);
    /* The node's power history (the grid store's site draw, which compliance reports judge)
     * counts the lost GPU at its power limit, the most it may draw: not its stale last
     * reading, and not nothing (a report then said the node drew less than it could have). */
    pfi_err e = {0};
    assert_int_equal(pfi_srv_grid_open(n, &e), PFI_OK);
    pfi_srv_grid_tick(n);
    pfi_grid_sample *gs;
    int ns;
    assert_int_equal(pfi_grid_power_range(n->grid, 0, 1e12, &gs, &ns, &e), PFI_OK);
    assert_int_equal(ns, 1);
    double bound = up + n->gpu[5].dev.limit_w;
    if (fabs(gs[0].site_w - bound) > 1e-6)
        fail_msg("power history %.17g W with GPU 5 lost; the answering GPUs draw %.17g W and "
                 "GPU 5's limit is %.17g W",
                 gs[0].site_w, up, n->gpu[5].dev.limit_w);
    free(gs);
    pfi_srv_grid_close(n);
    json_t *d;
    assert_int_equal(api(f, "GET", "/metrics", NULL, &d), 200);
    const char *m = json_string_value(d);
    assert_non_null(strstr(m, "\npfi_gpu_up{gpu=\"5\","));
    assert_null(strstr(m, "\npfi_gpu_power_watts{gpu=\"5\","));
    assert_non_null(strstr(m, "\npfi_gpu_power_watts{gpu=\"4\","));
    assert_non_null(strstr(m, "a GPU that stopped answering is left out"));
    json_decref(d);
}

static void *sample_loop(void *arg)
{
    fx *f = arg;
    while (!f->stop) {
        pfi_srv_sample(f->node.n);
        f->ticks++;
    }
    return NULL;
}

/* Item 8: the sampler must not overwrite a decision's read-back with a reading taken before
 * it.  After each answered change, while the sampler runs and nothing else changes, the state's
 * limits are the ones the GPUs hold whenever they are looked at. */
static void test_views_not_stale(void **state)
{
    fx *f = *state;
    register_three(f);
    f->stop = 0;
    assert_int_equal(pthread_create(&f->ticker, NULL, sample_loop, f), 0);
    int stale = 0;
    for (int k = 0; k < 1000; k++) {
        double w = (k % 2 ? 4000.0 : 5000.0) + (k % 11);
        pfi_err e = {0};
        json_t *res = NULL;
        assert_int_equal(pfi_srv_budget_set(f->node.n, w, 0, 0, &res, &e), PFI_OK);
        json_decref(res);
        double want[PFI_MAX_GPUS];
        pthread_mutex_lock(&f->node.n->hw_mu);
        for (int i = 0; i < f->node.n->n_gpus; i++) {
            pfi_device d;
            assert_int_equal(pfi_hw_info(f->node.b, i, &d, &e), PFI_OK);
            want[i] = d.limit_w;
        }
        pthread_mutex_unlock(&f->node.n->hw_mu);
        long long t0 = f->ticks;
        int bad = 0;
        while (f->ticks < t0 + 2 && !bad) {
            pthread_mutex_lock(&f->node.n->mu);
            for (int i = 0; i < f->node.n->n_gpus; i++)
                bad |= f->node.n->gpu[i].dev.limit_w != want[i];
            pthread_mutex_unlock(&f->node.n->mu);
        }
        stale += bad;
    }
    f->stop = 1;
    pthread_join(f->ticker, NULL);
    if (stale)
        fprintf(stderr, "%d of 1000 views showed limits older than the decision\n", stale);
    assert_int_equal(stale, 0);
}

/* A job's log that is not a regular file is not read: a FIFO (open() waited for a writer) or a
 * device such as /dev/zero (read without end) registered as "log" (POST /v1/jobs, or a Slurm
 * user's --power-log) froze the control loop in pfi_srv_follow_tick: no ramp step, grid event,
 * re-plan or watchdog after it.  The tick runs in a child that an alarm ends if it hangs (far
 * above the microseconds a tick takes); it must return. */
static void test_log_not_regular_file(void **state)
{
    fx *f = *state;
    char fifo[512], spec[700];
    snprintf(fifo, sizeof fifo, "%s/log.fifo", f->node.dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    snprintf(spec, sizeof spec, "{\"id\":\"fifo\",\"gpus\":[0],\"log\":\"%s\"}", fifo);
    add_job(f, spec);
    add_job(f, "{\"id\":\"zero\",\"gpus\":[1],\"log\":\"/dev/zero\"}");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(30);
        pfi_srv_follow_tick(f->node.n);
        pfi_srv_follow_tick(f->node.n);
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("the control loop's log tick did not return (%s %d)",
                 WIFSIGNALED(st) ? "signal" : "status",
                 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    unlink(fifo);
    /* A log that cannot be read is said, once: the job went unmeasured without a word. */
    add_job(f, "{\"id\":\"gone\",\"gpus\":[2],\"log\":\"/nonexistent/pfi/train.log\"}");
    /* A kernel file reads as regular, and is no log: /proc/kmsg, read, took the kernel's
     * messages from syslog. */
    add_job(f, "{\"id\":\"kern\",\"gpus\":[3],\"log\":\"/proc/self/status\"}");
    pfi_srv_follow_tick(f->node.n);
    pfi_srv_follow_tick(f->node.n);
    json_t *ev = pfi_srv_view_events(f->node.n, 0, 1000);
    char *t = json_dumps(ev, 0);
    const char *said = strstr(t, "job gone: cannot read its log /nonexistent/pfi/train.log: No "
                                 "such file or directory");
    assert_non_null(said);
    assert_null(strstr(said + 1, "job gone: cannot read its log"));
    assert_non_null(strstr(t, "job zero: cannot read its log /dev/zero: not a regular file"));
    assert_non_null(strstr(t, "job kern: cannot read its log /proc/self/status: not a regular "
                              "file"));
    free(t);
    json_decref(ev);
    pfi_srv_follow_free(f->node.n);
}

/* A huge log (an 8 GB sparse file, or a real multi-GB log registered late) is read a bounded
 * piece per tick: the whole backlog was read in one tick, and an 8 GB file held the control loop
 * for longer than a ramp of 2 s (a Slurm user's --power-log could name a 1 TB sparse file).
 * Checked by what one tick read, not by time. */
static void test_log_read_bounded_per_tick(void **state)
{
    fx *f = *state;
    char big[512], spec[700];
    snprintf(big, sizeof big, "%s/huge.log", f->node.dir);
    FILE *fp = fopen(big, "w");
    assert_non_null(fp);
    assert_int_equal(fclose(fp), 0);
    assert_int_equal(truncate(big, 1LL << 30), 0); /* 1 GiB, sparse */
    snprintf(spec, sizeof spec, "{\"id\":\"huge\",\"gpus\":[0],\"log\":\"%s\"}", big);
    add_job(f, spec);
    pfi_srv_follow_tick(f->node.n);
    srv_node *n = f->node.n;
    int k = 0;
    while (k < n->n_follow && strcmp(n->follow[k].id, "huge"))
        k++;
    assert_true(k < n->n_follow);
    if (n->follow[k].off > SRV_LOG_READ_MAX)
        fail_msg("one tick read %lld bytes of the log (at most %d)", n->follow[k].off,
                 SRV_LOG_READ_MAX);
    assert_true(n->follow[k].off > 0);
    assert_false(n->follow[k].live); /* still in its backlog: nothing timed yet */
    pfi_srv_follow_free(n); /* the control loop's, at its stop */
    unlink(big);
}

/* A log truncated while its last line ran past the line splitter's 4 KiB: the cut state of that
 * line was kept, so the first line of the new log was dropped as its tail. */
static void test_log_truncated_after_long_line(void **state)
{
    fx *f = *state;
    char path[512], spec[700];
    snprintf(path, sizeof path, "%s/cut.log", f->node.dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    for (int i = 0; i < 5000; i++)
        fputc('x', fp);
    assert_int_equal(fclose(fp), 0);
    snprintf(spec, sizeof spec, "{\"id\":\"cut\",\"gpus\":[0],\"log\":\"%s\"}", path);
    add_job(f, spec);
    srv_node *n = f->node.n;
    pfi_srv_follow_tick(n);
    fp = fopen(path, "w"); /* truncated, a new log begins */
    assert_non_null(fp);
    fputs("pfi: tokens=100 t=1\n", fp);
    assert_int_equal(fclose(fp), 0);
    pfi_srv_follow_tick(n);
    int k = 0;
    while (k < n->n_follow && strcmp(n->follow[k].id, "cut"))
        k++;
    assert_true(k < n->n_follow);
    long lines = 0, matched = 0;
    pfi_parser_stats(n->follow[k].p, &lines, &matched);
    assert_int_equal(matched, 1);
    pfi_srv_follow_free(n);
    unlink(path);
}

/* A GPU without an energy counter: its draw integrated over the readings; a reading without
 * the draw (NOT_READY) or none at all (lost) is a gap that adds nothing, not the trapezoid
 * across it.  A GPU with a counter reports the device's own. */
static void test_energy_gaps(void **state)
{
    (void)state;
    srv_gpu g;
    memset(&g, 0, sizeof g);
    g.energy_j = NAN;
    pfi_sample s;
    pfi_sample_clear(&s);
    s.have = PFI_F_POWER;
    double t[] = {0, 1}, p[] = {100, 100};
    for (int i = 0; i < 2; i++) {
        s.t_s = t[i];
        s.power_w = p[i];
        pfi_srv_energy_add(&g, &s);
    }
    assert_true(fabs(g.energy_j - 100) < 1e-9);
    s.have = 0; /* power NOT_READY at 2 s */
    s.t_s = 2;
    pfi_srv_energy_add(&g, &s);
    s.have = PFI_F_POWER;
    s.t_s = 5; /* back at 5 s: 2-5 s not counted */
    s.power_w = 100;
    pfi_srv_energy_add(&g, &s);
    assert_true(fabs(g.energy_j - 100) < 1e-9);
    s.t_s = 6;
    s.power_w = 200;
    pfi_srv_energy_add(&g, &s);
    assert_true(fabs(g.energy_j - 250) < 1e-9);
    pfi_srv_energy_gap(&g); /* lost from 6 s to 10 s */
    s.t_s = 10;
    pfi_srv_energy_add(&g, &s);
    s.t_s = 11;
    pfi_srv_energy_add(&g, &s);
    assert_true(fabs(g.energy_j - 450) < 1e-9);

    memset(&g, 0, sizeof g);
    g.energy_j = NAN;
    s.have = PFI_F_POWER | PFI_F_ENERGY;
    s.energy_j = 5000;
    pfi_srv_energy_add(&g, &s);
    s.have = PFI_F_POWER; /* the counter missing once: kept, not integrated */
    s.t_s = 20;
    pfi_srv_energy_add(&g, &s);
    assert_true(g.energy_j == 5000);
    s.have = PFI_F_POWER | PFI_F_ENERGY;
    s.energy_j = 5100;
    pfi_srv_energy_add(&g, &s);
    assert_true(g.energy_j == 5100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replan_keeps_new_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replan_keeps_controller_caps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ramp_then_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_budget_ramps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_controller_guard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_operator_disarms_watchdog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_epoch_bounds_and_reset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_controller, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unapplied_cut_reported, setup_not_root, teardown),
        cmocka_unit_test_setup_teardown(test_lost_gpu_not_in_node_draw, setup_lost_gpu5,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_views_not_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_not_regular_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_read_bounded_per_tick, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_truncated_after_long_line, setup, teardown),
        cmocka_unit_test(test_energy_gaps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
