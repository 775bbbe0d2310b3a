/* SPDX-License-Identifier: Apache-2.0 */
/* test_fd_limit.c: the open-file limit a server needs (util/fs.h pfi_fd_limit_raise, pfi_fd_limit_fit), and the
 * cluster API's and the node daemon's use of it: under systemd's default soft limit of 1024 descriptors, the API's
 * default 1024 connections plus the controller's node requests and files did not fit, so a
 * flood of connections left the controller without descriptors for its own work; the API
 * raises the soft limit for all of them, and where the hard limit is too low it holds fewer
 * connections (or refuses to start when none fit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster/cl_int.h"
#include "serve/serve_int.h"
#include "support/sim_node.h"
#include "support/standin.h"
#include "util/fs.h"

static const char *const NAMES[1] = {"n1"};

static long soft_now(void)
{
    struct rlimit r;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &r), 0);
    return r.rlim_cur == RLIM_INFINITY ? -1 : (long)r.rlim_cur;
}

/* Sets the soft limit (and the hard one when hard > 0). */
static void set_limit(long soft, long hard)
{
    struct rlimit r;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &r), 0);
    r.rlim_cur = (rlim_t)soft;
    if (hard > 0)
        r.rlim_max = (rlim_t)hard;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &r), 0);
}

static void test_raise(void **state)
{
    (void)state;
    struct rlimit r;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &r), 0);
    assert_true(r.rlim_max == RLIM_INFINITY || r.rlim_max >= 4096);
    set_limit(1024, 0);
    assert_int_equal(pfi_fd_limit_raise(1500), 1500);
    assert_int_equal(soft_now(), 1500);
    assert_int_equal(pfi_fd_limit_raise(1200), 1500); /* never lowered */
    assert_int_equal(soft_now(), 1500);
}

/* What fits: all when the raised limit holds them with the reserve. */
static void test_fit(void **state)
{
    (void)state;
    long have = 0;
    set_limit(1024, 0);
    assert_int_equal(pfi_fd_limit_fit(1024, 320, &have), 1024);
    assert_int_equal(have, 1344);
    assert_int_equal(soft_now(), 1344);
}

/* Under a lower hard limit: the limit less the reserve, 0 or less when the reserve alone takes
 * it.  (The hard limit only goes down for good where the process lacks CAP_SYS_RESOURCE: this
 * runs after the tests that need it high.) */
static void test_fit_low_hard_limit(void **state)
{
    (void)state;
    long have = 0;
    set_limit(700, 700);
    assert_int_equal(pfi_fd_limit_fit(1024, 320, &have), 380);
    assert_int_equal(have, 700);
    assert_int_equal(pfi_fd_limit_fit(300, 400, &have), 300); /* 700 holds both */
    assert_int_equal(pfi_fd_limit_fit(1024, 700, &have), 0);
    assert_true(pfi_fd_limit_fit(10, 800, &have) < 1);
    assert_int_equal(soft_now(), 700);
}

typedef struct site {
    char dir[256], topo[300];
    pfi_standin *s;
    pfi_cl *c;
} site;

static void site_open(site *x)
{
    pfi_err e = {0};
    int port;
    const char *base = getenv("PFI_TEST_TMP");
    snprintf(x->dir, sizeof x->dir, "%s/fdlim.XXXXXX", base ? base : "/tmp");
    assert_non_null(mkdtemp(x->dir));
    assert_int_equal(pfi_standin_start(1, NAMES, 2, 200, 700, &x->s, &port, &e), PFI_OK);
    snprintf(x->topo, sizeof x->topo, "%s/topo.json", x->dir);
    FILE *f = fopen(x->topo, "w");
    assert_non_null(f);
    fputs("{\"nodes\": [{\"name\": \"n1\", \"gpus\": 2}], \"jobs\": []}", f);
    assert_int_equal(fclose(f), 0);
    pfi_cl_config cfg;
    pfi_cl_config_defaults(&cfg); /* 1024 API connections, 256 node requests at once */
    snprintf(cfg.node_url, sizeof cfg.node_url, "http://127.0.0.1:%d/n/%%n", port);
    snprintf(cfg.topo_file, sizeof cfg.topo_file, "%s", x->topo);
    cfg.heartbeat_s = 0;
    assert_int_equal(pfi_cl_open(&cfg, &x->c, &e), PFI_OK);
}

static void site_close(site *x)
{
    pfi_cl_close(x->c);
    pfi_standin_stop(x->s);
    unlink(x->topo);
    rmdir(x->dir);
}

/* Under a soft limit of 1024 the API with its defaults raises it for its 1024 connections,
 * 256 node requests and its spare descriptors (before: left at 1024). */
static void test_cluster_api_raises(void **state)
{
    (void)state;
    site x;
    site_open(&x);
    set_limit(1024, 0);
    pfi_err e = {0};
    pfi_cl_server *srv = NULL;
    int port;
    assert_int_equal(pfi_cl_server_start(x.c, "127.0.0.1:0", NULL, &srv, &port, &e), PFI_OK);
    assert_true(soft_now() >= 1024 + 256 + 64);
    pfi_cl_server_stop(srv);
    site_close(&x);
}

/* A node daemon under a soft limit of 1024 raises it for listen's 1024 connections and its
 * spare descriptors (before: left at 1024). */
static void serve_up(pfi_test_node *t, srv_http **h, int want)
{
    pfi_serve_config c;
    pfi_serve_config_defaults(&c); /* max_connections 1024 */
    snprintf(c.listen, sizeof c.listen, "127.0.0.1:0");
    assert_int_equal(pfi_test_node_start(t, "fdlim", &c), 0);
    char where[300];
    pfi_err e = {0};
    *h = NULL;
    int rc = pfi_srv_http_bind(&t->cfg, h, where, sizeof where, &e);
    if (rc == PFI_OK)
        assert_int_equal(pfi_srv_http_serve(*h, t->n, &e), PFI_OK);
    assert_int_equal(rc, want);
    if (want != PFI_OK) {
        assert_null(*h);
        assert_non_null(strstr(e.msg, "open-file limit"));
    }
}

static void test_serve_raises(void **state)
{
    (void)state;
    pfi_test_node t;
    srv_http *h;
    set_limit(1024, 0);
    serve_up(&t, &h, PFI_OK);
    assert_true(soft_now() >= 1024 + 64);
    pfi_srv_http_stop(h);
    pfi_test_node_stop(&t);
}

/* A hard limit too low for the defaults: the API and the node daemon start with the
 * connections that fit; one that leaves room for none: a clear error, no server.  (Last: the hard limit is put back only
 * where the process may raise it.) */
static void test_cluster_api_low_hard_limit(void **state)
{
    (void)state;
    struct rlimit was;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
    site x;
    site_open(&x);
    pfi_err e = {0};
    pfi_cl_server *srv = NULL;
    pfi_test_node t;
    srv_http *h;
    int port;
    /* (the hard limit only goes down: a process without CAP_SYS_RESOURCE cannot raise it) */
    set_limit(600, 600); /* 600 - 256 - 64 = 280 API connections; 536 on the node */
    assert_int_equal(pfi_cl_server_start(x.c, "127.0.0.1:0", NULL, &srv, &port, &e), PFI_OK);
    assert_int_equal(soft_now(), 600);
    pfi_cl_server_stop(srv);
    srv = NULL;
    serve_up(&t, &h, PFI_OK);
    pfi_srv_http_stop(h);
    pfi_test_node_stop(&t);
    set_limit(300, 300); /* none for the API; 236 on the node */
    assert_int_equal(pfi_cl_server_start(x.c, "127.0.0.1:0", NULL, &srv, &port, &e), PFI_ERANGE);
    assert_null(srv);
    assert_non_null(strstr(e.msg, "open-file limit (300)"));
    site_close(&x);
    set_limit(60, 60); /* none on the node */
    serve_up(&t, &h, PFI_ERANGE);
    pfi_test_node_stop(&t);
    setrlimit(RLIMIT_NOFILE, &was); /* where the process may raise it again */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raise),
        cmocka_unit_test(test_fit),
        cmocka_unit_test(test_cluster_api_raises),
        cmocka_unit_test(test_serve_raises),
        cmocka_unit_test(test_fit_low_hard_limit),
        cmocka_unit_test(test_cluster_api_low_hard_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
