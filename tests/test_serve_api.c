/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the daemon's API routes and decisions (src/serve/api.c, node.c, plan.c) on the
 * simulator backend in virtual time: what each request answers, what it changes on the GPUs,
 * and that every refused request leaves the GPUs and the state as they were. */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/pfi.h"
#include "core/predict.h"
#include "hw/backend_impl.h"
#include "report/status_page.h"
#include "serve/serve_int.h"
#include "support/sim_node.h"
#include "util/unescape.h"

#define TOKEN "test-token-0123456789abcdef"

typedef pfi_test_node fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (!f || pfi_test_node_start(f, "serve-api", NULL) != 0)
        return -1;
    snprintf(f->n->token, sizeof f->n->token, "%s", TOKEN);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    pfi_test_node_stop(f);
    free(f);
    return 0;
}

/* One request; returns the status and (if doc) the parsed JSON answer. */
static int call(fx *f, const char *method, const char *url, const char *body, int auth,
                json_t **doc)
{
    int st = 0;
    const char *ctype;
    size_t len;
    char *out = pfi_srv_api_handle(f->n, method, url, NULL, body, body ? strlen(body) : 0,
                               auth, &st, &ctype, &len);
    assert_non_null(out);
    if (doc) {
        *doc = json_loads(out, 0, NULL);
        assert_non_null(*doc);
    }
    free(out);
    return st;
}

/* A GET with query parameters since= and limit= (either may be NULL). */
static int query(fx *f, const char *url, const char *since, const char *limit, json_t **doc)
{
    int st = 0;
    const char *ctype;
    size_t len;
    pfi_http_query q = {0};
    if (since)
        pfi_http_query_note(&q, "since", since);
    if (limit)
        pfi_http_query_note(&q, "limit", limit);
    char *out = pfi_srv_api_handle(f->n, "GET", url, &q, NULL, 0, 0, &st, &ctype, &len);
    assert_non_null(out);
    *doc = json_loads(out, 0, NULL);
    assert_non_null(*doc);
    free(out);
    return st;
}

static double limit_of(fx *f, int i)
{
    pfi_device d;
    pfi_err e = {0};
    assert_int_equal(pfi_hw_info(f->b, i, &d, &e), PFI_OK);
    return d.limit_w;
}

static double sum_limits(fx *f)
{
    double s = 0;
    for (int i = 0; i < f->n->n_gpus; i++)
        s += limit_of(f, i);
    return s;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static const char *err_code(json_t *doc)
{
    return json_string_value(json_object_get(json_object_get(doc, "error"), "code"));
}

static void register_three(fx *f)
{
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"a\",\"gpus\":[0,1,2,3],\"sla\":0.05}",
                          1, NULL),
                     201);
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"b\",\"gpus\":\"4-5\",\"pfi30\":0.2}",
                          1, NULL),
                     201);
    assert_int_equal(call(f, "POST", "/v1/jobs",
                          "{\"id\":\"c\",\"gpus\":[6,7],\"pfi30\":0.9,\"weight\":2,"
                          "\"source\":\"slurm\",\"node\":\"n1\"}",
                          1, NULL),
                     201);
}

static void test_reads(void **state)
{
    fx *f = *state;
    json_t *d;
    assert_int_equal(call(f, "GET", "/healthz", NULL, 0, &d), 200);
    assert_string_equal(json_string_value(json_object_get(d, "status")), "ok");
    json_decref(d);
    pfi_srv_sample(f->n);
    assert_int_equal(call(f, "GET", "/v1/gpus", NULL, 0, &d), 200);
    json_t *g = json_object_get(d, "gpus");
    assert_int_equal(json_array_size(g), f->n->n_gpus);
    assert_true(json_real_value(json_object_get(json_array_get(g, 0), "power_w")) > 0);
    json_decref(d);
    assert_int_equal(call(f, "GET", "/v1/nothing", NULL, 0, &d), 404);
    json_decref(d);
    assert_int_equal(call(f, "PATCH", "/v1/budget", "{}", 1, &d), 405);
    json_decref(d);
}

/* 1 when method is one of the comma-separated list allow. */
static int listed(const char *allow, const char *method)
{
    size_t n = strlen(method);
    for (const char *p = allow; p && *p; p += strspn(p, ", ")) {
        size_t l = strcspn(p, ",");
        if (l == n && !strncmp(p, method, n))
            return 1;
        p += l;
    }
    return 0;
}

/* A 405 names the methods its path takes (the transport's Allow header, RFC 9110 15.5.6):
 * every method on every path, and on paths next to them, answers 405 exactly when it is not in
 * pfi_srv_api_allow's list, and 404 whatever the method where that list is NULL.  No token
 * file (authorized -1): a write that passes the route check is refused 403, nothing changes.
 * "/v1/jobsx" answered 405 without a method it took; it is a 404 like any unknown path. */
static void test_allow(void **state)
{
    fx *f = *state;
    static const char *const paths[] = {
        "/healthz", "/metrics", "/", "/v1/history", "/v1/gpus", "/v1/allocation", "/v1/events",
        "/v1/decisions", "/v1/jobs", "/v1/budget", "/v1/caps", "/v1/heartbeat", "/v1/jobs/a",
        "/v1/jobs/a/throughput", "/v1/jobs/a/x", "/v1/jobs/", "/v1/jobsx", "/v1/budgetx",
        "/nope", "/v1/grid/events", "/v1/grid/events/e1", "/v1/grid/events/e1/report",
        "/v1/grid/events//report", "/v1/grid/events/", "/v1/grid/events/e1/x",
        "/v1/grid/openadr", "/v1/grid/openadr/notify/abc", "/v1/grid/x"};
    static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH",
                                          "OPTIONS"};
    int n405 = 0;
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        const char *allow = pfi_srv_api_allow(paths[i]);
        for (size_t k = 0; k < sizeof methods / sizeof *methods; k++) {
            if (!strcmp(paths[i], "/v1/grid/openadr/notify/abc") && !strcmp(methods[k], "POST"))
                continue; /* no token asked: it is the OpenADR client's, not started here */
            int st = call(f, methods[k], paths[i], NULL, -1, NULL);
            if (allow ? (st == 405) != !listed(allow, methods[k]) : st != 404)
                fail_msg("%s %s: %d, allow '%s'", methods[k], paths[i], st,
                         allow ? allow : "(none)");
            n405 += st == 405;
        }
    }
    assert_true(n405 > 60);
    assert_string_equal(pfi_srv_api_allow("/v1/budget"), "GET, HEAD, PUT, DELETE");
    assert_string_equal(pfi_srv_api_allow("/v1/jobs/a/throughput"), "POST");
    assert_string_equal(pfi_srv_api_allow("/v1/grid/events/e1"), "GET, HEAD, DELETE");
    assert_null(pfi_srv_api_allow("/v1/jobsx"));
    assert_true(fabs(sum_limits(f) - 5600) < 1e-9);
}

/* since= and limit= are checked numbers: the largest since answers at once with no events
 * (it used to overflow since + 1 and loop without end), bad ones are 400 and change nothing. */
static void test_event_query_bounds(void **state)
{
    fx *f = *state;
    json_t *d;
    pfi_srv_sample(f->n);
    assert_int_equal(query(f, "/v1/events", "9223372036854775807", NULL, &d), 200);
    assert_int_equal(json_array_size(json_object_get(d, "events")), 0);
    json_decref(d);
    assert_int_equal(query(f, "/v1/events", "9223372036854775806", "1000", &d), 200);
    assert_int_equal(json_array_size(json_object_get(d, "events")), 0);
    json_decref(d);
    json_t *ev = pfi_srv_view_events(f->n, LLONG_MAX, 100);
    assert_int_equal(json_array_size(json_object_get(ev, "events")), 0);
    json_decref(ev);
    const char *bad_since[] = {"9223372036854775808", "-1", "12abc", "", " 5", "0x10",
                               "-9223372036854775808"};
    for (size_t i = 0; i < sizeof bad_since / sizeof *bad_since; i++) {
        assert_int_equal(query(f, "/v1/events", bad_since[i], NULL, &d), 400);
        assert_non_null(strstr(json_string_value(json_object_get(json_object_get(d, "error"), "message")), "since"));
        json_decref(d);
    }
    /* A limit or since with bytes that are not UTF-8 is echoed in the message: still a 400
     * with its reason (jansson refuses such a string; the answer was a 500 "out of memory",
     * found by fuzz_http). */
    const char *not_utf8[] = {"100PPPP\xff\xff", "\xc3", "1\x80"};
    for (size_t i = 0; i < sizeof not_utf8 / sizeof *not_utf8; i++) {
        assert_int_equal(query(f, "/v1/events", NULL, not_utf8[i], &d), 400);
        const char *m =
            json_string_value(json_object_get(json_object_get(d, "error"), "message"));
        assert_non_null(m);
        assert_non_null(strstr(m, "limit"));
        assert_non_null(strchr(m, '?'));
        json_decref(d);
        assert_int_equal(query(f, "/v1/events", not_utf8[i], NULL, &d), 400);
        json_decref(d);
    }
    /* The grid routes' errors too: an event id that is not UTF-8, echoed in "no grid event",
     * was answered 404 with the body {} (the error member lost).  No event can have such an
     * id: the report of one is a bad request (400), which says what an id is. */
    const char *grid[] = {"/v1/grid/events/a\xff/report", "/v1/grid/events/a\xc3/report"};
    for (size_t i = 0; i < sizeof grid / sizeof *grid; i++) {
        assert_int_equal(call(f, "GET", grid[i], NULL, 1, &d), 400);
        assert_non_null(err_code(d));
        assert_string_equal(err_code(d), "EINVAL");
        const char *m =
            json_string_value(json_object_get(json_object_get(d, "error"), "message"));
        assert_non_null(m);
        assert_non_null(strstr(m, "a?"));
        json_decref(d);
    }
    const char *bad_limit[] = {"0", "1001", "99999999999999999999", "5x", ""};
    for (size_t i = 0; i < sizeof bad_limit / sizeof *bad_limit; i++) {
        assert_int_equal(query(f, "/v1/events", NULL, bad_limit[i], &d), 400);
        json_decref(d);
        assert_int_equal(query(f, "/v1/decisions", NULL, bad_limit[i], &d), 400);
        assert_non_null(strstr(json_string_value(json_object_get(json_object_get(d, "error"), "message")), "limit"));
        json_decref(d);
    }
    assert_int_equal(query(f, "/v1/events", "0", "1", &d), 200);
    assert_true(json_array_size(json_object_get(d, "events")) <= 1);
    json_decref(d);
}

static void test_auth(void **state)
{
    fx *f = *state;
    json_t *d;
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"x\",\"gpus\":[0]}", 0, &d), 401);
    json_decref(d);
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"x\",\"gpus\":[0]}", -1, &d), 403);
    assert_string_equal(err_code(d), "EPERM");
    json_decref(d);
    assert_int_equal(call(f, "GET", "/v1/jobs", NULL, 0, &d), 200);
    assert_int_equal(json_array_size(json_object_get(d, "jobs")), 0);
    json_decref(d);
}

/* Every malformed or impossible request: 4xx, and nothing moved. */
static void test_bad_requests_change_nothing(void **state)
{
    fx *f = *state;
    register_three(f);
    json_t *d;
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"percent\":80}", 1, NULL), 200);
    double before[PFI_MAX_GPUS];
    for (int i = 0; i < f->n->n_gpus; i++)
        before[i] = limit_of(f, i);
    long long decisions = f->n->n_decisions;
    struct {
        const char *method, *url, *body;
        int status;
        const char *code;
    } bad[] = {
        {"POST", "/v1/jobs", "{\"id\":\"d\",\"gpus\":[0", 400, "EINVAL"},
        {"POST", "/v1/jobs", "[1,2]", 400, "EINVAL"},
        {"POST", "/v1/jobs", "", 400, "EINVAL"},
        {"POST", "/v1/jobs", "{\"id\":\"d\",\"gpus\":[9]}", 400, "EINVAL"},
        {"POST", "/v1/jobs", "{\"id\":\"d\",\"gpus\":[0]}", 409, "EBUSY"},
        {"POST", "/v1/jobs", "{\"id\":\"a\",\"gpus\":[]}", 400, "EINVAL"},
        {"POST", "/v1/jobs", "{\"id\":\"d e\",\"gpus\":[0]}", 400, "EINVAL"},
        {"POST", "/v1/jobs", "{\"id\":\"d\",\"gpus\":[0],\"colour\":1}", 400, "EINVAL"},
        {"POST", "/v1/jobs", "{\"id\":\"d\",\"gpus\":[0],\"sla\":1.5}", 400, "EINVAL"},
        {"POST", "/v1/jobs", "{\"id\":\"d\",\"gpus\":[0],\"weight\":-1}", 400, "EINVAL"},
        {"POST", "/v1/jobs", "{\"id\":\"d\",\"gpus\":[0,0]}", 400, "EINVAL"},
        {"PUT", "/v1/budget", "{\"watts\":100}", 409, "EINFEASIBLE"},
        {"PUT", "/v1/budget", "{\"watts\":-5}", 400, "EINVAL"},
        {"PUT", "/v1/budget", "{\"watts\":3000,\"percent\":50}", 400, "EINVAL"},
        {"PUT", "/v1/budget", "{\"budget\":\"lots\"}", 400, "EINVAL"},
        {"PUT", "/v1/budget", "{\"watts\":\"3000\"}", 400, "EINVAL"},
        {"PUT", "/v1/caps", "{\"caps\":[{\"gpu\":0,\"cap_w\":50}]}", 400, "ERANGE"},
        {"PUT", "/v1/caps", "{\"caps\":[{\"gpu\":12,\"cap_w\":300}]}", 400, "EINVAL"},
        {"PUT", "/v1/caps", "{\"caps\":[]}", 400, "EINVAL"},
        {"DELETE", "/v1/jobs/nosuch", NULL, 404, "ENOENT"},
        {"POST", "/v1/jobs/nosuch/throughput", "{\"tokens_per_s\":5}", 404, "ENOENT"},
        {"POST", "/v1/heartbeat", "{\"ttl_s\":-1}", 400, "EINVAL"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int st = call(f, bad[k].method, bad[k].url, bad[k].body, 1, &d);
        if (st != bad[k].status || strcmp(err_code(d), bad[k].code) != 0)
            fail_msg("%s %s %s: got %d %s, want %d %s", bad[k].method, bad[k].url,
                     bad[k].body ? bad[k].body : "", st, err_code(d), bad[k].status,
                     bad[k].code);
        json_decref(d);
    }
    /* A budget a hair under the least the node needs reads as under it: "budget 1600 W is
     * infeasible: this node needs at least 1600 W" hid why. */
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"watts\":100}", 1, &d), 409);
    double least = NAN;
    const char *msg = json_string_value(json_object_get(json_object_get(d, "error"), "message"));
    assert_non_null(msg);
    assert_non_null(strstr(msg, "needs at least "));
    assert_int_equal(sscanf(strstr(msg, "needs at least ") + 15, "%lf", &least), 1);
    json_decref(d);
    char hair[64];
    snprintf(hair, sizeof hair, "{\"watts\":%.4f}", least - 0.0004);
    assert_int_equal(call(f, "PUT", "/v1/budget", hair, 1, &d), 409);
    msg = json_string_value(json_object_get(json_object_get(d, "error"), "message"));
    char said[2][32];
    assert_int_equal(sscanf(msg, "budget %31s W is infeasible: this node needs at least %31s", said[0],
                            said[1]),
                     2);
    if (!strcmp(said[0], said[1]))
        fail_msg("the budget and the least it needs read alike: %s", msg);
    json_decref(d);
    /* A NUL byte in a body: jansson skips one after a number, so these were applied (the
     * cluster controller refused them). */
    static const struct {
        const char *method, *url, *body;
        size_t len;
    } nul[] = {
#define NUL_BODY(b) b, sizeof(b) - 1
        {"PUT", "/v1/budget", NUL_BODY("{\"watts\":4000\0}")},
        {"POST", "/v1/jobs", NUL_BODY("{\"id\":\"n\",\"gpus\":[1\0,2]}")},
        {"PUT", "/v1/caps", NUL_BODY("{\"caps\":[{\"gpu\":0,\"cap_w\":450\0}]}")},
        {"POST", "/v1/grid/events",
         NUL_BODY("{\"id\":\"g\",\"start\":\"now+1h\",\"end\":\"now+2h\",\"limit_w\":3000\0}")},
#undef NUL_BODY
    };
    for (size_t k = 0; k < sizeof nul / sizeof nul[0]; k++) {
        assert_non_null(memchr(nul[k].body, 0, nul[k].len));
        int st = 0;
        const char *ctype;
        size_t len;
        char *out = pfi_srv_api_handle(f->n, nul[k].method, nul[k].url, NULL, nul[k].body,
                                       nul[k].len, 1, &st, &ctype, &len);
        assert_non_null(out);
        if (st != 400 || !strstr(out, "NUL"))
            fail_msg("%s %s with a NUL byte: got %d %s", nul[k].method, nul[k].url, st, out);
        free(out);
    }
    assert_int_equal(f->n->n_decisions, decisions);
    for (int i = 0; i < f->n->n_gpus; i++)
        assert_true(fabs(limit_of(f, i) - before[i]) < 1e-9);
    assert_int_equal(call(f, "GET", "/v1/jobs", NULL, 0, &d), 200);
    assert_int_equal(json_array_size(json_object_get(d, "jobs")), 3);
    json_decref(d);
    /* The infeasible budget's message tells the least budget that would do. */
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"watts\":100}", 1, &d), 409);
    const char *m =
        json_string_value(json_object_get(json_object_get(d, "error"), "message"));
    assert_non_null(strstr(m, "at least"));
    json_decref(d);
}

/* A curve's fields are checked as the job's are: an unknown or misspelt one is refused, not
 * dropped (a point's "draw": 500 was dropped and the job taken to draw its whole cap), a value
 * is a number, a draw is not negative.  The curve a GET shows can be posted back. */
static void test_curve_fields_checked(void **state)
{
    fx *f = *state;
    json_t *d;
    static const char pts[] = "{\"cap_w\":500,\"tokens_per_s\":900},"
                              "{\"cap_w\":400,\"tokens_per_s\":700}]";
    char body[1024];
    const char *bad[] = {
        "{\"points\":[{\"cap_w\":700,\"tokens_per_s\":1000,\"draw\":500},%s}",
        "{\"points\":[{\"cap_w\":700,\"tokens_per_s\":1000,\"draw_w\":\"500\"},%s}",
        "{\"points\":[{\"cap_w\":700,\"tokens_per_s\":1000,\"draw_w\":-5},%s}",
        "{\"points\":[{\"cap_w\":700,\"tokens_per_s\":1000},%s,\"to\":9000}",
        "{\"points\":[{\"cap_w\":700,\"tokens_per_s\":1000},%s,\"t0\":\"9000\"}",
        "{\"fit\":{\"family\":\"power\",\"p\":[1.1,1.8],\"rmse\":0},\"p0_w\":650}%s",
        "{\"fit\":{\"family\":\"power\",\"p\":[1.1,1.8]},\"p0\":650}%s",
        /* a cap the GPUs cannot hold (it became the curve's baseline), a cap given twice */
        "{\"points\":[{\"cap_w\":900,\"tokens_per_s\":1000},%s}",
        "{\"points\":[{\"cap_w\":500,\"tokens_per_s\":1000},%s}",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char curve[512];
        snprintf(curve, sizeof curve, bad[k], strstr(bad[k], "points") ? pts : "");
        snprintf(body, sizeof body, "{\"id\":\"d\",\"gpus\":[0,1],\"curve\":%s}", curve);
        int st = call(f, "POST", "/v1/jobs", body, 1, &d);
        if (st != 400)
            fail_msg("%s: got %d, want 400", body, st);
        json_decref(d);
    }
    assert_int_equal(call(f, "GET", "/v1/jobs", NULL, 0, &d), 200);
    assert_int_equal(json_array_size(json_object_get(d, "jobs")), 0);
    json_decref(d);
    /* Good ones, and the curve in use posted back as another job's. */
    snprintf(body, sizeof body, "{\"id\":\"d\",\"gpus\":[0,1],\"curve\":{\"points\":"
                                "[{\"cap_w\":700,\"tokens_per_s\":1000,\"draw_w\":650},%s}}",
             pts);
    assert_int_equal(call(f, "POST", "/v1/jobs", body, 1, NULL), 201);
    assert_int_equal(call(f, "GET", "/v1/jobs/d", NULL, 0, &d), 200);
    json_t *again = json_pack("{s:s, s:[i,i], s:O}", "id", "e", "gpus", 2, 3, "curve",
                              json_object_get(d, "curve"));
    json_decref(d);
    char *text = json_dumps(again, JSON_COMPACT);
    json_decref(again);
    assert_int_equal(call(f, "POST", "/v1/jobs", text, 1, &d), 201);
    json_decref(d);
    free(text);
    /* A curve in rel with no baseline tokens/s, posted back from its GET, has none either (its
     * t0 was the GPU count, 2 tokens/s, then taken as the baseline). */
    assert_int_equal(call(f, "POST", "/v1/jobs",
                          "{\"id\":\"r\",\"gpus\":[6,7],\"curve\":{\"points\":["
                          "{\"cap_w\":700,\"rel\":1},{\"cap_w\":600,\"rel\":0.97},"
                          "{\"cap_w\":500,\"rel\":0.95}]}}",
                          1, NULL),
                     201);
    assert_int_equal(call(f, "GET", "/v1/jobs/r", NULL, 0, &d), 200);
    assert_true(json_is_null(json_object_get(json_object_get(d, "curve"), "t0")));
    json_decref(d);
    assert_int_equal(call(f, "POST", "/v1/jobs",
                          "{\"id\":\"g\",\"gpus\":[4],\"curve\":{\"fit\":{\"family\":"
                          "\"power\",\"p\":[1.1,1.8]},\"p0_w\":650,\"t0\":9000}}",
                          1, NULL),
                     201);
}

/* An event is one line: what it quotes (a controller's name, a log path a local user named,
 * a driver's message) cannot add lines to the daemon's log.  Before, a heartbeat from
 * "ctl\npfi serve: restored: original power limits restored on 8 GPU(s)" wrote that second
 * line into the log as if the daemon had said it. */
static void test_event_one_line(void **state)
{
    fx *f = *state;
    json_t *d;
    assert_int_equal(call(f, "POST", "/v1/heartbeat",
                          "{\"controller\":\"ctl\\npfi serve: restored: forged\\r\\u001b[2K\\t\","
                          "\"ttl_s\":30}",
                          1, &d),
                     200);
    json_decref(d);
    assert_int_equal(call(f, "GET", "/v1/events", NULL, 0, &d), 200);
    json_t *ev = json_object_get(d, "events");
    const char *armed = NULL;
    for (size_t k = 0; k < json_array_size(ev); k++) {
        const char *m = json_string_value(json_object_get(json_array_get(ev, k), "message"));
        for (const char *p = m; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                fail_msg("event %zu has control character 0x%02x: %s", k, (unsigned char)*p, m);
        if (strstr(m, "armed by"))
            armed = m;
    }
    assert_non_null(armed);
    assert_non_null(strstr(armed, "armed by ctl\\npfi serve: restored: forged\\r\\x1b[2K\\t"));
    json_decref(d);
}

/* A 30% cut: every cap applied, the SLA job held at its floor, the budget met; restored. */
static void test_budget_cut_and_restore(void **state)
{
    fx *f = *state;
    register_three(f);
    json_t *d;
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"percent\":70}", 1, &d), 200);
    json_t *ap = json_object_get(d, "applied");
    assert_int_equal(json_integer_value(json_object_get(ap, "failed")), 0);
    assert_true(json_real_value(json_object_get(ap, "sum_after_w")) <= 0.7 * 5600 + 1e-6);
    json_decref(d);
    assert_true(sum_limits(f) <= 0.7 * 5600 + 1e-6);
    /* Job b (PFI30 0.2) gives more than job c (PFI30 0.9, weight 2). */
    assert_true(limit_of(f, 4) < limit_of(f, 6));
    /* Job a's SLA (5% slowdown) on its proportional curve keeps it near the top. */
    assert_true(limit_of(f, 0) >= 0.95 * 700 - 1);
    for (int i = 1; i < 4; i++)
        assert_true(fabs(limit_of(f, i) - limit_of(f, 0)) < 1e-9);
    assert_int_equal(call(f, "GET", "/v1/allocation", NULL, 0, &d), 200);
    assert_true(fabs(json_real_value(json_object_get(d, "budget_w")) - 3920) < 1e-6);
    json_decref(d);
    assert_int_equal(call(f, "DELETE", "/v1/jobs/b", NULL, 1, &d), 200);
    json_decref(d);
    /* GPUs 4-5 are free: held at their minimum, their watts given to the others. */
    assert_true(fabs(limit_of(f, 4) - 200) < 1e-9);
    assert_true(sum_limits(f) <= 3920 + 1e-6);
    assert_int_equal(call(f, "DELETE", "/v1/budget", NULL, 1, &d), 200);
    json_decref(d);
    assert_true(fabs(sum_limits(f) - 5600) < 1e-6);
}

/* No cap below a registered curve's lowest point: read as flat below it (the curve clamps),
 * a job with a 5% SLA measured from 700 W down to 500 W was planned at 200 W, predicted at its
 * 500 W level, its SLA counted as met; and the least budget a 409 names counts it at 500 W. */
static void test_curve_floor(void **state)
{
    fx *f = *state;
    json_t *d;
    assert_int_equal(call(f, "POST", "/v1/jobs",
                          "{\"id\":\"a\",\"gpus\":[0,1,2,3],\"sla\":0.05,\"curve\":{\"points\":["
                          "{\"cap_w\":700,\"rel\":1},{\"cap_w\":600,\"rel\":0.97},"
                          "{\"cap_w\":500,\"rel\":0.95}]}}",
                          1, &d),
                     201);
    json_decref(d);
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"b\",\"gpus\":[4,5,6,7],\"pfi30\":0.1}",
                          1, &d),
                     201);
    json_decref(d);
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"watts\":3000}", 1, &d), 200);
    json_decref(d);
    for (int i = 0; i < 4; i++)
        if (!(limit_of(f, i) >= 500 - 1e-9))
            fail_msg("GPU %d of job a at %g W, below its curve's lowest point (500 W)", i,
                     limit_of(f, i));
    assert_true(sum_limits(f) <= 3000 + 1e-6);
    /* 4 x 500 W for a and 4 x 200 W for b is the least: below it, 409 naming it. */
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"watts\":2700}", 1, &d), 409);
    const char *msg = json_string_value(
        json_object_get(json_object_get(d, "error"), "message"));
    if (!msg || !strstr(msg, "2800"))
        fail_msg("409 for 2700 W: %s", msg ? msg : "(no message)");
    json_decref(d);
    /* Not a floor: a job without an SLA (or one whose SLA yields to a grid event) may go below
     * its curve's lowest point, predicted there in proportion to the cap (a floor refused a
     * 2000 W event the GPUs' minimum limits meet). */
    assert_int_equal(call(f, "DELETE", "/v1/jobs/a", NULL, 1, &d), 200);
    json_decref(d);
    assert_int_equal(call(f, "POST", "/v1/jobs",
                          "{\"id\":\"n\",\"gpus\":[0,1,2,3],\"curve\":{\"points\":["
                          "{\"cap_w\":700,\"rel\":1},{\"cap_w\":600,\"rel\":0.97},"
                          "{\"cap_w\":500,\"rel\":0.95}]}}",
                          1, &d),
                     201);
    json_decref(d);
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"watts\":1700}", 1, &d), 200);
    json_decref(d);
    assert_int_equal(call(f, "GET", "/v1/jobs/n", NULL, 0, &d), 200);
    double cap = json_number_value(json_object_get(d, "cap_w")),
           rel = json_number_value(json_object_get(d, "predicted_rel"));
    json_decref(d);
    if (!(cap < 500 && fabs(rel - 0.95 * cap / 500) < 1e-6))
        fail_msg("job n at %g W predicted %g, want below 500 W at 0.95 x cap / 500", cap, rel);
}

/* An SLA floor on a curve convex in the cap (a power law of exponent 0.2) is the curve's to the
 * watt: found on the chord between two of the plan's grid caps, a 30% SLA was planned at 683 W
 * where the curve gives 0.525, and 2566 W was taken where the least is 2598 W (4 idle GPUs at
 * 200 W, b's two at 200 W, a's two at 699 W). */
static void test_sla_floor_on_curve(void **state)
{
    fx *f = *state;
    json_t *d;
    assert_int_equal(call(f, "POST", "/v1/jobs",
                          "{\"id\":\"a\",\"gpus\":[0,1],\"sla\":0.3,\"curve\":{\"fit\":{"
                          "\"family\":\"power\",\"p\":[1.0,0.2]},\"p0_w\":700}}",
                          1, &d),
                     201);
    json_decref(d);
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"b\",\"gpus\":[2,3],\"pfi30\":0.3}",
                          1, &d),
                     201);
    json_decref(d);
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"watts\":2597}", 1, &d), 409);
    json_decref(d);
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"watts\":2598}", 1, &d), 200);
    json_decref(d);
    double cap = limit_of(f, 0), rel = 1 - pow(1 - cap / 700, 0.2);
    if (!(rel >= 0.7 - 1e-9))
        fail_msg("job a at %g W keeps %.4f of its throughput on its curve, its SLA 0.7", cap, rel);
}

/* Watts a budget leaves over raise a job no further than its curve's best: a measured curve
 * faster at 600 W than at 700 W was raised to 700 W by a larger budget, its predicted
 * throughput falling from 1.2 to 1.0. */
static void test_leftover_not_past_best(void **state)
{
    fx *f = *state;
    json_t *d;
    assert_int_equal(call(f, "POST", "/v1/jobs",
                          "{\"id\":\"p\",\"gpus\":[0,1,2,3],\"curve\":{\"points\":["
                          "{\"cap_w\":700,\"rel\":1},{\"cap_w\":600,\"rel\":1.2},"
                          "{\"cap_w\":500,\"rel\":0.5}]}}",
                          1, &d),
                     201);
    json_decref(d);
    double rel[2];
    const char *b[2] = {"{\"watts\":3400}", "{\"watts\":4000}"};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(call(f, "PUT", "/v1/budget", b[k], 1, &d), 200);
        json_decref(d);
        assert_int_equal(call(f, "GET", "/v1/jobs/p", NULL, 0, &d), 200);
        rel[k] = json_number_value(json_object_get(d, "predicted_rel"));
        json_decref(d);
    }
    if (!(rel[1] >= rel[0] - 1e-9) || fabs(limit_of(f, 0) - 600) > 1)
        fail_msg("a larger budget: predicted %g -> %g, job at %g W", rel[0], rel[1],
                 limit_of(f, 0));
}

static double baseline_of(fx *f, const char *id)
{
    char url[64];
    json_t *d;
    snprintf(url, sizeof url, "/v1/jobs/%s", id);
    assert_int_equal(call(f, "GET", url, NULL, 0, &d), 200);
    double t = json_number_value(json_object_get(d, "baseline_tokens_per_s"));
    json_decref(d);
    return t;
}

/* A job's baseline tokens/s is the mean of its reports made uncapped, not the last one (one
 * noisy sample became the baseline a probe and every slowdown were read against), and a
 * registered tokens_per_s is not replaced by reports. */
static void test_baseline_averaged(void **state)
{
    fx *f = *state;
    json_t *d;
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"r\",\"gpus\":[0,1],\"tokens_per_s\":1000}",
                          1, &d),
                     201);
    json_decref(d);
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"u\",\"gpus\":[2,3]}", 1, &d), 201);
    json_decref(d);
    const double rep[] = {1300, 700, 1000.5, 999.5};
    for (int k = 0; k < 4; k++) {
        char body[64];
        snprintf(body, sizeof body, "{\"tokens_per_s\":%g}", rep[k]);
        assert_int_equal(call(f, "POST", "/v1/jobs/r/throughput", body, 1, NULL), 200);
        assert_int_equal(call(f, "POST", "/v1/jobs/u/throughput", body, 1, NULL), 200);
    }
    assert_true(baseline_of(f, "r") == 1000);
    if (fabs(baseline_of(f, "u") - 1000) > 1e-9)
        fail_msg("baseline of u %g, the mean of its reports 1000", baseline_of(f, "u"));
}

static void test_metrics_text(void **state)
{
    fx *f = *state;
    register_three(f);
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"watts\":4200}", 1, NULL), 200);
    assert_int_equal(call(f, "POST", "/v1/jobs/c/throughput", "{\"tokens_per_s\":1234.5}", 1,
                          NULL),
                     200);
    pfi_srv_sample(f->n);
    /* The audit log through the API: the latest decision carries what job c then reported. */
    json_t *d;
    assert_int_equal(call(f, "GET", "/v1/decisions", NULL, 0, &d), 200);
    json_t *dec = json_array_get(json_object_get(d, "decisions"), 0);
    assert_true(fabs(json_real_value(json_object_get(dec, "budget_w")) - 4200) < 1e-6);
    json_t *jobs = json_object_get(dec, "jobs");
    assert_int_equal(json_array_size(jobs), 3);
    json_t *jc = json_array_get(jobs, 2);
    assert_string_equal(json_string_value(json_object_get(jc, "job")), "c");
    assert_true(fabs(json_real_value(json_object_get(jc, "observed_tps")) - 1234.5) < 1e-9);
    assert_true(json_real_value(json_object_get(jc, "cap_w")) > 0);
    json_decref(d);
    int st;
    const char *ctype;
    size_t len;
    char *t = pfi_srv_api_handle(f->n, "GET", "/metrics", NULL, NULL, 0, 0, &st, &ctype, &len);
    assert_int_equal(st, 200);
    assert_non_null(strstr(ctype, "text/plain"));
    assert_non_null(strstr(t, "pfi_node_budget_watts 4200\n"));
    /* Labels as NVIDIA's DCGM-exporter spells them; a job's is job_id, never Prometheus' job. */
    char host[128] = "", want[300];
    gethostname(host, sizeof host);
    snprintf(want, sizeof want, "pfi_job_tokens_per_second{job_id=\"c\",Hostname=\"%s\"} 1234.5\n",
             host);
    assert_non_null(strstr(t, want));
    /* and when it was reported, so a hung job's last rate is seen to be old */
    snprintf(want, sizeof want,
             "pfi_job_tokens_per_second_timestamp_seconds{job_id=\"c\",Hostname=\"%s\"} ", host);
    const char *at = strstr(t, want);
    assert_non_null(at);
    double when = strtod(at + strlen(want), NULL);
    assert_true(fabs(when - pfi_clock_wall()) < 60);
    assert_null(strstr(t, "{job="));
    assert_non_null(strstr(t, "pfi_gpu_power_limit_watts{gpu=\"0\",UUID=\"GPU-"));
    assert_non_null(strstr(t, "pfi_job_predicted_pfi30{job_id=\"b\""));
    /* Energy as a counter in joules and the temperature, as the simulated GPU reports them. */
    assert_non_null(strstr(t, "# TYPE pfi_gpu_energy_joules_total counter\n"));
    assert_non_null(strstr(t, "\npfi_gpu_energy_joules_total{gpu=\"7\",UUID=\"GPU-"));
    assert_non_null(strstr(t, "\npfi_gpu_temperature_celsius{gpu=\"0\",UUID=\"GPU-"));

    assert_non_null(strstr(t, "# TYPE pfi_cap_changes_total counter\n"));
    assert_non_null(strstr(t, "\npfi_heartbeats_total 0\n"));
    /* Every sample line is NAME{labels} VALUE or NAME VALUE with a number. */
    char *save, *line;
    int samples = 0;
    for (line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#')
            continue;
        char *sp = strrchr(line, ' ');
        assert_non_null(sp);
        char *end;
        strtod(sp + 1, &end);
        assert_true(*end == '\0');
        samples++;
    }
    assert_true(samples > 8 * 8);
    free(t);
}

/* GET / is the status page, as text/html, without a token; GET /v1/history holds what the
 * sampler saw (one sample a second at most), filtered by since, and refuses a bad since. */
static void test_status_page(void **state)
{
    fx *f = *state;
    int st;
    const char *ctype;
    size_t len, plen;
    char *t = pfi_srv_api_handle(f->n, "GET", "/", NULL, NULL, 0, 0, &st, &ctype, &len);
    assert_int_equal(st, 200);
    assert_non_null(strstr(ctype, "text/html"));
    const char *page = pfi_status_page(&plen);
    assert_int_equal(len, plen);
    assert_memory_equal(t, page, len);
    assert_non_null(strstr(t, "</html>"));
    free(t);
    assert_int_equal(call(f, "PUT", "/", "{}", 1, NULL), 405);

    json_t *d;
    assert_int_equal(query(f, "/v1/history", NULL, NULL, &d), 200);
    assert_int_equal(json_array_size(json_object_get(d, "t")), 0);
    json_decref(d);
    pfi_srv_sample(f->n);
    pfi_srv_sample(f->n); /* within the second: not kept */
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"watts\":4200}", 1, NULL), 200);
    assert_int_equal(query(f, "/v1/history", NULL, NULL, &d), 200);
    json_t *ts = json_object_get(d, "t");
    assert_int_equal(json_array_size(ts), 1);
    assert_true(json_is_null(json_array_get(json_object_get(d, "budget_w"), 0)));
    assert_true(fabs(json_real_value(json_array_get(json_object_get(d, "limits_w"), 0)) - 5600) <
                1e-9);
    assert_true(json_real_value(json_array_get(json_object_get(d, "draw_w"), 0)) > 0);
    double t0 = json_real_value(json_array_get(ts, 0));
    assert_true(json_real_value(json_object_get(d, "now")) >= t0);
    json_decref(d);
    char since[32];
    snprintf(since, sizeof since, "%lld", (long long)t0 + 1);
    assert_int_equal(query(f, "/v1/history", since, NULL, &d), 200);
    assert_int_equal(json_array_size(json_object_get(d, "t")), 0);
    json_decref(d);
    assert_int_equal(query(f, "/v1/history", "-1", NULL, &d), 400);
    json_decref(d);
    assert_int_equal(query(f, "/v1/history", "soon", NULL, &d), 400);
    json_decref(d);
}

static void test_cluster_caps_and_watchdog(void **state)
{
    fx *f = *state;
    register_three(f);
    json_t *d;
    assert_int_equal(call(f, "PUT", "/v1/caps",
                          "{\"epoch\":3,\"caps\":[{\"gpu\":0,\"cap_w\":450},{\"gpu\":7,"
                          "\"cap_w\":300}]}",
                          1, &d),
                     200);
    assert_string_equal(json_string_value(json_object_get(d, "mode")), "external");
    json_decref(d);
    assert_true(fabs(limit_of(f, 0) - 450) < 1e-9);
    assert_true(fabs(limit_of(f, 7) - 300) < 1e-9);
    assert_true(fabs(limit_of(f, 3) - 700) < 1e-9);
    assert_int_equal(call(f, "PUT", "/v1/caps", "{\"epoch\":2,\"caps\":[{\"gpu\":0,\"cap_w\":600}]}",
                          1, &d),
                     409);
    json_decref(d);
    assert_true(fabs(limit_of(f, 0) - 450) < 1e-9);

    /* A heartbeat arms the watchdog; silence past its ttl brings the safe budget ("min"). */
    assert_int_equal(call(f, "POST", "/v1/heartbeat", "{\"controller\":\"ctl-1\",\"ttl_s\":0.05}",
                          1, &d),
                     200);
    assert_true(json_is_true(json_object_get(d, "armed")));
    json_decref(d);
    assert_int_equal(f->n->n_heartbeats, 1);
    pfi_srv_tick(f->n);
    assert_int_equal(f->n->mode, SRV_MODE_EXTERNAL);
    struct timespec ts = {0, 120 * 1000 * 1000};
    nanosleep(&ts, NULL);
    pfi_srv_tick(f->n);
    assert_int_equal(f->n->mode, SRV_MODE_SAFE);
    assert_true(fabs(sum_limits(f) - 8 * 200) < 1e-6);
    assert_int_equal(f->n->n_watchdog_trips, 1);
    /* The safe state set the SLAs aside for its decision, not for good (job a's was gone). */
    int ja = pfi_srv_find_job(f->n->jobs, f->n->n_jobs, "a");
    assert_true(ja >= 0 && fabs(f->n->jobs[ja].sla - 0.05) < 1e-12);
    assert_int_equal(call(f, "GET", "/v1/events", NULL, 0, &d), 200);
    json_t *ev = json_object_get(d, "events");
    int tripped = 0;
    for (size_t k = 0; k < json_array_size(ev); k++)
        tripped |= strstr(json_string_value(json_object_get(json_array_get(ev, k), "message")),
                          "no heartbeat from ctl-1") != NULL;
    assert_true(tripped);
    json_decref(d);
}

/* A safe budget above the caps a controller left never raises the node: cut off, the
 * controller counts it at those caps and spends the rest of the site's budget elsewhere (a
 * safe_budget of 60% took a node held at 1600 W to 3360 W, the site 1760 W over).  It applies
 * the limits' sum then, and says why. */
static void test_watchdog_never_raises(void **state)
{
    fx *f = *state;
    register_three(f);
    snprintf(f->cfg.safe_budget, sizeof f->cfg.safe_budget, "90%%");
    json_t *d;
    char caps[512];
    int at = snprintf(caps, sizeof caps, "{\"epoch\":7,\"caps\":[");
    for (int g = 0; g < 8; g++)
        at += snprintf(caps + at, sizeof caps - (size_t)at, "%s{\"gpu\":%d,\"cap_w\":%d}",
                       g ? "," : "", g, g < 4 ? 300 : 250);
    snprintf(caps + at, sizeof caps - (size_t)at, "]}");
    assert_int_equal(call(f, "PUT", "/v1/caps", caps, 1, &d), 200);
    json_decref(d);
    assert_true(fabs(sum_limits(f) - 2200) < 1e-6);
    assert_int_equal(call(f, "POST", "/v1/heartbeat", "{\"controller\":\"ctl-2\",\"ttl_s\":0.05}",
                          1, &d),
                     200);
    json_decref(d);
    pfi_srv_tick(f->n);
    struct timespec ts = {0, 120 * 1000 * 1000};
    nanosleep(&ts, NULL);
    pfi_srv_tick(f->n);
    assert_int_equal(f->n->mode, SRV_MODE_SAFE);
    assert_int_equal(f->n->n_watchdog_trips, 1);
    assert_true(sum_limits(f) <= 2200 + 1e-6); /* 90% of 5600 W would be 5040 W */
    assert_true(sum_limits(f) >= 2200 - 8);
    assert_int_equal(call(f, "GET", "/v1/events", NULL, 0, &d), 200);
    json_t *ev = json_object_get(d, "events");
    int said = 0;
    for (size_t k = 0; k < json_array_size(ev); k++)
        said |= strstr(json_string_value(json_object_get(json_array_get(ev, k), "message")),
                       "never raises a node") != NULL;
    assert_true(said);
    json_decref(d);
}

/* Whether an event of this kind was logged. */
static int event_said(fx *f, const char *kind)
{
    json_t *d;
    assert_int_equal(call(f, "GET", "/v1/events", NULL, 0, &d), 200);
    json_t *ev = json_object_get(d, "events");
    int said = 0;
    for (size_t k = 0; k < json_array_size(ev); k++)
        said |= !strcmp(json_string_value(json_object_get(json_array_get(ev, k), "kind")), kind);
    json_decref(d);
    return said;
}

/* A limit raised behind the daemon's back (a GPU reset puts the default back) is lowered again
 * at the next tick after the sample that sees it, under a controller's caps as under a budget
 * of its own.  Before, the node stayed 200 W over under a controller for good (it re-sends
 * caps only after a restart), and up to a re-plan interval (30 s) under its own budget. */
static void test_outside_raise_lowered(void **state)
{
    fx *f = *state;
    json_t *d;
    assert_int_equal(call(f, "PUT", "/v1/caps",
                          "{\"epoch\":3,\"caps\":[{\"gpu\":3,\"cap_w\":500}]}", 1, &d),
                     200);
    json_decref(d);
    assert_true(fabs(limit_of(f, 3) - 500) < 1e-9);
    pfi_err e = {0};
    double enf;
    assert_int_equal(pfi_hw_set_limit(f->b, 3, 700, &enf, &e), PFI_OK); /* the reset */
    pfi_srv_sample(f->n);
    pfi_srv_tick(f->n);
    assert_true(fabs(limit_of(f, 3) - 500) < 1e-9);
    assert_int_equal(f->n->mode, SRV_MODE_EXTERNAL);
    assert_int_equal(f->n->n_outside_raised, 1);
    assert_true(event_said(f, "limit_raised"));

    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"budget\":\"4000W\"}", 1, &d), 200);
    json_decref(d);
    double held = limit_of(f, 0);
    assert_true(sum_limits(f) <= 4000 + 1e-6);
    assert_int_equal(pfi_hw_set_limit(f->b, 0, 700, &enf, &e), PFI_OK);
    f->n->outside_fix_mono = -1e9; /* the retry pause is for a lowering that failed */
    pfi_srv_sample(f->n);
    pfi_srv_tick(f->n);
    assert_true(fabs(limit_of(f, 0) - held) < 1e-6);
    assert_true(sum_limits(f) <= 4000 + 1e-6);
    assert_int_equal(f->n->n_outside_raised, 2);
    /* A limit lowered outside pfi is no breach of the budget: left to the re-plan. */
    assert_int_equal(pfi_hw_set_limit(f->b, 1, 300, &enf, &e), PFI_OK);
    f->n->outside_fix_mono = -1e9;
    pfi_srv_sample(f->n);
    pfi_srv_tick(f->n);
    assert_int_equal(f->n->n_outside_raised, 2);
}

/* A cap within the half watt the range check allows past a GPU's range is taken as the range's
 * end: the GPU cannot go below its minimum, so the budget in force is the sum of what the GPUs
 * hold.  Before, 199.6 W on a 200 W minimum set the GPU at 200 W but kept 199.6 W in the
 * budget: 500 EOVERBUDGET "GPU(s) (none) could not be set", and the node degraded. */
static void test_caps_at_range_edges(void **state)
{
    fx *f = *state;
    json_t *d;
    assert_int_equal(call(f, "PUT", "/v1/caps", "{\"epoch\":1,\"caps\":[{\"gpu\":0,\"cap_w\":199.6}]}",
                          1, &d),
                     200);
    assert_true(fabs(json_number_value(json_object_get(d, "budget_w")) - (200 + 7 * 700)) < 1e-9);
    json_decref(d);
    assert_true(fabs(limit_of(f, 0) - 200) < 1e-9);
    assert_int_equal(call(f, "GET", "/healthz", NULL, 0, &d), 200);
    assert_string_equal(json_string_value(json_object_get(d, "status")), "ok");
    assert_true(json_number_value(json_object_get(d, "over_budget_w")) == 0);
    json_decref(d);
    /* Half a watt above the maximum is the maximum: not a raise held back. */
    assert_int_equal(call(f, "PUT", "/v1/caps", "{\"epoch\":2,\"caps\":[{\"gpu\":1,\"cap_w\":700.4}]}",
                          1, &d),
                     200);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "applied"), "held")), 0);
    assert_true(fabs(json_number_value(json_object_get(d, "budget_w")) - (200 + 7 * 700)) < 1e-9);
    json_decref(d);
    /* Beyond the half watt it is refused, and nothing changes. */
    assert_int_equal(call(f, "PUT", "/v1/caps", "{\"epoch\":3,\"caps\":[{\"gpu\":2,\"cap_w\":199.4}]}",
                          1, &d),
                     400);
    json_decref(d);
    assert_true(fabs(limit_of(f, 2) - 700) < 1e-9);
}

/* A backend over the simulator whose GPU 5 refuses every new limit (fell off the bus). */
static pfi_backend *inner;
static int w_open(pfi_backend *b, const char *a, pfi_err *e)
{
    return PFI_OK;
}
static void w_close(pfi_backend *b)
{
}
static int w_count(pfi_backend *b, int *n, pfi_err *e)
{
    return pfi_hw_count(inner, n, e);
}
static int w_info(pfi_backend *b, int i, pfi_device *d, pfi_err *e)
{
    return pfi_hw_info(inner, i, d, e);
}
static int w_sample(pfi_backend *b, int i, pfi_sample *s, pfi_err *e)
{
    return pfi_hw_sample(inner, i, s, e);
}
static int w_set(pfi_backend *b, int i, double w, pfi_err *e)
{
    if (i == 5)
        return pfi_err_set(e, PFI_ELOST, "GPU 5 has fallen off the bus");
    return pfi_hw_set_limit(inner, i, w, NULL, e);
}
static const pfi_backend_ops lossy_ops = {.name = "lossy", .open = w_open, .close = w_close,
                                          .device_count = w_count, .device_info = w_info,
                                          .sample = w_sample, .set_limit = w_set};

/* The same, but GPU 5 no longer answers a reading (fell off the bus after it was read once). */
static int m_sample(pfi_backend *b, int i, pfi_sample *s, pfi_err *e)
{
    if (i == 5)
        return pfi_err_set(e, PFI_ELOST, "GPU 5 has fallen off the bus");
    return pfi_hw_sample(inner, i, s, e);
}
static const pfi_backend_ops mute_ops = {.name = "mute", .open = w_open, .close = w_close,
                                         .device_count = w_count, .device_info = w_info,
                                         .sample = m_sample, .set_limit = w_set};

/* One good sample, then one through mute_ops, in which GPU 5 no longer answers. */
static void sample_then_silence(fx *f)
{
    pfi_srv_sample(f->n);
    inner = f->b;
    pfi_backend mute = {.ops = &mute_ops, .impl = NULL, .read_only = 0};
    f->n->b = &mute;
    pfi_srv_sample(f->n);
    f->n->b = f->b;
}

/* A GPU that stopped answering has no draw, temperature or clock to show: its last reading
 * stayed in /metrics as if current (a lost GPU "drawing" 514 W at 62 C for good), where the
 * docs say a value the GPU did not give is left out.  Its limit stays (the budget counts it at
 * its last reading), and so does its energy counter (a counter does not go away). */
static void test_metrics_of_silent_gpu(void **state)
{
    fx *f = *state;
    sample_then_silence(f);
    int st;
    const char *ctype;
    size_t len;
    char *t = pfi_srv_api_handle(f->n, "GET", "/metrics", NULL, NULL, 0, 0, &st, &ctype, &len);
    assert_int_equal(st, 200);
    assert_non_null(strstr(t, "\npfi_gpu_up{gpu=\"5\","));
    assert_non_null(strstr(t, "\npfi_gpu_power_watts{gpu=\"4\","));
    const char *gone[] = {"pfi_gpu_power_watts", "pfi_gpu_temperature_celsius",
                          "pfi_gpu_sm_clock_hertz", "pfi_gpu_power_capped",
                          "pfi_gpu_clock_event_reasons"};
    char want[96];
    for (size_t k = 0; k < sizeof gone / sizeof gone[0]; k++) {
        snprintf(want, sizeof want, "\n%s{gpu=\"5\",", gone[k]);
        if (strstr(t, want))
            fail_msg("%s of the silent GPU 5 is still shown", gone[k]);
    }
    const char *kept[] = {"pfi_gpu_power_limit_watts", "pfi_gpu_energy_joules_total",
                          "pfi_gpu_max_power_limit_watts"};
    for (size_t k = 0; k < sizeof kept / sizeof kept[0]; k++) {
        snprintf(want, sizeof want, "\n%s{gpu=\"5\",", kept[k]);
        assert_non_null(strstr(t, want));
    }
    free(t);
}

/* /v1/gpus shows a GPU that stopped answering without its last reading, as /metrics does: its
 * power_w, temperature and clocks stayed at the last good sample, so the status page's GPU table
 * showed a lost GPU "drawing", and the site controller, which sums power_w, counted it in
 * pfi_cluster_node_power_watts and the site's draw. */
static void test_silent_gpu_reading_not_shown(void **state)
{
    fx *f = *state;
    sample_then_silence(f);
    json_t *doc;
    assert_int_equal(call(f, "GET", "/v1/gpus", NULL, 0, &doc), 200);
    json_t *g5 = json_array_get(json_object_get(doc, "gpus"), 5);
    assert_false(json_is_true(json_object_get(g5, "up")));
    const char *gone[] = {"power_w", "temp_c", "sm_clock_mhz", "clock_reasons", "power_capped",
                          "gpu_util"};
    for (size_t k = 0; k < sizeof gone / sizeof gone[0]; k++)
        if (!json_is_null(json_object_get(g5, gone[k])))
            fail_msg("/v1/gpus shows the silent GPU 5's last %s", gone[k]);
    assert_true(json_is_number(json_object_get(g5, "limit_w")));
    assert_true(json_is_number(json_object_get(
        json_array_get(json_object_get(doc, "gpus"), 4), "power_w")));
    json_decref(doc);
}

/* A GPU that cannot be lowered: the others are re-planned to make room, the budget holds. */
static void test_lost_gpu_replanned(void **state)
{
    fx *f = *state;
    register_three(f);
    inner = f->b;
    pfi_backend lossy = {.ops = &lossy_ops, .impl = NULL, .read_only = 0};
    f->n->b = &lossy;
    json_t *d;
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"percent\":75}", 1, &d), 200);
    json_t *ap = json_object_get(d, "applied");
    assert_int_equal(json_integer_value(json_object_get(ap, "failed")), 1);
    json_t *g5 = json_array_get(json_object_get(d, "gpus"), 5);
    assert_non_null(strstr(json_string_value(json_object_get(g5, "error")), "fallen off"));
    json_decref(d);
    f->n->b = f->b;
    assert_true(fabs(limit_of(f, 5) - 700) < 1e-9);
    assert_true(sum_limits(f) <= 0.75 * 5600 + 1e-6);
    /* GPU 4 (same job as 5) went down to make room; job a kept its SLA floor. */
    assert_true(limit_of(f, 4) < 700);
    assert_int_equal(call(f, "GET", "/v1/events", NULL, 0, &d), 200);
    json_t *ev = json_object_get(d, "events");
    int replanned = 0;
    for (size_t k = 0; k < json_array_size(ev); k++)
        replanned |= !strcmp(json_string_value(json_object_get(json_array_get(ev, k), "kind")),
                             "replanned");
    assert_true(replanned);
    json_decref(d);
}


/* The value of a job's series in /metrics; NAN when absent. */
static double metric_of(fx *f, const char *name, const char *job)
{
    int st;
    const char *ctype;
    size_t len;
    char *t = pfi_srv_api_handle(f->n, "GET", "/metrics", NULL, NULL, 0, 0, &st, &ctype, &len);
    assert_int_equal(st, 200);
    char want[200];
    snprintf(want, sizeof want, "\n%s{job_id=\"%s\",", name, job);
    const char *at = strstr(t, want);
    double v = NAN;
    if (at) {
        const char *sp = strchr(at + 1, ' ');
        assert_non_null(sp);
        v = strtod(sp + 1, NULL);
    }
    free(t);
    return v;
}

/* Job p on GPUs 0 and 1, allowing a probe 30% deep held for 0.3 s. */
static void post_probe_job(fx *f)
{
    assert_int_equal(call(f, "POST", "/v1/jobs",
                          "{\"id\":\"p\",\"gpus\":[0,1],\"probe\":{\"depth\":0.3,"
                          "\"duration_s\":0.3}}",
                          1, NULL),
                     201);
}

/* Job p's baseline (samples at the default limit, 1000 tokens/s reported), then a tick that
 * arms its probe. */
static void probe_start(fx *f)
{
    for (int k = 0; k < SRV_MIN_BASELINE + 2; k++)
        pfi_srv_sample(f->n);
    assert_int_equal(call(f, "POST", "/v1/jobs/p/throughput", "{\"tokens_per_s\":1000}", 1, NULL),
                     200);
    pfi_srv_tick(f->n);
}

/* Job p's running probe to its end: the firmware settles at the probe's cap, p reports tps
 * tokens/s past the probe's first third, and the tick after its duration finishes it. */
static void probe_finish_at(fx *f, double tps)
{
    pfi_hw_sleep(f->b, 10.0); /* virtual time */
    sleep_s(0.12);
    for (int k = 0; k < 5; k++)
        pfi_srv_sample(f->n);
    char body[64];
    snprintf(body, sizeof body, "{\"tokens_per_s\":%g}", tps);
    assert_int_equal(call(f, "POST", "/v1/jobs/p/throughput", body, 1, NULL), 200);
    sleep_s(0.25);
    pfi_srv_tick(f->n);
}

static void probe_finish(fx *f)
{
    probe_finish_at(f, 850);
}

/* A job that allows a probe: once its baseline is known it is held lower for a bounded time,
 * and what it reports there becomes its curve; then its cap comes back. */
static void test_probe_refines_curve(void **state)
{
    fx *f = *state;
    json_t *d;
    post_probe_job(f);
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"q\",\"gpus\":[2],\"probe\":7}", 1,
                          &d),
                     400);
    json_decref(d);
    pfi_srv_tick(f->n); /* no baseline yet: nothing starts */
    assert_true(fabs(limit_of(f, 0) - 700) < 1e-9);
    probe_start(f);
    double p0 = f->n->jobs[0].base.power_w;
    assert_int_equal(f->n->jobs[0].probe.state, SRV_PROBE_RUNNING);
    assert_true(fabs(limit_of(f, 0) - 0.7 * p0) < 1.0);
    assert_true(fabs(limit_of(f, 1) - limit_of(f, 0)) < 1e-9);
    assert_true(fabs(limit_of(f, 2) - 700) < 1e-9); /* only the probed job moves */
    /* While it runs, nothing is counted yet. */
    assert_true(metric_of(f, "pfi_probe_gpu_seconds_total", "p") == 0);
    assert_true(metric_of(f, "pfi_probe_tokens_lost_total", "p") == 0);
    probe_finish(f);
    assert_int_equal(call(f, "GET", "/v1/jobs/p", NULL, 0, &d), 200);
    json_t *pr = json_object_get(d, "probe");
    assert_string_equal(json_string_value(json_object_get(pr, "state")), "done");
    assert_string_equal(json_string_value(json_object_get(d, "curve_source")), "probed");
    double r = json_real_value(json_object_get(pr, "r"));
    double s = json_real_value(json_object_get(pr, "s"));
    assert_true(r > 0.2 && r < 0.4);
    assert_true(fabs(s - 0.15) < 1e-9);
    /* s = a r^2 through the probe: PFI30 = s(0.3)/0.3 */
    double want = s / (r * r) * 0.09 / 0.3;
    assert_true(fabs(json_real_value(json_object_get(d, "pfi30")) - want) < 1e-6);
    /* What it cost: held at least its 0.3 s on 2 GPUs, 1000 - 850 tokens/s lost meanwhile. */
    double held = json_real_value(json_object_get(pr, "held_s"));
    assert_true(held >= 0.3);
    assert_true(fabs(json_real_value(json_object_get(pr, "gpu_s")) - 2 * held) < 1e-9);
    assert_true(fabs(json_real_value(json_object_get(pr, "lost")) - 150 * held) < 1e-6);
    /* The same figures as the job's /metrics counters. */
    assert_true(fabs(metric_of(f, "pfi_probe_gpu_seconds_total", "p") - 2 * held) < 1e-9);
    assert_true(fabs(metric_of(f, "pfi_probe_tokens_lost_total", "p") - 150 * held) < 1e-6);
    json_decref(d);
    assert_true(fabs(limit_of(f, 0) - 700) < 1e-9);
}

/* A reading no cap makes is refused, the curve left as it was: 30% faster under the cap (it
 * was read as no loss, a curve flat to the GPUs' minimum, and the job was put there), a stall
 * (0 tokens/s: any cap read as stopping the job, which was then protected), a loss far over the
 * power shed.  A little faster, within noise, is read as no loss. */
static void test_probe_implausible(void **state)
{
    fx *f = *state;
    const struct {
        double tps;
        const char *state;
    } c[] = {{1300, "failed"}, {0, "failed"}, {100, "failed"}, {1020, "done"}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        json_t *d;
        if (i > 0)
            assert_int_equal(call(f, "DELETE", "/v1/jobs/p", NULL, 1, NULL), 200);
        post_probe_job(f);
        probe_start(f);
        assert_int_equal(f->n->jobs[0].probe.state, SRV_PROBE_RUNNING);
        int src = f->n->jobs[0].curve_src;
        probe_finish_at(f, c[i].tps);
        assert_int_equal(call(f, "GET", "/v1/jobs/p", NULL, 0, &d), 200);
        json_t *pr = json_object_get(d, "probe");
        const char *st = json_string_value(json_object_get(pr, "state"));
        const char *msg = json_string_value(json_object_get(pr, "message"));
        if (!st || strcmp(st, c[i].state))
            fail_msg("%g tokens/s at the probe (1000 before): %s, %s", c[i].tps, st ? st : "-",
                     msg ? msg : "-");
        if (!strcmp(c[i].state, "failed")) {
            assert_int_equal(f->n->jobs[0].curve_src, src);
            if (!msg || !strstr(msg, "is not what a cap does"))
                fail_msg("%g tokens/s: %s", c[i].tps, msg ? msg : "-");
        } else {
            assert_string_equal(json_string_value(json_object_get(d, "curve_source")), "probed");
        }
        json_decref(d);
    }
}

/* A probe during which the job reports no rate learns nothing, but its GPU time was spent all
 * the same: counted, with the tokens lost unknown (null, and no series in /metrics). */
static void test_probe_failed_still_costs(void **state)
{
    fx *f = *state;
    json_t *d;
    post_probe_job(f);
    probe_start(f);
    assert_int_equal(f->n->jobs[0].probe.state, SRV_PROBE_RUNNING);
    pfi_hw_sleep(f->b, 10.0);
    for (int k = 0; k < 5; k++)
        pfi_srv_sample(f->n);
    sleep_s(0.35);
    pfi_srv_tick(f->n);
    assert_int_equal(call(f, "GET", "/v1/jobs/p", NULL, 0, &d), 200);
    json_t *pr = json_object_get(d, "probe");
    assert_string_equal(json_string_value(json_object_get(pr, "state")), "failed");
    double held = json_real_value(json_object_get(pr, "held_s"));
    assert_true(held >= 0.3);
    assert_true(fabs(json_real_value(json_object_get(pr, "gpu_s")) - 2 * held) < 1e-9);
    assert_true(json_is_null(json_object_get(pr, "lost")));
    json_decref(d);
    assert_true(fabs(metric_of(f, "pfi_probe_gpu_seconds_total", "p") - 2 * held) < 1e-9);
    assert_true(isnan(metric_of(f, "pfi_probe_tokens_lost_total", "p")));
}

/* With a probe library, the probe is read through the shape of the library's curves: the
 * job's curve passes through what the probe measured and follows the references' slope. */
static void test_probe_through_library(void **state)
{
    fx *f = *state;
    enum { NL = 6 };
    srv_library *lib = &f->n->lib;
    lib->curve = calloc(NL, sizeof *lib->curve);
    lib->gpu = calloc(NL, sizeof *lib->gpu);
    assert_non_null(lib->curve);
    assert_non_null(lib->gpu);
    /* references on the same GPU: throughput falls 0.1%-0.2% per watt below 600 W */
    for (int i = 0; i < NL; i++) {
        pfi_curve *c = &lib->curve[i];
        c->t0 = 1000;
        c->p0_w = 600;
        c->cap0_w = c->max_cap_w = 700;
        c->min_cap_w = 200;
        c->n_gpus = 2;
        c->n = 11;
        double slope = 0.001 + 0.0002 * i;
        for (int k = 0; k < c->n; k++) {
            c->cap_w[k] = 200 + 50 * k;
            c->draw_w[k] = fmin(c->cap_w[k], c->p0_w);
            c->rel[k] = c->rel_mono[k] = 1 - slope * fmax(0, 600 - c->cap_w[k]);
        }
        snprintf(lib->gpu[i], sizeof lib->gpu[i], "H200-SXM");
    }
    lib->n = NL;
    json_t *d;
    post_probe_job(f);
    probe_start(f);
    assert_int_equal(f->n->jobs[0].probe.state, SRV_PROBE_RUNNING);
    double cap = f->n->jobs[0].probe.cap_w;
    probe_finish(f);
    assert_int_equal(call(f, "GET", "/v1/jobs/p", NULL, 0, &d), 200);
    json_t *pr = json_object_get(d, "probe");
    assert_string_equal(json_string_value(json_object_get(pr, "state")), "done");
    assert_non_null(strstr(json_string_value(json_object_get(pr, "message")),
                           "shape of the nearest library curves"));
    assert_string_equal(json_string_value(json_object_get(d, "curve_source")), "probed");
    const pfi_curve *c = &f->n->jobs[0].curve;
    /* through the probe, flat-topped, falling below it with the references' slope */
    assert_true(fabs(pfi_curve_rel_at_cap(c, PFI_VIEW_MONOTONE, cap) - 0.85) < 0.01);
    assert_true(pfi_curve_rel_at_cap(c, PFI_VIEW_MONOTONE, cap - 50) < 0.85);
    assert_true(pfi_curve_rel_at_cap(c, PFI_VIEW_MONOTONE, 700) > 0.99);
    double pfi30 = json_real_value(json_object_get(d, "pfi30"));
    assert_true(pfi30 > 0.2 && pfi30 < 1.0);
    json_decref(d);
    pfi_srv_library_free(lib);
}

/* With a predictor loaded, a job registered without a curve gets one from its own baseline
 * telemetry, and its PFI30 is shown. */
static void test_predicted_curve(void **state)
{
    fx *f = *state;
    /* A small ridge model on synthetic rows: slowdown grows with SM activity. */
    enum { NR = 40 };
    static pfi_train_row rows[NR];
    unsigned long long seed = 7;
    for (int i = 0; i < NR; i++) {
        for (int k = 0; k < PFI_N_FEATURES; k++)
            rows[i].x[k] = pfi_rand_uniform(&seed);
        double act = rows[i].x[PFI_FT_SM_ACTIVE];
        for (int d = 0; d < PFI_N_TDEPTHS; d++)
            rows[i].s[d] = (0.2 + 0.6 * act) * pfi_target_depths[d] * pfi_target_depths[d] * 3;
        rows[i].pfi30 = rows[i].s[2] / 0.3;
        rows[i].group = i;
    }
    pfi_train_opts o = pfi_train_defaults();
    o.force_kind = PFI_MODEL_RIDGE;
    static pfi_model m;
    pfi_err e = {0};
    assert_int_equal(pfi_model_train(rows, NR, &o, &m, &e), PFI_OK);
    f->n->model = &m;
    f->n->last_replan_mono = -1e9;
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"m\",\"gpus\":[0,1,2,3]}", 1, NULL),
                     201);
    pfi_srv_tick(f->n); /* too few baseline samples: nothing predicted */
    assert_int_equal(f->n->jobs[0].curve_src, SRV_CURVE_NONE);
    for (int k = 0; k < SRV_MIN_BASELINE; k++)
        pfi_srv_sample(f->n);
    f->n->last_replan_mono = -1e9;
    pfi_srv_tick(f->n);
    json_t *d;
    assert_int_equal(call(f, "GET", "/v1/jobs/m", NULL, 0, &d), 200);
    assert_string_equal(json_string_value(json_object_get(d, "curve_source")), "predicted");
    double pfi30 = json_real_value(json_object_get(d, "pfi30"));
    assert_true(pfi30 > 0 && pfi30 < 3);
    assert_non_null(json_object_get(json_object_get(d, "curve"), "fit"));
    json_decref(d);
    f->n->model = NULL;
}


/* Read-only: jobs and budgets are planned and shown, no limit moves. */
static void test_read_only_plans_only(void **state)
{
    fx *f = *state;
    f->cfg.read_only = 1;
    register_three(f);
    json_t *d;
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"percent\":70}", 1, &d), 200);
    assert_true(json_is_true(json_object_get(d, "read_only")));
    assert_true(json_is_true(json_object_get(json_array_get(json_object_get(d, "gpus"), 4), "held")));
    json_decref(d);
    assert_true(fabs(sum_limits(f) - 5600) < 1e-6);
    assert_int_equal(call(f, "GET", "/v1/jobs/b", NULL, 0, &d), 200);
    assert_true(json_real_value(json_object_get(d, "cap_w")) < 700);
    json_decref(d);
    f->cfg.read_only = 0;
}

/* A ramp moves the budget in steps; the destination is checked before it starts. */
static void test_budget_ramp(void **state)
{
    fx *f = *state;
    register_three(f);
    json_t *d;
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"percent\":100}", 1, NULL), 200);
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"watts\":500,\"ramp_s\":1}", 1, &d), 409);
    json_decref(d);
    assert_false(f->n->ramping);
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"percent\":70,\"ramp_s\":0.4}", 1, &d), 200);
    json_decref(d);
    assert_true(f->n->ramping);
    assert_true(fabs(sum_limits(f) - 5600) < 1e-6); /* nothing moved yet */
    sleep_s(0.1);
    pfi_srv_tick(f->n);
    /* On the way (unless this machine was so slow that the ramp is already over). */
    double mid = sum_limits(f);
    assert_true(mid <= f->n->budget_w + 1e-6);
    assert_true(f->n->budget_w < 5600 && f->n->budget_w >= 3920 - 1e-6);
    if (f->n->ramping)
        assert_true(f->n->budget_w > 3920);
    sleep_s(0.35);
    pfi_srv_tick(f->n);
    assert_false(f->n->ramping);
    assert_true(fabs(f->n->budget_w - 3920) < 1e-6);
    assert_true(sum_limits(f) <= 3920 + 1e-6);
}

/* A restart in the middle of a budget ramp goes on with the ramp (hold.c): the step it had
 * reached was taken back as the operator's budget and kept for good (a ramp to 3000 W stayed
 * at 5346 W, shown as manual_budget_w). */
static void test_ramp_restart(void **state)
{
    fx *f = *state;
    register_three(f);
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"percent\":100}", 1, NULL), 200);
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"watts\":3920,\"ramp_s\":100}", 1, NULL),
                     200);
    sleep_s(0.05);
    pfi_srv_tick(f->n);
    assert_true(f->n->ramping);
    double step = f->n->budget_w;
    assert_true(step < 5600 && step > 3920);
    srv_hold h;
    pfi_err e = {0};
    assert_int_equal(pfi_srv_hold_load(f->n->audit, &h, &e), PFI_OK);
    assert_true(h.active && h.mode == SRV_MODE_LOCAL);
    assert_float_equal(h.budget_w, step, 1e-6);
    assert_float_equal(h.ramp_to_w, 3920, 1e-6);
    assert_true(h.ramp_left_s > 90 && h.ramp_left_s <= 100);
    /* the time until the restart counts: the ramp ends when it was to end */
    double left0 = h.ramp_left_s;
    sleep_s(0.3);
    assert_int_equal(pfi_srv_hold_load(f->n->audit, &h, &e), PFI_OK);
    assert_true(h.ramp_left_s <= left0 - 0.25);
    /* as a new process finds it: no ramp, no manual budget */
    f->n->ramping = 0;
    f->n->manual_w = NAN;
    assert_int_equal(pfi_srv_hold_resume(f->n, &h, &e), PFI_OK);
    assert_true(f->n->ramping);
    assert_float_equal(f->n->ramp_to_w, 3920, 1e-6);
    assert_float_equal(f->n->manual_w, 3920, 1e-6);
    assert_true(f->n->ramp_t1 - f->n->ramp_t0 <= h.ramp_left_s + 1e-9);
    assert_true(sum_limits(f) <= step + 1e-6);
    /* a hold saved without a ramp comes back at its budget, as before */
    h.ramp_to_w = NAN;
    f->n->ramping = 0;
    assert_int_equal(pfi_srv_hold_resume(f->n, &h, &e), PFI_OK);
    assert_false(f->n->ramping);
    assert_float_equal(f->n->manual_w, step, 1e-6);
    /* a ramp replaced by a budget without one is not in the hold (the decision saved it while
     * the old ramp was still marked, and a restart went back to that ramp) */
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"watts\":3920,\"ramp_s\":100}", 1, NULL),
                     200);
    sleep_s(0.05);
    pfi_srv_tick(f->n);
    assert_true(f->n->ramping);
    assert_int_equal(pfi_srv_hold_load(f->n->audit, &h, &e), PFI_OK);
    assert_float_equal(h.ramp_to_w, 3920, 1e-6);
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"watts\":5000}", 1, NULL), 200);
    assert_false(f->n->ramping);
    assert_int_equal(pfi_srv_hold_load(f->n->audit, &h, &e), PFI_OK);
    assert_true(isnan(h.ramp_to_w));
    assert_float_equal(h.budget_w, 5000, 1e-6);
}

/* A flood of changes is cut off with 429, and the refused ones change nothing. */
static void test_rate_limit(void **state)
{
    fx *f = *state;
    json_t *d;
    int limited = 0, k;
    for (k = 0; k < 300 && !limited; k++) {
        const char *body = k % 2 ? "{\"percent\":90}" : "{\"percent\":80}";
        int st = call(f, "PUT", "/v1/budget", body, 1, &d);
        if (st == 429) {
            limited = 1;
            assert_string_equal(err_code(d), "EBUSY");
        } else {
            assert_int_equal(st, 200);
        }
        json_decref(d);
    }
    assert_true(limited);
    assert_true(k > 100);
    /* The refused request (an 80%/90% flip) left the budget of the last accepted one. */
    double want = (k - 2) % 2 ? 0.9 * 5600 : 0.8 * 5600;
    assert_true(fabs(f->n->budget_w - want) < 1e-6);
    /* Reports that move no cap are never throttled. */
    assert_int_equal(call(f, "POST", "/v1/heartbeat", "{}", 1, NULL), 200);
    /* Nor is the removal of a job that is not there (a loop of 404s emptied the bucket), and a
     * controller's caps have a bucket of their own: the flood above does not get them a 429
     * (the controller took the node for silent and cut the other nodes' jobs deeper). */
    assert_int_equal(call(f, "DELETE", "/v1/jobs/nope", NULL, 1, NULL), 404);
    assert_int_equal(call(f, "PUT", "/v1/caps", "{\"epoch\":1,\"caps\":[{\"gpu\":0,\"cap_w\":450}]}",
                          1, NULL),
                     200);
    /* Under a controller's caps a grid event is refused (it was taken, shown active, and never
     * applied), saying where it goes. */
    sleep(1); /* a token back for the event's request */
    char ev[160];
    snprintf(ev, sizeof ev, "{\"id\":\"g\",\"start\":%.0f,\"duration_s\":600,\"limit_w\":3000}",
             pfi_clock_wall());
    assert_int_equal(call(f, "POST", "/v1/grid/events", ev, 1, &d), 409);
    char *txt = json_dumps(d, 0);
    int said = txt && strstr(txt, "external mode") != NULL;
    free(txt);
    json_decref(d);
    assert_true(said);
}

/* A refused change moves nothing and costs no token: 300 refused registrations (400) in a
 * row, then a valid one is taken (a client retrying a refused registration locked a valid one
 * out with 429). */
static void test_refused_not_counted(void **state)
{
    fx *f = *state;
    for (int k = 0; k < 300; k++)
        assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"x\",\"gpus\":[99]}", 1, NULL),
                         400);
    json_t *d;
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"ok\",\"gpus\":[0]}", 1, &d), 201);
    json_decref(d);
}

/* The watchdog as a heartbeat leaves it is what a restart finds (hold.c): armed with the last
 * ttl, or disarmed by ttl_s 0.  A disarm was not saved, so a crash brought the watchdog back
 * armed and, with no controller beating any more, tripped every GPU to the safe budget. */
static void test_heartbeat_saved(void **state)
{
    fx *f = *state;
    srv_hold h;
    pfi_err e = {0};
    assert_non_null(f->n->audit);
    assert_int_equal(call(f, "PUT", "/v1/caps", "{\"epoch\":1,\"caps\":[{\"gpu\":0,\"cap_w\":450}]}",
                          1, NULL),
                     200);
    assert_int_equal(call(f, "POST", "/v1/heartbeat", "{\"ttl_s\":5}", 1, NULL), 200);
    assert_int_equal(pfi_srv_hold_load(f->n->audit, &h, &e), PFI_OK);
    assert_true(h.active);
    assert_float_equal(h.ttl_s, 5, 0);
    assert_int_equal(call(f, "POST", "/v1/heartbeat", "{\"ttl_s\":20}", 1, NULL), 200);
    assert_int_equal(pfi_srv_hold_load(f->n->audit, &h, &e), PFI_OK);
    assert_true(h.active);
    assert_float_equal(h.ttl_s, 20, 0);
    json_t *d;
    assert_int_equal(call(f, "POST", "/v1/heartbeat", "{\"ttl_s\":0,\"controller\":\"ctl-9\"}",
                          1, &d),
                     200);
    assert_true(json_is_false(json_object_get(d, "armed")));
    json_decref(d);
    assert_int_equal(pfi_srv_hold_load(f->n->audit, &h, &e), PFI_OK);
    assert_true(h.active);
    assert_float_equal(h.ttl_s, 0, 0);
    assert_int_equal(call(f, "GET", "/v1/events", NULL, 0, &d), 200);
    json_t *ev = json_object_get(d, "events");
    int said = 0;
    for (size_t k = 0; k < json_array_size(ev); k++)
        said |= strstr(json_string_value(json_object_get(json_array_get(ev, k), "message")),
                       "disarmed by ctl-9") != NULL;
    assert_true(said);
    json_decref(d);
    /* disarmed (a controller run with --node-ttl 0), it still commands the caps: /v1/gpus names
     * it, so a one-shot `pfi cluster budget` does not take the node over */
    assert_int_equal(call(f, "GET", "/v1/gpus", NULL, 0, &d), 200);
    assert_string_equal(json_string_value(json_object_get(d, "controller")), "ctl-9");
    assert_true(json_number_value(json_object_get(d, "controller_heard_s")) < 30);
    assert_int_equal(json_integer_value(json_object_get(d, "controller_named_for_s")),
                     SRV_CONTROLLER_HEARD_S);
    json_decref(d);
    /* a minute without a heartbeat: no longer named */
    pthread_mutex_lock(&f->n->mu);
    f->n->hb_last -= SRV_CONTROLLER_HEARD_S + 1;
    pthread_mutex_unlock(&f->n->mu);
    assert_int_equal(call(f, "GET", "/v1/gpus", NULL, 0, &d), 200);
    assert_true(json_is_null(json_object_get(d, "controller")));
    json_decref(d);
}

/* The draw a compliance record takes: a GPU whose draw is not read now (no power reading, or
 * lost) counts at its limit, not as nothing (the report said the node drew less than it
 * could have, and an excess could go unseen). */
static void test_draw_bounded(void **state)
{
    fx *f = *state;
    pfi_srv_sample(f->n);
    pthread_mutex_lock(&f->n->mu);
    int unread = -1;
    double all = pfi_srv_draw_locked(f->n);
    assert_true(all > 0);
    assert_float_equal(pfi_srv_draw_bounded_locked(f->n, &unread), all, 1e-6);
    assert_int_equal(unread, 0);
    double p2 = f->n->gpu[2].s.power_w, p5 = f->n->gpu[5].s.power_w;
    f->n->gpu[2].s.have &= ~PFI_F_POWER;
    f->n->gpu[5].up = 0;
    double want = all - p2 - p5 + f->n->gpu[2].dev.limit_w + f->n->gpu[5].dev.limit_w;
    assert_true(fabs(pfi_srv_draw_bounded_locked(f->n, &unread) - want) < 1e-6);
    assert_int_equal(unread, 2);
    assert_true(fabs(pfi_srv_draw_locked(f->n) - (all - p2 - p5)) < 1e-6); /* the plain sum */
    pthread_mutex_unlock(&f->n->mu);
}

static void test_restore_originals(void **state)
{
    fx *f = *state;
    register_three(f);
    assert_int_equal(call(f, "PUT", "/v1/budget", "{\"budget\":\"75%\"}", 1, NULL), 200);
    assert_true(sum_limits(f) <= 0.75 * 5600 + 1e-6);
    pfi_err e = {0};
    assert_int_equal(pfi_srv_restore_originals(f->n, &e), PFI_OK);
    for (int i = 0; i < 8; i++)
        assert_true(fabs(limit_of(f, i) - 700) < 1e-9);
}

static void count_saved(void *ctx, const char *id, const char *spec)
{
    assert_string_equal(id, "k");
    assert_non_null(strstr(spec, "\"points\""));
    (*(int *)ctx)++;
}

/* Jobs come back after a restart from the database; a known curve is kept. */
static void test_jobs_saved(void **state)
{
    fx *f = *state;
    const char *job = "{\"id\":\"k\",\"gpus\":[0,1],\"curve\":{\"points\":["
                      "{\"cap_w\":700,\"tokens_per_s\":1000,\"draw_w\":650},"
                      "{\"cap_w\":560,\"tokens_per_s\":960,\"draw_w\":540},"
                      "{\"cap_w\":420,\"tokens_per_s\":850,\"draw_w\":410},"
                      "{\"cap_w\":280,\"tokens_per_s\":640,\"draw_w\":280}]}}";
    json_t *d;
    assert_int_equal(call(f, "POST", "/v1/jobs", job, 1, &d), 201);
    json_decref(d);
    assert_int_equal(call(f, "GET", "/v1/jobs/k", NULL, 0, &d), 200);
    assert_string_equal(json_string_value(json_object_get(d, "curve_source")), "given");
    assert_true(fabs(json_real_value(json_object_get(d, "baseline_tokens_per_s")) - 1000) < 1e-6);
    double pfi30 = json_real_value(json_object_get(d, "pfi30"));
    assert_true(pfi30 > 0.1 && pfi30 < 2);
    json_decref(d);
    int seen = 0;
    pfi_err e = {0};
    assert_int_equal(pfi_audit_load_jobs(f->n->audit, count_saved, &seen, &e), PFI_OK);
    assert_int_equal(seen, 1);
    assert_int_equal(call(f, "DELETE", "/v1/jobs/k", NULL, 1, &d), 200);
    json_decref(d);
    seen = 0;
    assert_int_equal(pfi_audit_load_jobs(f->n->audit, count_saved, &seen, &e), PFI_OK);
    assert_int_equal(seen, 0);
}

/* Numbers of absurd size are refused with the field named, and change nothing: a GPU index
 * that does not fit an int, budgets, caps, throughputs and fit parameters near DBL_MAX, and a
 * controller name of 60 kB. */
static void test_hostile_sizes(void **state)
{
    fx *f = *state;
    json_t *doc;
    double before = sum_limits(f);
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"a\",\"gpus\":[2147483648]}", 1, &doc),
                     400);
    const char *msg = json_string_value(json_object_get(json_object_get(doc, "error"), "message"));
    assert_non_null(msg);
    assert_non_null(strstr(msg, "2147483648"));
    json_decref(doc);
    const char *bad[][2] = {
        {"/v1/budget", "{\"watts\": 1e308}"},
        {"/v1/budget", "{\"watts\": 1000001}"},
        {"/v1/jobs", "{\"id\":\"a\",\"gpus\":[0],\"tokens_per_s\":1e308}"},
        {"/v1/jobs", "{\"id\":\"a\",\"gpus\":[0],\"curve\":{\"fit\":{\"family\":\"power\","
                     "\"p\":[1e308,2]}}}"},
        {"/v1/jobs", "{\"id\":\"a\",\"gpus\":[0],\"curve\":{\"points\":[{\"cap_w\":1e308,"
                     "\"tokens_per_s\":1},{\"cap_w\":500,\"tokens_per_s\":1e308}]}}"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        const char *m = !strcmp(bad[k][0], "/v1/budget") ? "PUT" : "POST";
        if (call(f, m, bad[k][0], bad[k][1], 1, NULL) != 400)
            fail_msg("accepted: %s %s", bad[k][0], bad[k][1]);
    }
    assert_int_equal(call(f, "PUT", "/v1/caps",
                          "{\"caps\":[{\"gpu\":0,\"cap_w\":1e308}]}", 1, NULL), 400);
    assert_int_equal(f->n->n_jobs, 0);
    assert_true(fabs(sum_limits(f) - before) < 1e-9);
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"id\":\"a\",\"gpus\":[0]}", 1, NULL), 201);
    assert_int_equal(call(f, "POST", "/v1/jobs/a/throughput", "{\"tokens_per_s\":1e308}", 1, NULL),
                     400);
    /* A controller's name: at most 127 bytes. */
    char *big = malloc(61500);
    assert_non_null(big);
    int at = snprintf(big, 61500, "{\"controller\":\"");
    memset(big + at, 'c', 60000);
    snprintf(big + at + 60000, 61500 - (size_t)at - 60000, "\"}");
    assert_int_equal(call(f, "POST", "/v1/heartbeat", big, 1, NULL), 400);
    snprintf(big, 61500, "{\"controller\":\"%0127d\"}", 7);
    assert_int_equal(call(f, "POST", "/v1/heartbeat", big, 1, NULL), 200);
    snprintf(big, 61500, "{\"controller\":\"%0128d\"}", 7);
    assert_int_equal(call(f, "POST", "/v1/heartbeat", big, 1, NULL), 400);
    free(big);
}

/* read_auth = token: every GET but /healthz needs the token, the status page and the history
 * it plots too. */
static void test_read_auth(void **state)
{
    fx *f = *state;
    assert_int_equal(call(f, "GET", "/v1/jobs", NULL, 0, NULL), 200);
    f->cfg.read_auth = 1;
    const char *urls[] = {"/v1/jobs",       "/v1/events",      "/v1/decisions", "/metrics",
                          "/v1/gpus",       "/v1/allocation",  "/v1/grid/events", "/",
                          "/v1/history"};
    for (size_t k = 0; k < sizeof urls / sizeof urls[0]; k++) {
        if (call(f, "GET", urls[k], NULL, 0, NULL) != 401)
            fail_msg("%s answered without the token", urls[k]);
        int st = 0;
        const char *ct;
        size_t len;
        char *out = pfi_srv_api_handle(f->n, "GET", urls[k], NULL, NULL, 0, 1, &st, &ct,
                                       &len);
        free(out);
        assert_int_equal(st, 200);
    }
    assert_int_equal(call(f, "GET", "/healthz", NULL, 0, NULL), 200);
    f->cfg.read_auth = 0;
}

/* One request with the query args[0..n) (name, value pairs; a NULL value: no '='), authorized
 * as auth says; the status, and the answer's error message in msg (empty when none). */
static int with_query(fx *f, const char *method, const char *url, const char *const (*args)[2],
                      int n, int auth, char *msg, size_t size)
{
    pfi_http_query q = {0};
    for (int i = 0; i < n; i++)
        pfi_http_query_note(&q, args[i][0], args[i][1]);
    int st = 0;
    const char *ct;
    size_t len;
    char *out = pfi_srv_api_handle(f->n, method, url, &q, NULL, 0, auth, &st, &ct, &len);
    assert_non_null(out);
    json_t *d = json_loads(out, 0, NULL);
    const char *m = json_string_value(json_object_get(json_object_get(d, "error"), "message"));
    snprintf(msg, size, "%s", m ? m : "");
    json_decref(d);
    free(out);
    return st;
}

/* The query is checked where the route is known: a path no route has is 404 and a method the
 * path does not take 405 whatever the query; with read_auth = token a read without the token
 * is 401 before its query is looked at; then a bad argument is 400 naming it.  /healthz
 * ignores any. */
static void test_query_order(void **state)
{
    fx *f = *state;
    static const char *const sinse[][2] = {{"sinse", "10"}};
    static const char *const twice[][2] = {{"since", "10"}, {"since", "20"}};
    static const char *const stray[][2] = {{"", NULL}, {"since", "10"}, {"", NULL}};
    char msg[600];
    assert_int_equal(with_query(f, "GET", "/v1/nope", sinse, 1, 1, msg, sizeof msg), 404);
    assert_int_equal(with_query(f, "DELETE", "/v1/history", sinse, 1, 1, msg, sizeof msg), 405);
    assert_int_equal(with_query(f, "GET", "/v1/history", sinse, 1, 0, msg, sizeof msg), 400);
    assert_string_equal(msg, "unknown query parameter 'sinse' (this path takes: since)");
    assert_int_equal(with_query(f, "HEAD", "/v1/history", twice, 2, 0, msg, sizeof msg), 400);
    assert_non_null(strstr(msg, "'since'"));
    /* a stray '&' names nothing */
    assert_int_equal(with_query(f, "GET", "/v1/history", stray, 3, 0, msg, sizeof msg), 200);
    f->cfg.read_auth = 1;
    assert_int_equal(with_query(f, "GET", "/v1/history", sinse, 1, 0, msg, sizeof msg), 401);
    assert_int_equal(with_query(f, "GET", "/v1/history", sinse, 1, 1, msg, sizeof msg), 400);
    assert_int_equal(with_query(f, "GET", "/healthz", sinse, 1, 0, msg, sizeof msg), 200);
    f->cfg.read_auth = 0;
}

/* The transport: a %00 never cuts a path short, and a Content-Length that is not a plain
 * count within the limit is refused before the body is read. */
static void test_http_edges(void **state)
{
    fx *f = *state;
    char url[] = "/metrics%00.txt";
    pfi_url_unescape(url);
    int st = 0;
    const char *ct;
    size_t len;
    char *out = pfi_srv_http_answer(f->n, "GET", url, NULL, NULL, NULL, 0, &st, &ct, &len);
    free(out);
    assert_int_equal(st, 404);
    char ok[] = "/v1/%67pus"; /* other escapes still decode */
    pfi_url_unescape(ok);
    assert_string_equal(ok, "/v1/gpus");
    out = pfi_srv_http_answer(f->n, "GET", "/v1/budget", "bearer " TOKEN, NULL, NULL, 0,
                              &st, &ct, &len);
    free(out);
    assert_int_equal(st, 200);
    out = pfi_srv_http_answer(f->n, "DELETE", "/v1/budget", "bearer " TOKEN, NULL, NULL, 0,
                              &st, &ct, &len);
    free(out);
    assert_int_equal(st, 200); /* the scheme in lower case is accepted */
    assert_false(pfi_srv_http_body_too_big(NULL, 100));
    assert_false(pfi_srv_http_body_too_big("100", 100));
    assert_true(pfi_srv_http_body_too_big("101", 100));
    assert_true(pfi_srv_http_body_too_big("18446744073709551617", 100));
    assert_true(pfi_srv_http_body_too_big("-1", 100));
    assert_true(pfi_srv_http_body_too_big("12abc", 100));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_event_query_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_requests_change_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_event_one_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_curve_fields_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_budget_cut_and_restore, setup, teardown),
        cmocka_unit_test_setup_teardown(test_curve_floor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sla_floor_on_curve, setup, teardown),
        cmocka_unit_test_setup_teardown(test_baseline_averaged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leftover_not_past_best, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_not_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_page, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_caps_and_watchdog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watchdog_never_raises, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outside_raise_lowered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_caps_at_range_edges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rate_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_only_plans_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_budget_ramp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_predicted_curve, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_refines_curve, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_through_library, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_implausible, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_failed_still_costs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_gpu_replanned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_of_silent_gpu, setup, teardown),
        cmocka_unit_test_setup_teardown(test_silent_gpu_reading_not_shown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heartbeat_saved, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ramp_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_draw_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore_originals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_jobs_saved, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_auth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_edges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_query_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allow, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
