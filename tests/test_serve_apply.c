/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the daemon's safety core (src/hw/apply.c), its token file and its config file.
 *
 * The cap ordering is checked against a recording backend that computes the node's sum of
 * limits after EVERY single set, so no transient can hide between two samples; a naive
 * index-order application run through the same recorder shows the check can fail. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/pfi.h"
#include "hw/backend_impl.h"
#include "serve/serve.h"
#include "support/files.h"

/* ---- a backend that records every instant ---- */

typedef struct rec {
    int n;
    double limit[PFI_MAX_GPUS];
    double oob[PFI_MAX_GPUS];  /* out-of-band cap (enforced = min(limit, oob)); 0 none */
    int lost[PFI_MAX_GPUS];    /* every call on this GPU fails */
    int set_fails[PFI_MAX_GPUS]; /* sets fail (no permission), reads work */
    double allowed;            /* the sum may never exceed this */
    double peak;
    int violations, sets;
} rec;

/* n GPUs at one limit; the sum may never exceed allowed. */
static rec rec_uniform(int n, double limit, double allowed)
{
    rec r = {0};
    r.n = n;
    for (int i = 0; i < n; i++)
        r.limit[i] = limit;
    r.allowed = allowed;
    return r;
}

static double rec_sum(const rec *r)
{
    double s = 0;
    for (int i = 0; i < r->n; i++)
        s += r->limit[i];
    return s;
}

static int r_open(pfi_backend *b, const char *arg, pfi_err *err)
{
    return PFI_OK;
}
static void r_close(pfi_backend *b)
{
}
static int r_count(pfi_backend *b, int *count, pfi_err *err)
{
    *count = ((rec *)b->impl)->n;
    return PFI_OK;
}
static int r_info(pfi_backend *b, int i, pfi_device *d, pfi_err *err)
{
    rec *r = b->impl;
    if (r->lost[i])
        return pfi_err_set(err, PFI_ELOST, "GPU %d has fallen off the bus", i);
    memset(d, 0, sizeof *d);
    d->index = i;
    snprintf(d->uuid, sizeof d->uuid, "GPU-rec-%d", i);
    d->min_limit_w = 200;
    d->max_limit_w = 700;
    d->default_limit_w = 700;
    d->limit_w = r->limit[i];
    d->enforced_w = r->oob[i] > 0 && r->oob[i] < r->limit[i] ? r->oob[i] : r->limit[i];
    return PFI_OK;
}
static int r_sample(pfi_backend *b, int i, pfi_sample *s, pfi_err *err)
{
    return PFI_ENOTSUP;
}
static int r_set(pfi_backend *b, int i, double w, pfi_err *err)
{
    rec *r = b->impl;
    if (r->lost[i])
        return pfi_err_set(err, PFI_ELOST, "GPU %d has fallen off the bus", i);
    if (r->set_fails[i])
        return pfi_err_set(err, PFI_EPERM, "GPU %d: no permission", i);
    /* The device takes whole milliwatts, as NVML does (nearest, as the NVML backend rounded). */
    r->limit[i] = round(w * 1000.0) / 1000.0;
    r->sets++;
    double s = rec_sum(r);
    if (s > r->peak)
        r->peak = s;
    if (s > r->allowed + 1e-6)
        r->violations++;
    return PFI_OK;
}
static const pfi_backend_ops rec_ops = {.name = "rec", .open = r_open, .close = r_close,
                                        .device_count = r_count, .device_info = r_info,
                                        .sample = r_sample, .set_limit = r_set};

static unsigned long long rng = 88172645463325252ull;
static double uni(void)
{
    return pfi_rand_uniform(&rng);
}

/* Random caps in [200, 700] whose sum is at most budget. */
static void random_caps(double *c, int n, double budget)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        c[i] = round(200 + 500 * uni());
        s += c[i];
    }
    if (s > budget) {
        double k = (budget - 200.0 * n) / (s - 200.0 * n);
        for (int i = 0; i < n; i++)
            c[i] = 200 + floor((c[i] - 200) * k);
    }
}

static pfi_backend rec_backend(rec *r)
{
    pfi_backend b = {.ops = &rec_ops, .impl = r, .read_only = 0};
    return b;
}

/* Many random reallocations under random budgets, each checked at every single set. */
static void test_apply_never_over_budget(void **state)
{
    for (int trial = 0; trial < 2000; trial++) {
        rec r = {0};
        r.n = 1 + (int)(uni() * 8);
        double b_old = 200.0 * r.n + uni() * 500.0 * r.n;
        double b_new = 200.0 * r.n + uni() * 500.0 * r.n;
        double target[PFI_MAX_GPUS];
        random_caps(r.limit, r.n, b_old);
        random_caps(target, r.n, b_new);
        /* While moving from the old budget to the new one, neither may be exceeded beyond
         * where the node already is: the larger of the start and the new budget. */
        double start = rec_sum(&r);
        r.allowed = start > b_new ? start : b_new;
        r.peak = start;
        pfi_backend b = rec_backend(&r);
        pfi_apply_report rep;
        pfi_err e = {0};
        assert_int_equal(pfi_hw_apply(&b, r.n, target, b_new, NULL, &rep, &e), PFI_OK);
        assert_int_equal(r.violations, 0);
        assert_int_equal(rep.n_failed, 0);
        assert_int_equal(rep.n_held, 0);
        for (int i = 0; i < r.n; i++)
            assert_true(fabs(r.limit[i] - target[i]) < 1e-9);
        assert_true(rep.peak_w <= r.allowed + 1e-6);
        assert_true(rep.sum_after_w <= b_new + 1e-6);
    }
}

/* The sum of the limits in whole milliwatts (the recorder holds whole milliwatts). */
static long long rec_sum_mw(const rec *r)
{
    long long s = 0;
    for (int i = 0; i < r->n; i++)
        s += llround(r->limit[i] * 1000.0);
    return s;
}

/* Budgets a fraction of a watt apart (issue 14 item 7: 4000 W, then 3999.6 ... 3998 W), and
 * random fractional caps: after every apply the sum of the limits is at most the budget,
 * compared exactly in milliwatts, never over by a fraction of a watt. */
static void test_apply_fractional_budget_exact(void **state)
{
    rec r = rec_uniform(8, 500, INFINITY);
    pfi_backend b = rec_backend(&r);
    const double budgets[] = {4000, 3999.6, 3999.2, 3998.8, 3998.4, 3998, 3997.9999};
    for (size_t k = 0; k < sizeof budgets / sizeof budgets[0]; k++) {
        double target[PFI_MAX_GPUS];
        for (int i = 0; i < r.n; i++)
            target[i] = budgets[k] / r.n;
        pfi_apply_report rep;
        pfi_err e = {0};
        assert_int_equal(pfi_hw_apply(&b, r.n, target, budgets[k], NULL, &rep, &e), PFI_OK);
        long long budget_mw = (long long)floor(budgets[k] * 1000.0 + 1e-6);
        assert_true(rec_sum_mw(&r) <= budget_mw);
        assert_true(rep.sum_after_w * 1000.0 <= (double)budget_mw);
        assert_int_equal(rep.n_failed, 0);
    }
    for (int trial = 0; trial < 2000; trial++) {
        rec q = {0};
        q.n = 1 + (int)(uni() * 8);
        double target[PFI_MAX_GPUS], bud = 0;
        for (int i = 0; i < q.n; i++) {
            q.limit[i] = round((200 + 500 * uni()) * 1000.0) / 1000.0;
            target[i] = 200 + 500 * uni();
            bud += target[i];
        }
        q.allowed = INFINITY;
        pfi_backend bq = rec_backend(&q);
        pfi_apply_report rep;
        pfi_err e = {0};
        assert_int_equal(pfi_hw_apply(&bq, q.n, target, bud, NULL, &rep, &e), PFI_OK);
        assert_int_equal(rep.n_held, 0);
        assert_true(rec_sum_mw(&q) <= (long long)floor(bud * 1000.0 + 1e-6));
        for (int i = 0; i < q.n; i++)
            assert_true(q.limit[i] <= target[i] && q.limit[i] > target[i] - 0.001);
    }
}

/* The same scenarios applied in index order do go over: the recorder would see a bug. */
static void test_naive_order_is_caught(void **state)
{
    int caught = 0;
    for (int trial = 0; trial < 200; trial++) {
        rec r = {0};
        r.n = 8;
        double budget = 4000;
        double target[PFI_MAX_GPUS];
        random_caps(r.limit, r.n, budget);
        random_caps(target, r.n, budget);
        double start = rec_sum(&r);
        r.allowed = start > budget ? start : budget;
        pfi_backend b = rec_backend(&r);
        pfi_err e = {0};
        for (int i = 0; i < r.n; i++)
            assert_int_equal(pfi_hw_set_limit(&b, i, target[i], NULL, &e), PFI_OK);
        caught += r.violations > 0;
    }
    assert_true(caught > 0);
}

/* A GPU that falls off the bus mid-change: the others still move, nothing goes over, and the
 * raise that no longer fits is held back and reported. */
static void test_lost_gpu_does_not_stop_others(void **state)
{
    rec r = {0};
    r.n = 4;
    for (int i = 0; i < 4; i++)
        r.limit[i] = 500; /* 2000 W, budget 2000 W */
    r.lost[1] = 1;
    r.allowed = 2000;
    pfi_backend b = rec_backend(&r);
    /* GPU 1 should give 200 W to GPU 0; it cannot, so GPU 0 must not take them. */
    double target[4] = {700, 300, 500, 450};
    pfi_device known[4];
    for (int i = 0; i < 4; i++) {
        memset(&known[i], 0, sizeof known[i]);
        known[i].limit_w = known[i].enforced_w = 500;
        known[i].max_limit_w = 700;
    }
    pfi_apply_report rep;
    pfi_err e = {0};
    assert_int_equal(pfi_hw_apply(&b, 4, target, 2000, known, &rep, &e), PFI_OK);
    assert_int_equal(r.violations, 0);
    assert_int_equal(rep.n_failed, 1);
    assert_int_not_equal(rep.gpu[1].code, PFI_OK);
    assert_non_null(strstr(rep.gpu[1].msg, "fallen off"));
    assert_true(fabs(r.limit[3] - 450) < 1e-9);   /* the lowering happened */
    /* GPU 0 may rise only into the 50 W GPU 3 gave back. */
    assert_true(rep.gpu[0].held);
    assert_true(fabs(r.limit[0] - 500) < 1e-9);
    assert_int_equal(rep.n_held, 1);
    assert_true(rep.sum_after_w <= 2000 + 1e-6);
}

/* A set refused (no permission) counts the GPU at its old limit, and its neighbours adapt. */
static void test_refused_set_counts_old_limit(void **state)
{
    rec r = rec_uniform(2, 600, 1200);
    r.set_fails[0] = 1;
    pfi_backend b = rec_backend(&r);
    double target[2] = {400, 700};
    pfi_apply_report rep;
    pfi_err e = {0};
    assert_int_equal(pfi_hw_apply(&b, 2, target, 1100, NULL, &rep, &e), PFI_OK);
    assert_int_equal(r.violations, 0);
    assert_int_equal(rep.n_failed, 1);
    assert_int_equal(rep.gpu[0].code, PFI_EPERM);
    assert_true(rep.gpu[1].held);
    assert_true(fabs(r.limit[1] - 600) < 1e-9);
    /* Nothing changed: a refused set is no change (the audit said "changed 8, failed 8"). */
    assert_int_equal(rep.n_changed, 0);
}

/* Enforced below requested (an out-of-band cap) is reported, not hidden. */
static void test_enforced_mismatch_reported(void **state)
{
    rec r = rec_uniform(2, 700, 1400);
    r.oob[1] = 300;
    pfi_backend b = rec_backend(&r);
    double target[2] = {500, 500};
    pfi_apply_report rep;
    pfi_err e = {0};
    assert_int_equal(pfi_hw_apply(&b, 2, target, 1000, NULL, &rep, &e), PFI_OK);
    assert_int_equal(rep.n_mismatch, 1);
    assert_true(fabs(rep.gpu[1].enforced_w - 300) < 1e-9);
    assert_non_null(strstr(rep.gpu[1].msg, "enforces 300 W"));
    assert_int_equal(rep.n_failed, 0);
}

/* NAN targets leave GPUs alone; a GPU that cannot be read counts at its maximum. */
static void test_unreadable_counts_at_max(void **state)
{
    rec r = rec_uniform(3, 400, 1400);
    r.lost[2] = 1;
    pfi_backend b = rec_backend(&r);
    pfi_device known[3];
    memset(known, 0, sizeof known);
    for (int i = 0; i < 3; i++) {
        known[i].limit_w = known[i].enforced_w = NAN;
        known[i].max_limit_w = 700;
    }
    double target[3] = {NAN, 700, NAN};
    pfi_apply_report rep;
    pfi_err e = {0};
    /* 400 + 700 + (unknown, counted 700) > 1400: the raise must wait. */
    assert_int_equal(pfi_hw_apply(&b, 3, target, 1400, known, &rep, &e), PFI_OK);
    assert_true(rep.gpu[1].held);
    assert_true(fabs(r.limit[1] - 400) < 1e-9);
    assert_true(fabs(r.limit[0] - 400) < 1e-9);
    assert_int_equal(r.sets, 0);
}

/* ---- token file ---- */

static char tmpdir[512];

static void make_tmpdir(void)
{
    const char *base = getenv("PFI_TEST_TMP");
    snprintf(tmpdir, sizeof tmpdir, "%s/serve-apply-XXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(tmpdir));
}

static void test_token_file(void **state)
{
    char path[600], tok[PFI_TOKEN_MAX + 1];
    pfi_err e = {0};
    snprintf(path, sizeof path, "%s/token", tmpdir);
    pfi_test_put_mode(path, "  s3cret-token-0123456789\n", 0644);
    assert_int_equal(pfi_token_load(path, tok, sizeof tok, &e), PFI_EPERM);
    assert_non_null(strstr(e.msg, "chmod 600"));
    chmod(path, 0600);
    assert_int_equal(pfi_token_load(path, tok, sizeof tok, &e), PFI_OK);
    assert_string_equal(tok, "s3cret-token-0123456789");
    pfi_test_put_mode(path, "short\n", 0600);
    assert_int_equal(pfi_token_load(path, tok, sizeof tok, &e), PFI_EINVAL);
    snprintf(path, sizeof path, "%s/absent", tmpdir);
    assert_int_equal(pfi_token_load(path, tok, sizeof tok, &e), PFI_ENOENT);

    assert_true(pfi_token_ok("s3cret-token-0123456789", "Bearer s3cret-token-0123456789"));
    assert_false(pfi_token_ok("s3cret-token-0123456789", "Bearer s3cret-token-012345678"));
    assert_false(pfi_token_ok("s3cret-token-0123456789", "Bearer s3cret-token-01234567890"));
    /* RFC 9110: 1*SP after the scheme, no trailing whitespace in a field value (both were
     * refused); a space inside the token or none after the scheme is still wrong. */
    assert_true(pfi_token_ok("s3cret-token-0123456789", "Bearer   s3cret-token-0123456789"));
    assert_true(pfi_token_ok("s3cret-token-0123456789", "Bearer s3cret-token-0123456789 \t"));
    assert_false(pfi_token_ok("s3cret-token-0123456789", "Bearer s3cret-token-012345 6789"));
    assert_false(pfi_token_ok("s3cret-token-0123456789", "Bearers3cret-token-0123456789"));
    assert_false(pfi_token_ok("s3cret-token-0123456789", "Bearer    "));
    assert_false(pfi_token_ok("s3cret-token-0123456789", "Basic s3cret-token-0123456789"));
    assert_false(pfi_token_ok("s3cret-token-0123456789", NULL));
    assert_false(pfi_token_ok("", "Bearer "));
}

/* A symlinked token file (a Kubernetes secret) is followed and its target checked; a FIFO is
 * refused at once, without blocking; the scheme "Bearer" is case-insensitive, the token not. */
static void test_token_file_kinds(void **state)
{
    char target[600], link_[600], fifo[600], tok[PFI_TOKEN_MAX + 1];
    pfi_err e = {0};
    snprintf(target, sizeof target, "%s/secret-target", tmpdir);
    snprintf(link_, sizeof link_, "%s/secret-link", tmpdir);
    pfi_test_put_mode(target, "linked-token-0123456789\n", 0600);
    unlink(link_);
    assert_int_equal(symlink(target, link_), 0);
    assert_int_equal(pfi_token_load(link_, tok, sizeof tok, &e), PFI_OK);
    assert_string_equal(tok, "linked-token-0123456789");
    chmod(target, 0644); /* the target's mode is what counts */
    assert_int_equal(pfi_token_load(link_, tok, sizeof tok, &e), PFI_EPERM);
    assert_non_null(strstr(e.msg, "chmod 600"));

    snprintf(fifo, sizeof fifo, "%s/fifo", tmpdir);
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(20); /* a blocking open() would hang here: fail instead */
    assert_int_equal(pfi_token_load(fifo, tok, sizeof tok, &e), PFI_EINVAL);
    alarm(0);
    assert_non_null(strstr(e.msg, "not a regular file"));

    const char *t = "s3cret-token-0123456789";
    assert_true(pfi_token_ok(t, "bearer s3cret-token-0123456789"));
    assert_true(pfi_token_ok(t, "BEARER s3cret-token-0123456789"));
    assert_false(pfi_token_ok(t, "bearer S3CRET-TOKEN-0123456789"));
    assert_false(pfi_token_ok(t, "bearers3cret-token-0123456789"));
}

/* The loopback check parses the address; a Unix socket needs a path; the new listener
 * settings are bounded. */
static void test_config_listen(void **state)
{
    pfi_serve_config c;
    pfi_err e = {0};
    const char *local[] = {"127.0.0.1:0", "127.9.8.7:9455", "[::1]:0", "localhost:0",
                           "unix:/run/pfi/serve.sock"};
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++) {
        pfi_serve_config_defaults(&c);
        assert_int_equal(pfi_serve_config_set(&c, "listen", local[i], &e), PFI_OK);
        if (pfi_serve_config_check(&c, &e) != PFI_OK)
            fail_msg("%s refused: %s", local[i], e.msg);
    }
    const char *remote[] = {"127.0.0.1.nip.io:0", "127.evil.example:80", "localhost.example:0",
                            "[::1].example:0", "10.0.0.1:0", "[::ffff:10.0.0.1]:0"};
    for (size_t i = 0; i < sizeof remote / sizeof remote[0]; i++) {
        pfi_serve_config_defaults(&c);
        assert_int_equal(pfi_serve_config_set(&c, "listen", remote[i], &e), PFI_OK);
        if (pfi_serve_config_check(&c, &e) != PFI_EPERM)
            fail_msg("%s taken for the loopback", remote[i]);
    }
    pfi_serve_config_defaults(&c);
    assert_int_equal(pfi_serve_config_set(&c, "listen", "unix:", &e), PFI_OK);
    assert_int_equal(pfi_serve_config_check(&c, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "socket path"));

    pfi_serve_config_defaults(&c);
    assert_int_equal(pfi_serve_config_set(&c, "control_listen", "127.0.0.1.nip.io:1", &e), PFI_OK);
    assert_int_equal(pfi_serve_config_check(&c, &e), PFI_EPERM);
    assert_int_equal(pfi_serve_config_set(&c, "control_listen", c.listen, &e), PFI_OK);
    assert_int_equal(pfi_serve_config_check(&c, &e), PFI_EINVAL);
    assert_int_equal(pfi_serve_config_set(&c, "control_listen", "unix:/run/pfi/ctl.sock", &e),
                     PFI_OK);
    assert_int_equal(pfi_serve_config_check(&c, &e), PFI_OK);
    assert_int_equal(pfi_serve_config_set(&c, "read_auth", "token", &e), PFI_OK);
    assert_int_equal(pfi_serve_config_check(&c, &e), PFI_EINVAL); /* no token file */
    assert_int_equal(pfi_serve_config_set(&c, "token_file", "/etc/pfi/token", &e), PFI_OK);
    assert_int_equal(pfi_serve_config_check(&c, &e), PFI_OK);
    assert_int_equal(pfi_serve_config_set(&c, "read_auth", "maybe", &e), PFI_EINVAL);
    assert_int_equal(pfi_serve_config_set(&c, "max_client_connections", "0", &e), PFI_EINVAL);
    assert_int_equal(pfi_serve_config_set(&c, "max_client_connections", "4294967297", &e),
                     PFI_EINVAL);
    assert_int_equal(pfi_serve_config_set(&c, "max_connections", "256", &e), PFI_OK);
    assert_int_equal(c.max_conns, 256);
    assert_int_equal(pfi_serve_config_set(&c, "threads", "4294967297", &e), PFI_EINVAL);
    assert_int_equal(pfi_serve_config_set(&c, "client_timeout", "0s", &e), PFI_ERANGE);
    assert_int_equal(pfi_serve_config_set(&c, "client_timeout", "5s", &e), PFI_OK);
}

/* ---- config ---- */

static void test_config_file(void **state)
{
    char path[600];
    pfi_serve_config c;
    pfi_err e = {0};
    snprintf(path, sizeof path, "%s/serve.conf", tmpdir);
    pfi_test_put_mode(path,
                      "# a comment\n"
                      "listen = unix:/run/pfi/serve.sock\n"
                      "token_file = \"/etc/pfi/token\"   # trailing comment\n"
                      "budget = 80%\n"
                      "sample_interval = 250ms\n"
                      "watchdog_timeout = 30s\n"
                      "safe_budget = min\n"
                      "default_sla = 10%\n"
                      "hysteresis = 8W\n"
                      "backend = nvml\n",
                      0600);
    pfi_serve_config_defaults(&c);
    assert_int_equal(pfi_serve_config_load(&c, path, &e), PFI_OK);
    assert_string_equal(c.listen, "unix:/run/pfi/serve.sock");
    assert_string_equal(c.token_file, "/etc/pfi/token");
    assert_string_equal(c.budget, "80%");
    assert_true(fabs(c.sample_interval_s - 0.25) < 1e-12);
    assert_true(fabs(c.watchdog_timeout_s - 30) < 1e-12);
    assert_true(fabs(c.default_sla - 0.1) < 1e-12);
    assert_true(fabs(c.hysteresis_w - 8) < 1e-12);
    assert_string_equal(c.backend, "nvml");
    assert_int_equal(pfi_serve_config_check(&c, &e), PFI_OK);

    pfi_test_put_mode(path, "listen = 127.0.0.1:1\nbudgett = 5\n", 0600);
    pfi_serve_config_defaults(&c);
    assert_int_equal(pfi_serve_config_load(&c, path, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, ":2:"));
    assert_non_null(strstr(e.msg, "budgett"));
    pfi_test_put_mode(path, "budget = lots\n", 0600);
    assert_int_equal(pfi_serve_config_load(&c, path, &e), PFI_EINVAL);
    pfi_test_put_mode(path, "just words\n", 0600);
    assert_int_equal(pfi_serve_config_load(&c, path, &e), PFI_EINVAL);

    /* default_sla reads a slowdown as every command does (util/units.h), with its own message;
     * a refused one leaves the setting as it was. */
    pfi_serve_config_defaults(&c);
    assert_int_equal(pfi_serve_config_set(&c, "default_sla", "0.25", &e), PFI_OK);
    assert_true(fabs(c.default_sla - 0.25) < 1e-12);
    assert_int_equal(pfi_serve_config_set(&c, "default_sla", "none", &e), PFI_OK);
    assert_true(isnan(c.default_sla));
    static const char *bad_sla[] = {"1", "10", "100%", "-0.1", "abc", "10%%", "0.1x", "", "nan"};
    for (size_t k = 0; k < sizeof bad_sla / sizeof bad_sla[0]; k++) {
        assert_int_equal(pfi_serve_config_set(&c, "default_sla", "20%", &e), PFI_OK);
        int rc = pfi_serve_config_set(&c, "default_sla", bad_sla[k], &e);
        if (!*bad_sla[k]) { /* empty: none, as before */
            assert_int_equal(rc, PFI_OK);
            continue;
        }
        assert_int_equal(rc, PFI_EINVAL);
        assert_non_null(strstr(e.msg, "default_sla: expected a max slowdown like 0.1 or 10%"));
        assert_true(fabs(c.default_sla - 0.2) < 1e-12);
    }

    pfi_serve_config_defaults(&c);
    assert_int_equal(pfi_serve_config_set(&c, "listen", "0.0.0.0:9455", &e), PFI_OK);
    assert_int_equal(pfi_serve_config_check(&c, &e), PFI_EPERM);
    assert_non_null(strstr(e.msg, "allow_remote"));
    assert_int_equal(pfi_serve_config_set(&c, "allow_remote", "yes", &e), PFI_OK);
    assert_int_equal(pfi_serve_config_check(&c, &e), PFI_OK);
    assert_int_equal(pfi_serve_config_set(&c, "backend", "dcgm", &e), PFI_EINVAL);
    assert_int_equal(pfi_serve_config_set(&c, "sample_interval", "1ms", &e), PFI_ERANGE);
}

int main(void)
{
    make_tmpdir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apply_never_over_budget),
        cmocka_unit_test(test_naive_order_is_caught),
        cmocka_unit_test(test_apply_fractional_budget_exact),
        cmocka_unit_test(test_lost_gpu_does_not_stop_others),
        cmocka_unit_test(test_refused_set_counts_old_limit),
        cmocka_unit_test(test_enforced_mismatch_reported),
        cmocka_unit_test(test_unreadable_counts_at_max),
        cmocka_unit_test(test_token_file),
        cmocka_unit_test(test_token_file_kinds),
        cmocka_unit_test(test_config_listen),
        cmocka_unit_test(test_config_file),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return rc;
}
