/* SPDX-License-Identifier: Apache-2.0 */
/* test_cluster.c: the cluster controller against loopback stand-in node daemons: Slurm's JSON,
 * one cap per multi-node job, the site never over budget while caps move, bad input refused with
 * nothing changed, a silent node counted at its last caps. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "cluster/cl_int.h"
#include "util/clock.h"
#include "store/grid.h"
#include "core/alloc_keep.h"
#include "core/pfi.h"
#include "report/status_page.h"
#include "support/files.h"
#include "support/standin.h"

static void test_gres_idx(void **state)
{
    int g[PFI_MAX_GPUS];
    assert_int_equal(pfi_cl_parse_gres_idx("gpu:2(IDX:0-1)", g, PFI_MAX_GPUS), 2);
    assert_int_equal(g[0], 0);
    assert_int_equal(g[1], 1);
    assert_int_equal(pfi_cl_parse_gres_idx("gpu:h100:4(IDX:0,2-4)", g, PFI_MAX_GPUS), 4);
    assert_int_equal(g[1], 2);
    assert_int_equal(g[3], 4);
    assert_int_equal(pfi_cl_parse_gres_idx("nic:1(IDX:0),gpu:1(IDX:3)", g, PFI_MAX_GPUS), 1);
    assert_int_equal(g[0], 3);
    assert_int_equal(pfi_cl_parse_gres_idx("gpu:1(IDX:N/A)", g, PFI_MAX_GPUS), 0);
    assert_int_equal(pfi_cl_parse_gres_idx("gpu:2(IDX:1-0)", g, PFI_MAX_GPUS), -1);
    assert_int_equal(pfi_cl_parse_gres_idx("gpu:2(IDX:x)", g, PFI_MAX_GPUS), -1);
    assert_int_equal(pfi_cl_parse_gres_idx("gpu:2(IDX:0-1", g, PFI_MAX_GPUS), -1);
    /* Indices of twenty digits: refused, not an overflow (undefined behaviour before). */
    assert_int_equal(pfi_cl_parse_gres_idx("gpu:2(IDX:0-94444444444444444444)", g, PFI_MAX_GPUS),
                     -1);
    assert_int_equal(pfi_cl_parse_gres_idx("gpu:2(IDX:99999999999999999999999)", g, PFI_MAX_GPUS),
                     -1);
}

/* Curves as `pfi serve` writes them (store/codec.h): measured points, or a fit only. */
static void test_decode_curve(void **state)
{
    pfi_cl_job j;
    memset(&j, 0, sizeof j);
    json_t *m = json_loads("{\"t0\": 5000, \"p0_w\": 640, \"min_cap_w\": 200, \"max_cap_w\": 700, "
                           "\"points\": [{\"cap_w\": 300, \"draw_w\": 290, \"rel\": 0.7}, "
                           "{\"cap_w\": 500, \"draw_w\": 480, \"rel\": 0.9}, {\"cap_w\": 700, "
                           "\"draw_w\": 640, \"rel\": 1.0}], \"fit\": {\"family\": \"power\", "
                           "\"p\": [0.8, 1.5]}}",
                           0, NULL);
    assert_int_equal(pfi_cl_decode_curve(m, &j), 1);
    assert_int_equal(j.n_points, 3);
    assert_true(fabs(j.tput[1] - 4500) < 1e-9);
    assert_true(fabs(j.p0_w - 640) < 1e-9);
    json_decref(m);
    /* A predicted curve: no points, its fit sampled across the cap range, falling with the cap. */
    memset(&j, 0, sizeof j);
    json_t *p = json_loads("{\"t0\": null, \"p0_w\": 650, \"cap0_w\": 700, \"min_cap_w\": 200, "
                           "\"max_cap_w\": 700, \"n_gpus\": 4, \"r_max\": 0.7, \"points\": [], "
                           "\"fit\": {\"family\": \"power\", \"p\": [0.9, 1.6]}}",
                           0, NULL);
    assert_int_equal(pfi_cl_decode_curve(p, &j), 1);
    assert_true(j.n_points >= 10);
    assert_true(fabs(j.cap_w[0] - 200) < 1e-9 && fabs(j.cap_w[j.n_points - 1] - 700) < 1e-9);
    assert_true(j.tput[0] < j.tput[j.n_points - 1]);
    assert_true(fabs(j.tput[j.n_points - 1] - 1.0) < 0.02);
    json_decref(p);
    /* Unusable: one point, unknown family, caps not increasing. */
    const char *bad[] = {"{\"points\": [{\"cap_w\": 300, \"rel\": 0.7}]}",
                         "{\"points\": [], \"fit\": {\"family\": \"nope\", \"p\": [1]}, "
                         "\"min_cap_w\": 200, \"max_cap_w\": 700, \"p0_w\": 600}",
                         "{\"cap_w\": [500, 400], \"tput\": [1, 2]}"};
    for (int k = 0; k < 3; k++) {
        memset(&j, 0, sizeof j);
        json_t *d = json_loads(bad[k], 0, NULL);
        assert_non_null(d);
        assert_int_equal(pfi_cl_decode_curve(d, &j), 0);
        assert_int_equal(j.has_curve, 0);
        json_decref(d);
    }
}

/* Shapes as Slurm 22.05 prints them (trimmed to the fields read). */
static const char *SINFO =
    "{\"nodes\": [{\"name\": \"a1\", \"address\": \"10.0.0.1\", \"gres\": \"gpu:4\", "
    "\"state\": \"mixed\"}, {\"name\": \"a2\", \"address\": \"10.0.0.2\", "
    "\"gres\": \"gpu:h100:8(S:0-1)\", \"state\": \"idle\"}, {\"name\": \"c1\", \"gres\": \"\", "
    "\"state\": \"idle\"}]}";
static const char *SQUEUE =
    "{\"jobs\": [{\"job_id\": 7, \"job_state\": \"RUNNING\", \"gres_detail\": "
    "[\"gpu:2(IDX:0-1)\", \"gpu:h100:3(IDX:0,2-3)\"], \"job_resources\": {\"allocated_nodes\": "
    "[{\"nodename\": \"a1\"}, {\"nodename\": \"a2\"}]}}, {\"job_id\": 8, \"job_state\": "
    "\"PENDING\", \"gres_detail\": []}, {\"job_id\": 9, \"job_state\": \"RUNNING\", "
    "\"gres_detail\": [], \"job_resources\": {\"allocated_nodes\": [{\"nodename\": \"c1\"}]}}]}";

static void test_topo_slurm(void **state)
{
    pfi_cl_topo t;
    pfi_err e = {0};
    assert_int_equal(pfi_cl_topo_parse_slurm(SINFO, SQUEUE, &t, &e), PFI_OK);
    assert_int_equal(t.n_nodes, 3);
    assert_int_equal(t.nodes[0].n_gpus, 4);
    assert_int_equal(t.nodes[1].n_gpus, 8);
    assert_int_equal(t.nodes[2].n_gpus, 0);
    assert_string_equal(t.nodes[0].addr, "10.0.0.1");
    assert_int_equal(t.n_jobs, 1); /* pending and GPU-less jobs are not ours */
    assert_string_equal(t.jobs[0].id, "7");
    assert_int_equal(t.jobs[0].n_parts, 2);
    assert_int_equal(t.jobs[0].parts[1].node, 1);
    assert_int_equal(t.jobs[0].parts[1].n_gpus, 3);
    assert_int_equal(t.jobs[0].parts[1].gpus[2], 3);
    pfi_cl_topo_free(&t);

    /* A job on a node sinfo does not know: refused, naming both. */
    const char *bad = "{\"jobs\": [{\"job_id\": 5, \"job_state\": \"RUNNING\", \"gres_detail\": "
                      "[\"gpu:1(IDX:0)\"], \"job_resources\": {\"allocated_nodes\": "
                      "[{\"nodename\": \"zz9\"}]}}]}";
    assert_int_equal(pfi_cl_topo_parse_slurm(SINFO, bad, &t, &e), PFI_ENOENT);
    assert_non_null(strstr(e.msg, "zz9"));
    assert_int_equal(pfi_cl_topo_parse_slurm("not json", SQUEUE, &t, &e), PFI_EINVAL);
}

/* pfi's own topology file: a job, a job's node or a GPU given twice is refused, naming it.  A
 * GPU in two jobs (or twice in one) was taken, got two caps (the last set won) and was counted
 * twice in the site's cap sum (tried: a site at 9000 W "held" 9000 W with 8800 W set). */
static void test_topo_json_overlaps(void **state)
{
    static const char *const bad[][2] = {
        {"{\"nodes\": [{\"name\": \"n1\", \"gpus\": 8}], \"jobs\": [{\"id\": \"j1\", "
         "\"parts\": [{\"node\": \"n1\", \"gpus\": [0, 0]}]}]}",
         "GPU 0 of node n1 is already given"},
        {"{\"nodes\": [{\"name\": \"n1\", \"gpus\": 8}], \"jobs\": [{\"id\": \"j1\", "
         "\"parts\": [{\"node\": \"n1\", \"gpus\": [0, 1]}]}, {\"id\": \"j2\", \"parts\": "
         "[{\"node\": \"n1\", \"gpus\": [2, 1]}]}]}",
         "job j2: GPU 1 of node n1 is already given"},
        {"{\"nodes\": [{\"name\": \"n1\", \"gpus\": 8}], \"jobs\": [{\"id\": \"j1\", "
         "\"parts\": [{\"node\": \"n1\", \"gpus\": [0]}]}, {\"id\": \"j1\", \"parts\": "
         "[{\"node\": \"n1\", \"gpus\": [1]}]}]}",
         "job j1 listed twice"},
        {"{\"nodes\": [{\"name\": \"n1\", \"gpus\": 8}], \"jobs\": [{\"id\": \"j1\", "
         "\"parts\": [{\"node\": \"n1\", \"gpus\": [0]}, {\"node\": \"n1\", \"gpus\": [1]}]}]}",
         "job j1: node n1 listed twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pfi_cl_topo t;
        pfi_err e = {0};
        int rc = pfi_cl_topo_parse_json(bad[i][0], &t, &e);
        if (rc != PFI_EINVAL || !strstr(e.msg, bad[i][1]))
            fail_msg("topology %zu: rc %d, '%s'", i, rc, e.msg);
    }
    /* The same GPU index on two nodes, and the 64th GPU, are two different GPUs. */
    const char *good = "{\"nodes\": [{\"name\": \"n1\", \"gpus\": 64}, {\"name\": \"n2\", "
                       "\"gpus\": 8}], \"jobs\": [{\"id\": \"j1\", \"parts\": [{\"node\": "
                       "\"n1\", \"gpus\": [0, 63]}]}, {\"id\": \"j2\", \"parts\": [{\"node\": "
                       "\"n2\", \"gpus\": [0]}, {\"node\": \"n1\", \"gpus\": [1]}]}]}";
    pfi_cl_topo t;
    pfi_err e = {0};
    assert_int_equal(pfi_cl_topo_parse_json(good, &t, &e), PFI_OK);
    assert_int_equal(t.n_jobs, 2);
    assert_int_equal(t.jobs[0].parts[0].gpus[1], 63);
    assert_int_equal(t.jobs[1].n_parts, 2);
    pfi_cl_topo_free(&t);
}

/* ---- a Slurm that hangs ---- */

typedef struct refresher {
    pfi_cl *c;
    int rc;
    atomic_int done;
} refresher;

static void *refresh_main(void *arg)
{
    refresher *r = arg;
    pfi_err e = {0};
    r->rc = pfi_cl_refresh(r->c, &e);
    atomic_store(&r->done, 1);
    return NULL;
}

static void test_slurm_timeout_rule(void **state)
{
    pfi_cl_config cfg;
    pfi_cl_config_defaults(&cfg);
    assert_true(pfi_cl_slurm_timeout(&cfg) == (cfg.node_ttl_s - cfg.heartbeat_s) / 2);
    cfg.node_ttl_s = 0; /* no watchdog */
    assert_true(pfi_cl_slurm_timeout(&cfg) == 60);
    cfg.node_ttl_s = 4; /* a period longer than the watchdog: the floor */
    assert_true(pfi_cl_slurm_timeout(&cfg) == 1);
    cfg.node_ttl_s = 1000;
    assert_true(pfi_cl_slurm_timeout(&cfg) == 60);
}

/* sinfo that hangs until told: the query is cut at its timeout, and while it hangs a budget
 * change is answered (the query runs outside the controller's operation lock). */
static void test_slurm_hangs(void **state)
{
    char dir[400], path[500], text[2048];
    const char *base = getenv("PFI_TEST_TMP");
    snprintf(dir, sizeof dir, "%s/slurm.XXXXXX", base ? base : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/sinfo.json", dir);
    pfi_test_put_mode(path, SINFO, 0644);
    snprintf(path, sizeof path, "%s/squeue.json", dir);
    pfi_test_put_mode(path, SQUEUE, 0644);
    snprintf(text, sizeof text,
             "#!/bin/sh\n: > '%s/started'\nwhile [ ! -e '%s/go' ]; do sleep 0.02; done\n"
             "exec cat '%s/sinfo.json'\n", dir, dir, dir);
    snprintf(path, sizeof path, "%s/sinfo", dir);
    pfi_test_put_mode(path, text, 0755);
    snprintf(text, sizeof text, "#!/bin/sh\nexec cat '%s/squeue.json'\n", dir);
    snprintf(path, sizeof path, "%s/squeue", dir);
    pfi_test_put_mode(path, text, 0755);
    const char *old = getenv("PATH");
    char *saved = strdup(old ? old : "/usr/bin:/bin");
    char newpath[4096];
    snprintf(newpath, sizeof newpath, "%s:%s", dir, saved);
    assert_int_equal(setenv("PATH", newpath, 1), 0);

    /* Cut at its timeout, naming the command. */
    pfi_cl_topo t;
    pfi_err e = {0};
    assert_int_equal(pfi_cl_topo_from_slurm(0.3, &t, &e), PFI_ETIMEOUT);
    assert_non_null(strstr(e.msg, "sinfo"));
    assert_int_equal(pfi_cl_topo_from_slurm(0, &t, &e), PFI_EINVAL);
    /* Answering, it is read through the same path. */
    char go[500], started[500];
    snprintf(go, sizeof go, "%s/go", dir);
    snprintf(started, sizeof started, "%s/started", dir);
    pfi_test_put_mode(go, "", 0644);
    assert_int_equal(pfi_cl_topo_from_slurm(30, &t, &e), PFI_OK);
    assert_int_equal(t.n_nodes, 3);
    assert_int_equal(t.n_jobs, 1);
    pfi_cl_topo_free(&t);
    assert_int_equal(unlink(go), 0);
    unlink(started);

    /* A controller asking Slurm: a budget change while sinfo hangs. */
    pfi_cl_config cfg;
    pfi_cl_config_defaults(&cfg);
    snprintf(cfg.node_url, sizeof cfg.node_url, "http://127.0.0.1:1/%%n");
    cfg.timeout_s = 0.2;
    cfg.heartbeat_s = 0;
    pfi_cl *c;
    assert_int_equal(pfi_cl_open(&cfg, &c, &e), PFI_OK);
    refresher r = {.c = c};
    atomic_init(&r.done, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, refresh_main, &r), 0);
    struct stat st;
    for (int i = 0; i < 3000 && stat(started, &st) != 0; i++)
        usleep(10000);
    assert_int_equal(stat(started, &st), 0);
    pfi_cl_budget b = {.set = 1, .watts = 5000, .ramp_s = 0};
    (void)pfi_cl_set_budget(c, &b, &e); /* no node known yet: whatever it answers, it answers */
    assert_int_equal(atomic_load(&r.done), 0);
    pfi_test_put_mode(go, "", 0644);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(r.rc, PFI_OK);
    pfi_cl_close(c);

    assert_int_equal(setenv("PATH", saved, 1), 0);
    free(saved);
    const char *files[] = {"sinfo", "squeue", "sinfo.json", "squeue.json", "go", "started"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* ---- a small site on stand-ins ---- */

#define NN 4
#define NG 4
static const char *NAMES[NN] = {"n1", "n2", "n3", "n4"};

typedef struct site {
    pfi_standin *s;
    pfi_cl *c;
    char dir[256], topo[300];
} site;

/* Slurm's view of the site as the controller reads it: jobs A (101) and B (102), with or
 * without C (103), or a job on a node Slurm does not list. */
#define TOPO_NODES                                                                                 \
    "{\"nodes\": [{\"name\": \"n1\", \"gpus\": 4}, {\"name\": \"n2\", \"gpus\": 4}, "              \
    "{\"name\": \"n3\", \"gpus\": 4}, {\"name\": \"n4\", \"gpus\": 4}], "
#define TOPO_JOBS_AB                                                                               \
    "\"jobs\": [{\"id\": \"101\", \"parts\": "                                                     \
    "[{\"node\": \"n1\", \"gpus\": [0,1,2,3]}, {\"node\": \"n2\", \"gpus\": [0,1,2,3]}]}, "        \
    "{\"id\": \"102\", \"parts\": [{\"node\": \"n3\", \"gpus\": [0,1]}]}"
static const char *const TOPO_AB = TOPO_NODES TOPO_JOBS_AB "]}";
#define TOPO_NODES_N4_TWO                                                                          \
    "{\"nodes\": [{\"name\": \"n1\", \"gpus\": 4}, {\"name\": \"n2\", \"gpus\": 4}, "              \
    "{\"name\": \"n3\", \"gpus\": 4}, {\"name\": \"n4\", \"gpus\": 2}], "
static const char *const TOPO_ABC =
    TOPO_NODES TOPO_JOBS_AB ", {\"id\": \"103\", \"parts\": [{\"node\": \"n4\", \"gpus\": [0]}]}]}";
static const char *const TOPO_GHOST = "{\"nodes\": [{\"name\": \"n1\", \"gpus\": 4}], \"jobs\": "
                                      "[{\"id\": \"1\", \"parts\": [{\"node\": \"ghost\", "
                                      "\"gpus\": [0]}]}]}";

static void write_topo(const site *x, const char *json)
{
    FILE *f = fopen(x->topo, "w");
    assert_non_null(f);
    assert_true(fputs(json, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/* Job A spans n1 and n2 (8 GPUs), job B holds 2 GPUs of n3 with an SLA, job C 1 GPU of n4
 * without a curve; 5 GPUs stay idle. */
static void site_up_silent(site *x, const char *silent);
static void site_up(site *x)
{
    site_up_silent(x, NULL);
}

/* site_up with node `silent` (NULL: none) silent from the start: it never answers. */
static void site_up_silent(site *x, const char *silent)
{
    pfi_err e = {0};
    int port;
    const char *base = getenv("PFI_TEST_TMP");
    snprintf(x->dir, sizeof x->dir, "%s/cluster.XXXXXX", base ? base : "/tmp");
    assert_non_null(mkdtemp(x->dir));
    assert_int_equal(pfi_standin_start(NN, NAMES, NG, 200, 700, &x->s, &port, &e), PFI_OK);
    static const int all4[] = {0, 1, 2, 3}, two[] = {0, 1}, one[] = {0};
    /* Convex-ish curves: A loses little until deep cuts, B is steep. */
    static const double ca[] = {200, 300, 400, 500, 600, 700};
    static const double ta[] = {0.55, 0.75, 0.88, 0.95, 0.99, 1.0};
    static const double cb[] = {200, 450, 700};
    static const double tb[] = {0.30, 0.70, 1.0};
    pfi_standin_job ja = {"101", "n1", 4, all4, NAN, 1, 6, ca, ta, 650, 1.0};
    pfi_standin_job ja2 = {"101", "n2", 4, all4, NAN, 1, 6, ca, ta, 650, 1.0};
    pfi_standin_job jb = {"102", "n3", 2, two, 0.10, 2, 3, cb, tb, 690, 1.0};
    pfi_standin_job jc = {"103", "n4", 1, one, NAN, 1, 0, NULL, NULL, 0, 0};
    assert_int_equal(pfi_standin_add_job(x->s, &ja, &e), PFI_OK);
    assert_int_equal(pfi_standin_add_job(x->s, &ja2, &e), PFI_OK);
    assert_int_equal(pfi_standin_add_job(x->s, &jb, &e), PFI_OK);
    assert_int_equal(pfi_standin_add_job(x->s, &jc, &e), PFI_OK);
    if (silent)
        pfi_standin_set_silent(x->s, silent, 1);
    snprintf(x->topo, sizeof x->topo, "%s/topo.json", x->dir);
    write_topo(x, TOPO_ABC);
    pfi_cl_config cfg;
    pfi_cl_config_defaults(&cfg);
    snprintf(cfg.node_url, sizeof cfg.node_url, "http://127.0.0.1:%d/n/%%n", port);
    snprintf(cfg.topo_file, sizeof cfg.topo_file, "%s", x->topo);
    cfg.timeout_s = 1.0;
    cfg.heartbeat_s = 0;
    assert_int_equal(pfi_cl_open(&cfg, &x->c, &e), PFI_OK);
    assert_int_equal(pfi_cl_refresh(x->c, &e), PFI_OK);
}

/* A store and its WAL files, removed. */
static void rm_db(const char *db)
{
    char f[500];
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(f, sizeof f, "%s%s", db, suffix[i]);
        unlink(f);
    }
}

static void site_down(site *x)
{
    pfi_cl_close(x->c);
    pfi_standin_stop(x->s);
    unlink(x->topo);
    rmdir(x->dir);
}

static int set_budget(site *x, double w, pfi_err *e)
{
    pfi_cl_budget b = {.set = 1, .watts = w, .ramp_s = 0};
    return pfi_cl_set_budget(x->c, &b, e);
}

static void test_cut_and_restore(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    double full = pfi_cl_site_default_w(x.c);
    assert_true(fabs(full - NN * NG * 700.0) < 1e-6);
    double b;
    assert_int_equal(pfi_cl_parse_budget(x.c, "cut=30%", &b, &e), PFI_OK);
    assert_true(fabs(b - 0.7 * full) < 1e-6);
    pfi_standin_reset_peak(x.s);
    assert_int_equal(set_budget(&x, b, &e), PFI_OK);
    assert_true(pfi_standin_cap_sum(x.s) <= b + 1e-6);
    /* Going down from an unbudgeted site, the sum only falls. */
    assert_true(pfi_standin_peak(x.s) <= full + 1e-6);
    /* One cap for the whole multi-node job, on both nodes. */
    double a = pfi_standin_cap(x.s, "n1", 0);
    for (int g = 0; g < 4; g++) {
        assert_true(fabs(pfi_standin_cap(x.s, "n1", g) - a) < 1e-9);
        assert_true(fabs(pfi_standin_cap(x.s, "n2", g) - a) < 1e-9);
    }
    /* Job B's SLA (10% slowdown) on its curve: T >= 0.9 needs cap >= 616.7 W. */
    assert_true(pfi_standin_cap(x.s, "n3", 0) >= 616 - 1e-6);
    /* Idle GPUs were parked before jobs lost anything they need. */
    assert_true(pfi_standin_cap(x.s, "n3", 3) < 700);

    /* Raising again: every instant within the new budget. */
    double b2 = 0.95 * full;
    pfi_standin_reset_peak(x.s);
    assert_int_equal(set_budget(&x, b2, &e), PFI_OK);
    assert_true(pfi_standin_peak(x.s) <= b2 + 1e-6);

    /* Budget removed: every GPU back at its default. */
    pfi_cl_budget none = {.set = 0, .watts = 0, .ramp_s = 0};
    assert_int_equal(pfi_cl_set_budget(x.c, &none, &e), PFI_OK);
    assert_true(fabs(pfi_standin_cap_sum(x.s) - full) < 1e-6);
    site_down(&x);
}

/* A node Slurm stops listing (deleted, its GRES no longer reported) keeps being counted while
 * the controller runs: it answered before and may hold this controller's caps.  Forgotten at
 * once, its share went to the other nodes while its caps stayed in force (a 10,000 W site
 * held 14,504 W).  Answering, it is planned as idle GPUs; silent, at the caps it holds. */
static void test_departed_node_counted(void **state)
{
    for (int silent = 0; silent < 2; silent++) {
        site x;
        site_up(&x);
        pfi_err e = {0};
        double b = 0.6 * pfi_cl_site_default_w(x.c);
        assert_int_equal(set_budget(&x, b, &e), PFI_OK);
        assert_true(pfi_standin_cap_sum(x.s) <= b + 1e-6);
        if (silent)
            pfi_standin_set_silent(x.s, "n4", 1);
        write_topo(&x, "{\"nodes\": [{\"name\": \"n1\", \"gpus\": 4}, {\"name\": \"n2\", "
                       "\"gpus\": 4}, {\"name\": \"n3\", \"gpus\": 4}], " TOPO_JOBS_AB "]}");
        pfi_standin_reset_peak(x.s);
        assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
        int rc = set_budget(&x, b, &e); /* planned again without n4's job */
        assert_true(rc == PFI_OK || silent);
        pfi_cl_heartbeat(x.c);
        assert_true(pfi_standin_peak(x.s) <= b + 1e-6);
        assert_true(pfi_standin_cap_sum(x.s) <= b + 1e-6);
        json_t *d = pfi_cl_json_nodes(x.c);
        json_t *nodes = json_object_get(d, "nodes");
        assert_int_equal(json_array_size(nodes), 4);
        json_t *n4 = json_array_get(nodes, 3);
        assert_string_equal(json_string_value(json_object_get(n4, "name")), "n4");
        assert_true(json_is_true(json_object_get(n4, "departed")));
        if (!silent) /* answering: its GPUs idle, at their minimum */
            for (int g = 0; g < NG; g++)
                assert_true(fabs(pfi_standin_cap(x.s, "n4", g) - 200) < 1e-6);
        json_decref(d);
        /* n4's daemon, the same boot id, now answering as n3 (a node renamed in Slurm): its
         * GPUs are n3's, not counted a second time as departed. */
        if (!silent) {
            snprintf(x.c->nodes[2].boot_id, sizeof x.c->nodes[2].boot_id, "boot-n4");
            snprintf(x.c->nodes[3].boot_id, sizeof x.c->nodes[3].boot_id, "boot-n4");
            assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
            d = pfi_cl_json_nodes(x.c);
            assert_int_equal(json_array_size(json_object_get(d, "nodes")), 3);
            json_decref(d);
        }
        /* Listed again: no longer departed. */
        write_topo(&x, TOPO_ABC);
        pfi_standin_set_silent(x.s, "n4", 0);
        assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
        d = pfi_cl_json_nodes(x.c);
        assert_true(json_is_false(json_object_get(json_array_get(json_object_get(d, "nodes"), 3),
                                                  "departed")));
        json_decref(d);
        site_down(&x);
    }
}

/* Waves are numbered above the last epoch a node says it applied (a controller restarted
 * after its clock went back, or a node that took epochs of a clock running ahead), per node:
 * a week ahead or 13 h ahead is believed for that node alone (the site trusted 12 h at most,
 * and a controller clock 13 h back sent only stale epochs: a cut stayed unmet); one saying
 * INT64_MAX is refused its caps as stale, and neither moves the other nodes' numbering off
 * the clock. */
static void test_node_epoch_per_node(void **state)
{
    for (int k = 0; k < 4; k++) {
        site x;
        site_up(&x);
        pfi_err e = {0};
        long long now_ms = (long long)(pfi_clock_wall() * 1000.0);
        long long said = k == 0   ? INT64_MAX
                         : k == 1 ? now_ms + 7LL * 86400 * 1000
                         : k == 2 ? now_ms + 13LL * 3600 * 1000
                                  : now_ms + 3600LL * 1000;
        pfi_standin_set_epoch(x.s, "n1", said);
        assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
        double b = 0.6 * pfi_cl_site_default_w(x.c);
        int rc = set_budget(&x, b, &e);
        double others = 0;
        for (int i = 1; i < NN; i++)
            for (int g = 0; g < NG; g++)
                others += pfi_standin_cap(x.s, NAMES[i], g);
        if (!(others < (NN - 1) * NG * 700.0))
            fail_msg("case %d: the other nodes were not capped (%g W, %s)", k, others, e.msg);
        for (int i = 1; i < NN; i++) /* the others numbered off the clock, not off n1 */
            if (pfi_standin_epoch(x.s, NAMES[i]) > now_ms + 60000)
                fail_msg("case %d: node %s took epoch %lld, n1's word moved it", k, NAMES[i],
                         pfi_standin_epoch(x.s, NAMES[i]));
        if (k > 0) { /* believed: every node, n1 too, took the wave, above n1's epoch */
            if (rc != PFI_OK)
                fail_msg("case %d: %s", k, e.msg);
            assert_true(pfi_standin_cap_sum(x.s) <= b + 1e-6);
            assert_true(pfi_standin_epoch(x.s, "n1") > said);
            /* and the next wave goes above the one n1 took */
            long long took = pfi_standin_epoch(x.s, "n1");
            assert_int_equal(set_budget(&x, 0.5 * pfi_cl_site_default_w(x.c), &e), PFI_OK);
            assert_true(pfi_standin_epoch(x.s, "n1") > took);
        }
        site_down(&x);
    }
}

/* The controller names itself with its caps only to node daemons that say they take it
 * (caps_named): one older than the name refuses the field (400), and a new controller over old
 * nodes failed every wave, the budget never applied. */
static void test_caps_named_only_where_taken(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    double b = 0.6 * pfi_cl_site_default_w(x.c);
    if (set_budget(&x, b, &e) != PFI_OK)
        fail_msg("over nodes that do not say caps_named: %s", e.msg);
    assert_true(pfi_standin_cap_sum(x.s) <= b + 1e-6);
    char by[128];
    pfi_standin_caps_by(x.s, by, sizeof by);
    assert_string_equal(by, "");
    pfi_standin_set_named(x.s, 1);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    b = 0.5 * pfi_cl_site_default_w(x.c);
    assert_int_equal(set_budget(&x, b, &e), PFI_OK);
    pfi_standin_caps_by(x.s, by, sizeof by);
    assert_string_equal(by, x.c->cfg.name);
    site_down(&x);
}

static void test_random_budgets_never_over(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    double full = pfi_cl_site_default_w(x.c), prev = full;
    unsigned seed = 12345;
    for (int k = 0; k < 30; k++) {
        seed = seed * 1103515245u + 12345u;
        /* Between 45% (near the floor with B's SLA) and 100% of the site. */
        double w = full * (0.45 + 0.55 * ((seed >> 8) % 1000) / 1000.0);
        pfi_standin_reset_peak(x.s);
        int rc = set_budget(&x, w, &e);
        if (rc == PFI_EINFEASIBLE)
            continue;
        assert_int_equal(rc, PFI_OK);
        double bound = w > prev ? w : prev;
        assert_true(pfi_standin_peak(x.s) <= bound + 1e-6);
        assert_true(pfi_standin_cap_sum(x.s) <= w + 1e-6);
        prev = w;
    }
    site_down(&x);
}

static void test_infeasible_changes_nothing(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    double full = pfi_cl_site_default_w(x.c);
    assert_int_equal(set_budget(&x, 0.8 * full, &e), PFI_OK);
    double before = pfi_standin_cap_sum(x.s);
    long long req = pfi_standin_requests(x.s);
    /* Below 16 GPUs x 200 W. */
    assert_int_equal(set_budget(&x, 3000, &e), PFI_EINFEASIBLE);
    assert_non_null(strstr(e.msg, "3000"));
    /* Under a watt, as given (it read "site budget 0 W", which the "> 0" check refuses). */
    assert_int_equal(set_budget(&x, 0.4, &e), PFI_EINFEASIBLE);
    assert_non_null(strstr(e.msg, "site budget 0.4 W leaves"));
    /* Above every minimum but below what job B's SLA needs. */
    assert_int_equal(set_budget(&x, 16 * 200 + 300, &e), PFI_EINFEASIBLE);
    assert_non_null(strstr(e.msg, "least feasible site budget"));
    assert_true(fabs(pfi_standin_cap_sum(x.s) - before) < 1e-9);
    assert_int_equal(pfi_standin_requests(x.s), req); /* not one request sent */
    assert_int_equal(pfi_cl_parse_budget(x.c, "cut=30W", &before, &e), PFI_EINVAL);
    assert_int_equal(pfi_cl_parse_budget(x.c, "-5W", &before, &e), PFI_ERANGE);
    site_down(&x);
}

static void test_silent_node(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    double full = pfi_cl_site_default_w(x.c);
    assert_int_equal(set_budget(&x, 0.8 * full, &e), PFI_OK);
    double n2cap = pfi_standin_cap(x.s, "n2", 0);
    pfi_standin_set_silent(x.s, "n2", 1);
    pfi_cl_heartbeat(x.c); /* finds n2 silent before the budget moves */
    double w = 0.75 * full;
    assert_int_equal(set_budget(&x, w, &e), PFI_OK);
    /* n2 kept its caps; the site, n2 included, is within the budget. */
    assert_true(fabs(pfi_standin_cap(x.s, "n2", 0) - n2cap) < 1e-9);
    assert_true(pfi_standin_cap_sum(x.s) <= w + 1e-6);
    /* The job spanning n2 is pinned: its n1 half did not move either. */
    assert_true(fabs(pfi_standin_cap(x.s, "n1", 0) - n2cap) < 1e-9);
    json_t *nodes = pfi_cl_json_nodes(x.c);
    json_t *n2 = json_array_get(json_object_get(nodes, "nodes"), 1);
    assert_string_equal(json_string_value(json_object_get(n2, "name")), "n2");
    assert_true(json_is_false(json_object_get(n2, "up")));
    assert_true(json_is_true(json_object_get(n2, "counted_at_last_caps")));
    json_decref(nodes);
    /* Back: the next refresh finds it and the job moves again. */
    pfi_standin_set_silent(x.s, "n2", 0);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    assert_int_equal(pfi_cl_reapply(x.c, &e), PFI_OK);
    assert_true(pfi_standin_cap_sum(x.s) <= w + 1e-6);
    assert_true(fabs(pfi_standin_cap(x.s, "n1", 0) - pfi_standin_cap(x.s, "n2", 0)) < 1e-9);
    site_down(&x);
}

/* A silent node's last draw is not current: /metrics (its pfi_cluster_node_power_watts series
 * and the site's pfi_cluster_power_watts), /v1/nodes (its power_w and its GPUs') and the status
 * page, which sums /v1/nodes, leave it out, as the site's power history already did; they
 * showed the draw of the last refresh it answered for as long as it stayed silent.  (The
 * stand-ins report no draw: the draws the last refresh read are set here.) */
static void test_silent_node_draw_left_out(void **state)
{
    site x;
    site_up(&x);
    pthread_mutex_lock(&x.c->mu);
    for (int i = 0; i < x.c->n_nodes; i++)
        for (int g = 0; g < x.c->nodes[i].n_gpus; g++)
            x.c->nodes[i].power_w[g] = 100 + 10 * i + g; /* n1 406 W, n2 446, n3 486, n4 526 */
    pthread_mutex_unlock(&x.c->mu);
    char *m = pfi_cl_metrics(x.c);
    assert_non_null(strstr(m, "\npfi_cluster_node_power_watts{node=\"n2\"} 446\n"));
    assert_non_null(strstr(m, "\npfi_cluster_power_watts 1864\n"));
    free(m);
    pfi_standin_set_silent(x.s, "n2", 1);
    pfi_cl_heartbeat(x.c);
    assert_false(x.c->nodes[1].up);
    m = pfi_cl_metrics(x.c);
    assert_non_null(strstr(m, "\npfi_cluster_node_up{node=\"n2\"} 0\n"));
    if (strstr(m, "\npfi_cluster_node_power_watts{node=\"n2\"}"))
        fail_msg("the silent n2 still shows its last draw in /metrics");
    assert_non_null(strstr(m, "\npfi_cluster_node_power_watts{node=\"n1\"} 406\n"));
    const char *site_w = strstr(m, "\npfi_cluster_power_watts ");
    assert_non_null(site_w);
    if (strtod(site_w + strlen("\npfi_cluster_power_watts "), NULL) != 1418)
        fail_msg("site draw %.17g W with n2 silent; the answering nodes drew 1418 W",
                 strtod(site_w + strlen("\npfi_cluster_power_watts "), NULL));
    /* its caps still count, at the ones it last acknowledged */
    assert_non_null(strstr(m, "\npfi_cluster_node_cap_watts{node=\"n2\"} "));
    free(m);
    json_t *nodes = pfi_cl_json_nodes(x.c);
    json_t *n1 = json_array_get(json_object_get(nodes, "nodes"), 0);
    json_t *n2 = json_array_get(json_object_get(nodes, "nodes"), 1);
    assert_string_equal(json_string_value(json_object_get(n2, "name")), "n2");
    assert_true(json_is_null(json_object_get(n2, "power_w")));
    json_t *gpus = json_object_get(n2, "gpus");
    assert_int_equal(json_array_size(gpus), NG);
    for (size_t g = 0; g < json_array_size(gpus); g++) {
        assert_true(json_is_null(json_object_get(json_array_get(gpus, g), "power_w")));
        assert_true(json_is_number(json_object_get(json_array_get(gpus, g), "cap_w")));
    }
    assert_true(fabs(json_number_value(json_object_get(n1, "power_w")) - 406) < 1e-9);
    json_decref(nodes);
    site_down(&x);
}

/* What the monitoring shows of silent nodes is what the plan counts: a node that never answered
 * is counted at its GPUs' maximum (the series said 0 W, the site's sum of caps and the page left
 * those watts out while the plan reserved them), and the reservation has its series; a job
 * whose node is silent keeps its last SLA and PFI30, marked (the page said "no SLA"). */
static void test_silent_nodes_shown(void **state)
{
    site x;
    site_up_silent(&x, "n4");
    pfi_err e = {0};
    assert_int_equal(set_budget(&x, 0.9 * (NN - 1) * NG * 700, &e), PFI_OK);
    char *m = pfi_cl_metrics(x.c);
    assert_non_null(strstr(m, "\npfi_cluster_node_cap_watts{node=\"n4\"} 2800\n"));
    assert_non_null(strstr(m, "\npfi_cluster_reserved_watts "));
    json_t *a = pfi_cl_json_allocation(x.c);
    json_t *nodes = pfi_cl_json_nodes(x.c);
    char want[64];
    snprintf(want, sizeof want, "\npfi_cluster_cap_sum_watts %.17g\n",
             json_real_value(json_object_get(a, "cap_sum_w")));
    assert_non_null(strstr(m, want));
    double sum = 0;
    for (size_t i = 0; i < json_array_size(json_object_get(nodes, "nodes")); i++) {
        json_t *n = json_array_get(json_object_get(nodes, "nodes"), i);
        sum += json_real_value(json_object_get(n, "cap_sum_w"));
        assert_true(json_is_boolean(json_object_get(n, "caps_known")));
        if (!strcmp(json_string_value(json_object_get(n, "name")), "n4"))
            assert_true(json_is_false(json_object_get(n, "caps_known")));
    }
    assert_true(fabs(sum - json_real_value(json_object_get(a, "cap_sum_w"))) < 1e-6);
    assert_true(json_real_value(json_object_get(a, "cap_sum_w")) <= 0.9 * (NN - 1) * NG * 700 +
                                                                       4 * 700 + 1e-6);
    free(m);
    json_decref(a);
    json_decref(nodes);
    /* job 102 (SLA 10%) on n3: n3 goes silent */
    pfi_standin_set_silent(x.s, "n3", 1);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    json_t *jobs = pfi_cl_json_jobs(x.c);
    json_t *j102 = NULL;
    for (size_t i = 0; i < json_array_size(json_object_get(jobs, "jobs")); i++) {
        json_t *j = json_array_get(json_object_get(jobs, "jobs"), i);
        if (!strcmp(json_string_value(json_object_get(j, "id")), "102"))
            j102 = j;
    }
    assert_non_null(j102);
    assert_true(json_is_true(json_object_get(j102, "pinned")));
    assert_true(json_is_true(json_object_get(j102, "last_known")));
    assert_true(fabs(json_real_value(json_object_get(j102, "sla")) - 0.10) < 1e-12);
    json_decref(jobs);
    m = pfi_cl_metrics(x.c);
    assert_non_null(strstr(m, "\npfi_cluster_job_sla_max_slowdown{job_id=\"102\"} 0.1"));
    free(m);
    site_down(&x);
}

/* A budget the silent nodes leave no room for says which node holds the watts and why, in the
 * operator's terms (docs/cluster.md's rule: held at its last caps, else its GPUs' maximum); it
 * said only "held by 4 GPUs of silent nodes and pinned jobs", and a share such as 70% had left
 * a node that never answered out of its 100% while holding that node's maximum. */
static void test_silent_from_start_said(void **state)
{
    site x;
    site_up_silent(&x, "n3");
    pfi_err e = {0};
    double w;
    /* the share is of the GPUs whose limits are known: n3's are not */
    assert_int_equal(pfi_cl_parse_budget(x.c, "70%", &w, &e), PFI_OK);
    assert_true(fabs(w - 0.7 * (NN - 1) * NG * 700) < 1e-6);
    long long req = pfi_standin_requests(x.s);
    assert_int_equal(set_budget(&x, 3000, &e), PFI_EINFEASIBLE);
    fprintf(stderr, "%s\n", e.msg);
    assert_non_null(strstr(e.msg, "held by 4 GPUs of silent nodes and pinned jobs [silent: n3 "
                                  "(never answered), held at the caps last acknowledged, else the "
                                  "GPUs' maximum: a node that does not answer cannot be capped; "
                                  "one never answered is not in a share's 100%]"));
    assert_non_null(strstr(e.msg, "least feasible site budget"));
    assert_int_equal(pfi_standin_requests(x.s), req); /* nothing sent */
    site_down(&x);
    /* With n4 silent, job 102's SLA is planned: 5500 W leaves the jobs more than their minimum
     * caps but less than the SLAs need.  The allocator's reason and advice, last, must survive
     * the message's 511 bytes (they were cut at "relax-sl"); the silent node is then only named. */
    site_up_silent(&x, "n4");
    assert_int_equal(set_budget(&x, 5500, &e), PFI_EINFEASIBLE);
    const char *tail = "or raise the budget";
    size_t ml = strlen(e.msg);
    if (ml < strlen(tail) || strcmp(e.msg + ml - strlen(tail), tail) != 0)
        fail_msg("message cut: %s", e.msg);
    assert_non_null(strstr(e.msg, "that the SLAs need"));
    assert_non_null(strstr(e.msg, "pinned jobs [silent: n4 (never answered)] and"));
    site_down(&x);
    site_up_silent(&x, "n3");
    /* A node that answered once is silent "at its last caps", not "never answered". */
    pfi_standin_set_silent(x.s, "n3", 0);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    pfi_standin_set_silent(x.s, "n2", 1);
    pfi_standin_set_silent(x.s, "n3", 1);
    pfi_cl_heartbeat(x.c);
    assert_int_equal(set_budget(&x, 3000, &e), PFI_EINFEASIBLE);
    assert_non_null(strstr(e.msg, "[silent: n2 and 1 more, held at the caps last acknowledged, "
                                  "else the GPUs' maximum: a node that does not answer cannot be "
                                  "capped]"));
    site_down(&x);
}

/* A node that answered the last refresh but not the lowering of a budget change: the budget
 * was feasible when asked, so it is taken, and its apply plans again with that node counted at
 * its old caps, which no longer fits.  The budget is then in force (the lowerings made stand),
 * so the answer must say so, not EINFEASIBLE, which the API answers as 409 "nothing changed":
 * it said that, while the budget it called refused was in force and the next refresh applied
 * it.  Who applies the rest depends on the loop (loop: c->loop_running during the change): with
 * it the controller does as nodes answer, and the message says so; without it (heartbeat 0)
 * nothing does until the next refresh or budget change, and the message must not promise it.
 * Only the flag is set, no thread, so the apply is the same one and the test has no timing;
 * it is cleared before pfi_cl_close, which would join the thread. */
static void silent_during_cut(int loop)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    double full = pfi_cl_site_default_w(x.c);
    assert_int_equal(set_budget(&x, 0.8 * full, &e), PFI_OK);
    pfi_standin_set_silent(x.s, "n2", 1); /* no heartbeat: the controller counts it up */
    /* Feasible with n2 up (A 8 x 200 W, B's SLA 2 x 617 W, C and 5 idle GPUs at 200 W: 4034 W),
     * not with job A held at its caps of the 80% budget. */
    double w = 16 * 200 + 1300;
    x.c->loop_running = loop;
    int rc = set_budget(&x, w, &e);
    x.c->loop_running = 0;
    assert_int_not_equal(rc, PFI_OK);
    if (rc == PFI_EINFEASIBLE)
        fail_msg("answered as refused (409, nothing changed) while the budget is set: %s", e.msg);
    assert_true(x.c->budget.set);
    assert_true(x.c->budget.watts == w);
    if (!strstr(e.msg, "in force"))
        fail_msg("the message does not say the budget is in force: %s", e.msg);
    if (loop && !strstr(e.msg, "the controller applies it as nodes answer"))
        fail_msg("with the loop running, the message does not say it applies it: %s", e.msg);
    if (!loop && (strstr(e.msg, "as nodes answer") || !strstr(e.msg, "no loop runs")))
        fail_msg("without a loop, the message promises what no loop does: %s", e.msg);
    /* n2 answers again: the budget it said was in force is met. */
    pfi_standin_set_silent(x.s, "n2", 0);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    assert_int_equal(pfi_cl_reapply(x.c, &e), PFI_OK);
    assert_true(pfi_standin_cap_sum(x.s) <= w + 1e-6);
    site_down(&x);
}

/* A node whose daemon has more GPUs than Slurm lists (gres.conf naming some): managed while it
 * answers; gone silent, its GPUs beyond Slurm's count still hold the caps they acknowledged.
 * Counted back at Slurm's count, their watts went to the other nodes: 800 W over in a review. */
static void test_silent_node_extra_gpus_counted(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    write_topo(&x, TOPO_NODES_N4_TWO TOPO_JOBS_AB
               ", {\"id\": \"103\", \"parts\": [{\"node\": \"n4\", \"gpus\": [0]}]}]}");
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    assert_int_equal(x.c->nodes[3].n_gpus, NG); /* the daemon's four */
    double full = pfi_cl_site_default_w(x.c);
    double w = 0.6 * full;
    assert_int_equal(set_budget(&x, w, &e), PFI_OK);
    assert_true(pfi_standin_cap_sum(x.s) <= w + 1e-6);
    pfi_standin_set_silent(x.s, "n4", 1);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
        assert_int_equal(pfi_cl_reapply(x.c, &e), PFI_OK);
    }
    assert_false(x.c->nodes[3].up);
    assert_int_equal(x.c->nodes[3].n_gpus, NG);
    pfi_standin_reset_peak(x.s);
    assert_int_equal(set_budget(&x, 0.65 * full, &e), PFI_OK);
    if (pfi_standin_peak(x.s) > 0.65 * full + 1e-6)
        fail_msg("site at %.0f W over a %.0f W budget with n4 silent", pfi_standin_peak(x.s),
                 0.65 * full);
    site_down(&x);
}

/* The re-plan of every heartbeat that changes nothing is neither counted nor timed as an
 * apply: its microseconds buried the real changes (pfi_cluster_apply_seconds showed a no-op,
 * the histogram's count grew every heartbeat, and an alert on slow applies never fired). */
static void test_noop_reapply_not_counted(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    double full = pfi_cl_site_default_w(x.c);
    assert_int_equal(set_budget(&x, 0.8 * full, &e), PFI_OK);
    long long n0 = x.c->stats.n_apply;
    unsigned long long h0 = x.c->apply_hist.count;
    double last0 = x.c->stats.last_apply_s;
    assert_true(n0 >= 1 && h0 == (unsigned long long)n0);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
        assert_int_equal(pfi_cl_reapply(x.c, &e), PFI_OK);
    }
    assert_int_equal(x.c->stats.n_apply, n0);
    assert_true(x.c->apply_hist.count == h0);
    assert_true(x.c->stats.last_apply_s == last0);
    assert_int_equal(set_budget(&x, 0.7 * full, &e), PFI_OK);
    assert_int_equal(x.c->stats.n_apply, n0 + 1);
    assert_true(x.c->apply_hist.count == h0 + 1);
    site_down(&x);
}

static void test_node_silent_during_cut(void **state)
{
    silent_during_cut(0);
}

static void test_node_silent_during_cut_loop(void **state)
{
    silent_during_cut(1);
}

/* A refresh joins the jobs anew: what the last allocation gave each job stays in GET /v1/jobs
 * until the next plan (it read null in between: it_slurm saw it once); a job that changed its
 * GPUs has none until then. */
static void test_refresh_keeps_targets(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    assert_int_equal(set_budget(&x, 0.6 * pfi_cl_site_default_w(x.c), &e), PFI_OK);
    json_t *before = pfi_cl_json_jobs(x.c);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK); /* no plan after it */
    json_t *after = pfi_cl_json_jobs(x.c);
    size_t i;
    json_t *o;
    int n = 0;
    json_array_foreach(json_object_get(after, "jobs"), i, o)
    {
        json_t *b = json_array_get(json_object_get(before, "jobs"), i);
        assert_string_equal(json_string_value(json_object_get(o, "id")),
                            json_string_value(json_object_get(b, "id")));
        assert_true(json_is_number(json_object_get(b, "cap_target_w")));
        assert_true(json_equal(json_object_get(o, "cap_target_w"),
                               json_object_get(b, "cap_target_w")));
        assert_true(json_equal(json_object_get(o, "rel_tput_target"),
                               json_object_get(b, "rel_tput_target")));
        n++;
    }
    assert_int_equal(n, 3); /* 101 on two nodes, 102, 103 */
    json_decref(before);
    json_decref(after);
    /* Job 103 leaves: the others keep theirs; back with its GPU, it has none until a plan. */
    write_topo(&x, TOPO_AB);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    write_topo(&x, TOPO_ABC);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    after = pfi_cl_json_jobs(x.c);
    json_array_foreach(json_object_get(after, "jobs"), i, o)
    {
        int is103 = !strcmp(json_string_value(json_object_get(o, "id")), "103");
        assert_true(is103 ? json_is_null(json_object_get(o, "cap_target_w"))
                          : json_is_number(json_object_get(o, "cap_target_w")));
    }
    json_decref(after);
    site_down(&x);
}

/* A job starting on a parked GPU: it is raised while the others give watts back, the one kind
 * of change where the order matters.  The stand-ins' peak proves the lowerings came first. */
static void test_new_job_moves_watts(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    write_topo(&x, TOPO_AB);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    double w = 0.6 * pfi_cl_site_default_w(x.c);
    assert_int_equal(set_budget(&x, w, &e), PFI_OK);
    double a0 = pfi_standin_cap(x.s, "n1", 0), c0 = pfi_standin_cap(x.s, "n4", 0);
    /* Job 103 starts on n4's GPU 0, parked at its minimum. */
    write_topo(&x, TOPO_ABC);
    pfi_standin_reset_peak(x.s);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    assert_int_equal(pfi_cl_reapply(x.c, &e), PFI_OK);
    /* Watts moved: the new job up, the running one down... */
    assert_true(pfi_standin_cap(x.s, "n4", 0) > c0 + 1);
    assert_true(pfi_standin_cap(x.s, "n1", 0) < a0 - 1);
    /* ...and never more than the budget at any instant in between. */
    assert_true(pfi_standin_peak(x.s) <= w + 1e-6);
    site_down(&x);
}

/* A node daemon that saw a job slower in its log than its SLA allows, at the cap the controller
 * gave it, reports it (sla_breaches_seen): the next plan reads the job's curve through it and
 * gives it more, the others less, never over the budget; a breach reported at a cap that is no
 * cap, or a slowdown that is not one, is not read.  Job 104 (n4, 3 GPUs, SLA 10%) promises
 * at most 7% less at 200 W, so a tight budget leaves it there. */
static void test_sla_breach_seen(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    static const int three[] = {1, 2, 3};
    static const double cd[] = {200, 450, 700}, td[] = {0.93, 0.97, 1.0};
    pfi_standin_job jd = {"104", "n4", 3, three, 0.10, 1, 3, cd, td, 690, 1.0};
    assert_int_equal(pfi_standin_add_job(x.s, &jd, &e), PFI_OK);
    write_topo(&x, TOPO_NODES TOPO_JOBS_AB ", {\"id\": \"103\", \"parts\": [{\"node\": \"n4\", "
                   "\"gpus\": [0]}]}, {\"id\": \"104\", \"parts\": [{\"node\": \"n4\", "
                   "\"gpus\": [1,2,3]}]}]}");
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    double w = 0.6 * pfi_cl_site_default_w(x.c);
    assert_int_equal(set_budget(&x, w, &e), PFI_OK);
    double d0 = pfi_standin_cap(x.s, "n4", 1), a0 = pfi_standin_cap(x.s, "n1", 0);
    assert_true(d0 < 300);
    /* nonsense first: nothing moves */
    double bad_c[] = {0, 5e5, d0}, bad_s[] = {0.5, 0.5, 1.5};
    assert_int_equal(pfi_standin_set_seen(x.s, "n4", "104", 3, bad_c, bad_s, &e), PFI_OK);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    assert_int_equal(pfi_cl_reapply(x.c, &e), PFI_OK);
    assert_float_equal(pfi_standin_cap(x.s, "n4", 1), d0, 0.5);
    /* at d0 its curve says at most 7%; its log showed 70% */
    double c[] = {d0}, sd[] = {0.70};
    assert_int_equal(pfi_standin_set_seen(x.s, "n4", "104", 1, c, sd, &e), PFI_OK);
    pfi_standin_reset_peak(x.s);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    assert_int_equal(pfi_cl_reapply(x.c, &e), PFI_OK);
    double d1 = pfi_standin_cap(x.s, "n4", 1);
    print_message("job 104: %.0f W -> %.0f W per GPU; job 101: %.0f W -> %.0f W\n", d0, d1, a0,
                  pfi_standin_cap(x.s, "n1", 0));
    /* on the curve read through (d0, 0.70), 10% is first met near 650 W */
    assert_true(d1 > 600);
    assert_true(pfi_standin_cap(x.s, "n1", 0) < a0);
    assert_true(pfi_standin_peak(x.s) <= w + 1e-6);
    /* 42%: the minimum caps fit (and 104's SLA on its curve as reported), 104's floor through
     * the breach does not: every SLA loosened alike, said in the note, 104 not sent back to
     * d0, the budget kept */
    double w2 = 0.42 * pfi_cl_site_default_w(x.c);
    pfi_standin_reset_peak(x.s);
    assert_int_equal(set_budget(&x, w2, &e), PFI_OK);
    double d2 = pfi_standin_cap(x.s, "n4", 1);
    print_message("42%%: job 104 at %.0f W per GPU; note: %s\n", d2, x.c->note);
    assert_true(d2 > d0 + 50);
    assert_non_null(strstr(x.c->note, "every SLA loosened by"));
    assert_true(pfi_standin_peak(x.s) <= w + 1e-6);
    assert_true(pfi_standin_cap_sum(x.s) <= w2 + 1e-6);
    /* below the minimum caps: refused, nothing changes */
    assert_int_equal(set_budget(&x, 0.2 * pfi_cl_site_default_w(x.c), &e), PFI_EINFEASIBLE);
    assert_float_equal(pfi_standin_cap(x.s, "n4", 1), d2, 0.5);
    site_down(&x);
}

/* Every GPU's planned cap, warm (the allocator state kept from the last plan) and then fresh. */
static void plan_both(pfi_cl *c, double w, double *warm, double *fresh, int *rc_warm,
                      int *rc_fresh, long long *n_warm)
{
    double *tw[NN], *tf[NN];
    for (int i = 0; i < NN; i++) {
        tw[i] = warm + i * NG;
        tf[i] = fresh + i * NG;
    }
    pfi_err e1 = {0}, e2 = {0};
    pthread_mutex_lock(&c->mu);
    *rc_warm = pfi_cl_plan(c, w, tw, &e1);
    *n_warm = pfi_alloc_keep_warm(c->keep);
    pfi_alloc_keep_free(c->keep);
    c->keep = NULL;
    *rc_fresh = pfi_cl_plan(c, w, tf, &e2);
    pthread_mutex_unlock(&c->mu);
    assert_string_equal(e1.msg, e2.msg);
}

/* Plans after budget changes and a job's new curve re-solve warm and give the caps a fresh
 * solve gives, GPU for GPU; an infeasible budget gets the fresh solve's message. */
static void test_warm_plan(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    double full = pfi_cl_site_default_w(x.c);
    double warm[NN * NG], fresh[NN * NG];
    long long warm_plans = 0;
    for (int k = 0; k < 12; k++) {
        double w = full * (0.5 + 0.04 * k);
        assert_int_equal(set_budget(&x, w, &e), PFI_OK);
        if (k % 3 == 1) { /* job 101's curve as a node daemon would report it anew */
            pthread_mutex_lock(&x.c->mu);
            for (int j = 0; j < x.c->n_jobs; j++)
                if (x.c->jobs[j].has_curve && x.c->jobs[j].n_points > 3)
                    x.c->jobs[j].tput[1] *= 1.0 + 0.02 * k;
            pthread_mutex_unlock(&x.c->mu);
        }
        int rw, rf;
        long long nw;
        double w2 = w * 0.93;
        pthread_mutex_lock(&x.c->mu); /* a plan at the budget first: the next is warm */
        assert_int_equal(pfi_cl_plan(x.c, w, NULL, &e), PFI_OK);
        pthread_mutex_unlock(&x.c->mu);
        plan_both(x.c, w2, warm, fresh, &rw, &rf, &nw);
        assert_int_equal(rw, rf);
        assert_int_equal(rw, PFI_OK);
        warm_plans += nw;
        for (int i = 0; i < NN * NG; i++) {
            assert_true(warm[i] == fresh[i] || (isnan(warm[i]) && isnan(fresh[i])));
        }
    }
    assert_true(warm_plans >= 12);
    int rw, rf;
    long long nw;
    plan_both(x.c, 16 * 200 + 300, warm, fresh, &rw, &rf, &nw);
    assert_int_equal(rw, PFI_EINFEASIBLE);
    assert_int_equal(rf, PFI_EINFEASIBLE);
    site_down(&x);
}

/* Both ways of reading a node's answer to PUT /v1/caps give the same values, bit for bit. */
static void same_caps(const char *reply, int expect_in_place)
{
    double l1[8], e1[8], l2[8], e2[8];
    int in_place = pfi_cl_decode_caps(reply, 8, l1, e1, 1);
    pfi_cl_decode_caps(reply, 8, l2, e2, 0);
    if (expect_in_place >= 0)
        assert_int_equal(in_place, expect_in_place);
    for (int g = 0; g < 8; g++) {
        assert_true(l1[g] == l2[g] || (isnan(l1[g]) && isnan(l2[g])));
        assert_true(e1[g] == e2[g] || (isnan(e1[g]) && isnan(e2[g])));
    }
}

/* Answers of every shape: the plain ones read in place, the rest through jansson, with the
 * same values either way (repeated keys keep the last, a real index is no index, "gpu" and
 * "cap_w" and "enforced_w" stand in, unknown values of any kind skipped, a GPU out of range or
 * not an object ignored, a broken or escaped answer left to jansson), and random answers. */
static void test_decode_caps(void **state)
{
    static const char *const plain[] = {
        "{\"gpus\":[{\"index\":0,\"limit_w\":300,\"enforced_limit_w\":300.5}]}",
        "{\"gpus\":[{\"gpu\":1,\"cap_w\":250},{\"index\":2,\"limit_w\":1e2,\"enforced_w\":99}]}",
        "{\"gpus\":[{\"index\":1.0,\"gpu\":3,\"limit_w\":\"x\",\"cap_w\":410}]}",
        "{\"gpus\":[{\"index\":3,\"limit_w\":200,\"limit_w\":null,\"cap_w\":7}]}",
        "{\"gpus\":[{\"index\":0,\"limit_w\":1},{\"index\":0,\"limit_w\":2}]}",
        "{\"gpus\":[{\"index\":9,\"limit_w\":1},{\"index\":-1,\"limit_w\":2},5,[1],null,{}]}",
        "{\"gpus\":[{\"index\":0,\"limit_w\":1}],\"gpus\":7}",
        "{\"gpus\":[{\"index\":0,\"limit_w\":1}],\"gpus\":[{\"index\":1,\"limit_w\":3}]}",
        "{\"epoch\":5,\"x\":{\"a\":[1,2,{\"b\":true}],\"c\":false},\"gpus\":[{\"index\":4,"
        "\"name\":\"H100\",\"limit_w\":-0,\"enforced_limit_w\":700,\"m\":{\"k\":[]}}]}",
        " { \"gpus\" : [ { \"index\" : 5 , \"limit_w\" : 12.25 } ] } ",
        "{}", "{\"gpus\":[]}", "{\"gpus\":{}}",
    };
    for (size_t k = 0; k < sizeof plain / sizeof *plain; k++)
        same_caps(plain[k], 1);
    static const char *const other[] = {
        "", "[]", "5", "{\"gpus\":[{\"index\":0,\"limit_w\":1}]", "{\"gpus\":[{\"index\":0,"
        "\"limit_w\":1}]} x", "{\"gpus\":[{\"index\":0,\"limit_w\":1,}]}",
        "{\"gp\\u0075s\":[{\"index\":0,\"limit_w\":1}]}", "{\"gpus\":[{\"index\":0,\"limit_w\":01}]}",
        "{\"gpus\":[{\"index\":0,\"limit_w\":1}],\"n\":tru}", "{\"gpus\":[{\"index\":0,"
        "\"limit_w\":1e999}]}", "{\"gpus\":[{\"index\":99999999999999999999,\"limit_w\":1}]}",
    };
    for (size_t k = 0; k < sizeof other / sizeof *other; k++)
        same_caps(other[k], 0);
    /* random answers from pieces of all of the above */
    static const char *const keys[] = {"\"index\"", "\"gpu\"", "\"limit_w\"", "\"cap_w\"",
                                       "\"enforced_limit_w\"", "\"enforced_w\"", "\"other\""};
    static const char *const vals[] = {"0", "1", "7", "8", "-1", "2.5", "1e1", "300", "\"s\"",
                                       "null", "true", "[1,{}]", "{\"a\":1}", "-0.0"};
    unsigned long long seed = 7;
    char buf[2048];
    for (int t = 0; t < 2000; t++) {
        size_t len = (size_t)snprintf(buf, sizeof buf, "{\"gpus\":[");
        int ng = (int)(pfi_rand_next(&seed) % 5);
        for (int g = 0; g < ng; g++) {
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s{", g ? "," : "");
            int nk = (int)(pfi_rand_next(&seed) % 6);
            for (int q = 0; q < nk; q++)
                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s:%s", q ? "," : "",
                                        keys[pfi_rand_next(&seed) % 7],
                                        vals[pfi_rand_next(&seed) % 14]);
            len += (size_t)snprintf(buf + len, sizeof buf - len, "}");
        }
        snprintf(buf + len, sizeof buf - len, "]}");
        same_caps(buf, 1);
    }
}

/* Allocator solves so far (warm and rebuilt). */
static long long solves(pfi_cl *c)
{
    pthread_mutex_lock(&c->mu);
    long long n = c->keep ? pfi_alloc_keep_warm(c->keep) + pfi_alloc_keep_rebuilt(c->keep) : 0;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* A budget change plans once: the plan that finds the budget feasible is the one applied.
 * The caps it leaves are those a fresh plan gives (a re-apply right after moves nothing), and
 * a ramp or a grid event that holds the budget lower still plans what it applies. */
static void test_budget_change_plans_once(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    double full = pfi_cl_site_default_w(x.c);
    assert_int_equal(set_budget(&x, 0.9 * full, &e), PFI_OK);
    for (int k = 0; k < 6; k++) {
        double w = full * (k % 2 ? 0.85 - 0.03 * k : 0.6 + 0.02 * k);
        long long s0 = solves(x.c);
        pfi_standin_reset_peak(x.s);
        assert_int_equal(set_budget(&x, w, &e), PFI_OK);
        assert_int_equal(solves(x.c) - s0, 1);
        assert_true(pfi_standin_cap_sum(x.s) <= w + 1e-6);
        double caps[NN * NG];
        for (int i = 0; i < NN; i++)
            for (int g = 0; g < NG; g++)
                caps[i * NG + g] = pfi_standin_cap(x.s, NAMES[i], g);
        pfi_cl_stats s1, s2;
        pfi_cl_get_stats(x.c, &s1);
        assert_int_equal(pfi_cl_reapply(x.c, &e), PFI_OK);
        pfi_cl_get_stats(x.c, &s2);
        assert_int_equal(s2.n_lowered, s1.n_lowered);
        assert_int_equal(s2.n_raised, s1.n_raised);
        for (int i = 0; i < NN; i++)
            for (int g = 0; g < NG; g++)
                assert_true(caps[i * NG + g] == pfi_standin_cap(x.s, NAMES[i], g));
        /* Each job's cap now is the highest its GPUs hold, on the nodes the job lists. */
        pthread_mutex_lock(&x.c->mu);
        for (int j = 0; j < x.c->n_jobs; j++) {
            const pfi_cl_job *J = &x.c->jobs[j];
            double hi = NAN;
            for (int p = 0; p < J->n_nodes; p++) {
                const pfi_cl_node *n = &x.c->nodes[J->nodes[p]];
                for (int g = 0; g < n->n_gpus; g++)
                    if (n->job_of[g] == j && (isnan(hi) || n->gpu[g].limit_w > hi))
                        hi = n->gpu[g].limit_w;
            }
            assert_false(isnan(hi));
            assert_true(J->cap_now_w == hi);
        }
        pthread_mutex_unlock(&x.c->mu);
    }
    /* Infeasible: nothing sent. */
    long long req = pfi_standin_requests(x.s);
    assert_int_equal(set_budget(&x, 16 * 200 + 300, &e), PFI_EINFEASIBLE);
    assert_int_equal(pfi_standin_requests(x.s), req);
    site_down(&x);
}

/* A ramp without the controller's loop: ten steps in the call, each within the budget of its
 * moment, ending at the target. */
static void test_ramp(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    double full = pfi_cl_site_default_w(x.c);
    assert_int_equal(set_budget(&x, 0.8 * full, &e), PFI_OK);
    long long r0 = pfi_standin_requests(x.s);
    pfi_standin_reset_peak(x.s);
    pfi_cl_budget b = {.set = 1, .watts = 0.6 * full, .ramp_s = 0.3};
    assert_int_equal(pfi_cl_set_budget(x.c, &b, &e), PFI_OK);
    assert_true(pfi_standin_peak(x.s) <= 0.8 * full + 1e-6);
    assert_true(pfi_standin_cap_sum(x.s) <= 0.6 * full + 1e-6);
    /* More than one step reached the nodes. */
    assert_true(pfi_standin_requests(x.s) - r0 > 4);
    pfi_cl_budget bad = {.set = 1, .watts = 0.6 * full, .ramp_s = -1};
    assert_int_equal(pfi_cl_set_budget(x.c, &bad, &e), PFI_EINVAL);
    /* a restart's resume does not replace a budget set meanwhile */
    pfi_cl_budget resume = {.set = 1, .watts = 0.9 * full, .only_if_none = 1};
    assert_int_equal(pfi_cl_set_budget(x.c, &resume, &e), PFI_EBUSY);
    assert_true(x.c->budget.watts == 0.6 * full);
    assert_true(pfi_standin_cap_sum(x.s) <= 0.6 * full + 1e-6);
    site_down(&x);
}

/* A ramp starts where the site is.  A controller restarted knows no budget: re-sending the
 * one in force with a ramp started from the default limits and first raised the capped site
 * (10 kW -> 16.8 kW in a review); after a budget far above the site (1 MW) a ramp was a step
 * at its end. */
static void test_ramp_starts_at_caps(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    double full = pfi_cl_site_default_w(x.c);
    assert_int_equal(set_budget(&x, 0.6 * full, &e), PFI_OK);
    double held = pfi_standin_cap_sum(x.s);
    assert_true(held <= 0.6 * full + 1e-6);
    pthread_mutex_lock(&x.c->mu); /* as a restarted controller finds it */
    x.c->budget_now_w = NAN;
    x.c->budget.set = 0;
    pthread_mutex_unlock(&x.c->mu);
    pfi_standin_reset_peak(x.s);
    pfi_cl_budget b = {.set = 1, .watts = 0.6 * full, .ramp_s = 0.3};
    assert_int_equal(pfi_cl_set_budget(x.c, &b, &e), PFI_OK);
    if (pfi_standin_peak(x.s) > held + 1e-6)
        fail_msg("the ramp raised the site from %.0f W to %.0f W", held, pfi_standin_peak(x.s));
    /* from 1 MW: the ramp goes down from the caps, not a step at its end */
    assert_int_equal(set_budget(&x, 1e6, &e), PFI_OK);
    double top = pfi_standin_cap_sum(x.s);
    assert_true(top > 0.5 * full && top <= full + 1e-6);
    pfi_cl_budget down = {.set = 1, .watts = 0.5 * full, .ramp_s = 0.3};
    assert_int_equal(pfi_cl_set_budget(x.c, &down, &e), PFI_OK);
    if (!(x.c->ramp_from_w <= top + 1e-6))
        fail_msg("a ramp down from a 1 MW budget started at %.0f W, the caps at %.0f W",
                 x.c->ramp_from_w, top);
    assert_true(pfi_standin_cap_sum(x.s) <= 0.5 * full + 1e-6);
    site_down(&x);
    /* A node that never answered is counted where the ramp starts as the plan counts it (its
     * reserve), not as 0 W: the first step fell below anything the site could be, every step
     * failed, the change was answered as not met, and its end came as one step. */
    site_up_silent(&x, "n3");
    pfi_err e2 = {0};
    double all = 3 * NG * 700 + NG * 700; /* n3 reserved at the site's largest maximum */
    assert_int_equal(set_budget(&x, 0.9 * all, &e2), PFI_OK);
    pfi_cl_budget r = {.set = 1, .watts = 0.85 * all, .ramp_s = 0.3};
    if (pfi_cl_set_budget(x.c, &r, &e2) != PFI_OK)
        fail_msg("a feasible ramp with a never-answered node failed: %s", e2.msg);
    assert_true(x.c->ramp_from_w >= 0.85 * all);
    site_down(&x);
}

/* With the loop running, the end of a ramp is applied at its end, not at the next heartbeat:
 * the step before stayed in force for up to a heartbeat, above the budget reached. */
static void test_ramp_end_applied(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    double full = pfi_cl_site_default_w(x.c);
    assert_int_equal(set_budget(&x, 0.8 * full, &e), PFI_OK);
    x.c->cfg.heartbeat_s = 30; /* no heartbeat re-plan inside this test */
    assert_int_equal(pfi_cl_start_loop(x.c, &e), PFI_OK);
    pfi_clock_sleep(0.3); /* the loop's first heartbeat passes */
    pfi_cl_budget b = {.set = 1, .watts = 0.6 * full, .ramp_s = 0.5};
    assert_int_equal(pfi_cl_set_budget(x.c, &b, &e), PFI_OK);
    pfi_clock_sleep(1.5);
    if (pfi_standin_cap_sum(x.s) > 0.6 * full + 1e-6)
        fail_msg("1 s after a 0.5 s ramp ended the site is at %.0f W, the budget %.0f W",
                 pfi_standin_cap_sum(x.s), 0.6 * full);
    site_down(&x);
}

/* A condition in the note (no plan fitting a silent node, raises held back) is cleared by the
 * first heartbeat that plans and applies without it: "silent: n2 ..." stayed on /v1/allocation
 * and the status page after n2 came back.  An event's note (a node restarted) stays, dated. */
static void test_note_cleared(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    double full = pfi_cl_site_default_w(x.c);
    assert_int_equal(set_budget(&x, 0.8 * full, &e), PFI_OK);
    json_t *a = pfi_cl_json_allocation(x.c);
    assert_true(json_is_null(json_object_get(a, "note_at")));
    json_decref(a);
    pthread_mutex_lock(&x.c->mu);
    pfi_cl_note(x.c, 1, "silent: n2, held at the caps last acknowledged");
    pthread_mutex_unlock(&x.c->mu);
    a = pfi_cl_json_allocation(x.c);
    assert_string_equal(json_string_value(json_object_get(a, "note")),
                        "silent: n2, held at the caps last acknowledged");
    assert_true(json_is_string(json_object_get(a, "note_at")));
    json_decref(a);
    x.c->cfg.heartbeat_s = 0.2;
    assert_int_equal(pfi_cl_start_loop(x.c, &e), PFI_OK);
    pfi_clock_sleep(1.0);
    pthread_mutex_lock(&x.c->mu);
    if (x.c->note[0])
        fail_msg("the note stayed after clean heartbeats: %s", x.c->note);
    assert_true(isnan(x.c->note_at));
    pfi_cl_note(x.c, 0, "node n2 restarted (boot id b2): its caps are sent again");
    pthread_mutex_unlock(&x.c->mu);
    pfi_clock_sleep(1.0);
    pthread_mutex_lock(&x.c->mu);
    assert_non_null(strstr(x.c->note, "n2 restarted"));
    assert_false(isnan(x.c->note_at));
    pthread_mutex_unlock(&x.c->mu);
    site_down(&x);
}

/* The controller's HTTP API: routes, token, error codes, nothing changed on refusals. */
static long call(const char *url, const char *method, const char *body, const char *token,
                 char **reply)
{
    pfi_http_req r;
    memset(&r, 0, sizeof r);
    r.url = url;
    r.method = method;
    r.body = body;
    pfi_http_many(NULL, &r, 1, token, 5.0, 1);
    if (reply)
        *reply = r.reply;
    else
        free(r.reply);
    return r.status;
}

/* Starts the API on 127.0.0.1 with this token file (NULL: none) and returns what it wrote to
 * stderr meanwhile (malloc'd): fd 2 goes to a file for the call. */
static char *start_logged(site *x, const char *tokf, pfi_cl_server **srv, int *port)
{
    char path[sizeof x->dir + 16];
    snprintf(path, sizeof path, "%s/stderr", x->dir);
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    assert_true(dup2(fd, 2) == 2);
    close(fd);
    pfi_err e = {0};
    int rc = pfi_cl_server_start(x->c, "127.0.0.1:0", tokf, srv, port, &e);
    fflush(stderr);
    assert_true(dup2(saved, 2) == 2);
    close(saved);
    assert_int_equal(rc, PFI_OK);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *out = calloc(1, 4096);
    assert_non_null(out);
    size_t n = fread(out, 1, 4095, f);
    out[n] = '\0';
    fclose(f);
    unlink(path);
    return out;
}

static void test_api(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    char tokf[300], url[128], *rep = NULL;
    const char *tok = "0123456789abcdef0123";
    snprintf(tokf, sizeof tokf, "%s/token", x.dir);
    FILE *f = fopen(tokf, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", tok);
    fclose(f);
    chmod(tokf, 0644);
    pfi_cl_server *srv;
    int port;
    assert_int_equal(pfi_cl_server_start(x.c, "127.0.0.1:0", tokf, &srv, &port, &e), PFI_EPERM);
    chmod(tokf, 0600);
    char *log = start_logged(&x, tokf, &srv, &port); /* with a token file: no such line */
    if (strstr(log, "no token file"))
        fail_msg("started with a token file, the log says it has none: '%s'", log);
    free(log);
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%d", port);
    snprintf(url, sizeof url, "%s/healthz", base);
    assert_int_equal(call(url, "GET", NULL, NULL, NULL), 200);
    snprintf(url, sizeof url, "%s/v1/budget", base);
    double before = pfi_standin_cap_sum(x.s);
    assert_int_equal(call(url, "PUT", "{\"budget\": \"cut=30%\"}", NULL, NULL), 401);
    assert_int_equal(call(url, "PUT", "{\"budget\": \"cut=30%\"}", "wrong-token-xxxxxx", NULL),
                     401);
    assert_int_equal(call(url, "PUT", "{\"budget\": \"lots\"}", tok, NULL), 400);
    assert_int_equal(call(url, "PUT", "not json", tok, NULL), 400);
    assert_int_equal(call(url, "PUT", "{\"watts\": 1000, \"cut\": 0.3}", tok, NULL), 400);
    long st = call(url, "PUT", "{\"watts\": 1000}", tok, &rep);
    if (st != 409) fprintf(stderr, "got %ld: %s\n", st, rep ? rep : "");
    assert_int_equal(st, 409);
    assert_non_null(strstr(rep, "1000"));
    free(rep);
    assert_true(fabs(pfi_standin_cap_sum(x.s) - before) < 1e-9);
    /* a key given twice: malformed, said so (it was "expected a JSON object") */
    assert_int_equal(call(url, "PUT", "{\"cut\": 0.3, \"cut\": 0.9}", tok, &rep), 400);
    assert_non_null(strstr(rep, "duplicate object key"));
    free(rep);
    assert_true(fabs(pfi_standin_cap_sum(x.s) - before) < 1e-9);
    assert_int_equal(call(url, "PUT", "{\"cut\": 0.3, \"ramp_s\": 0}", tok, &rep), 200);
    assert_non_null(strstr(rep, "\"budget_w\""));
    free(rep);
    assert_true(pfi_standin_cap_sum(x.s) <= 0.7 * NN * NG * 700 + 1e-6);
    /* The status page and what it reads: the cut is the latest decision. */
    snprintf(url, sizeof url, "%s/", base);
    assert_int_equal(call(url, "GET", NULL, NULL, &rep), 200);
    assert_string_equal(rep, pfi_status_page(NULL));
    free(rep);
    snprintf(url, sizeof url, "%s/v1/decisions?limit=1", base);
    assert_int_equal(call(url, "GET", NULL, NULL, &rep), 200);
    json_t *dd = json_loads(rep, 0, NULL);
    free(rep);
    json_t *d0 = json_array_get(json_object_get(dd, "decisions"), 0);
    assert_non_null(d0);
    assert_int_equal(json_array_size(json_object_get(dd, "decisions")), 1);
    assert_true(fabs(json_real_value(json_object_get(d0, "budget_w")) - 0.7 * NN * NG * 700) < 1e-6);
    assert_true(json_integer_value(json_object_get(d0, "n_lowered")) > 0);
    json_decref(dd);
    snprintf(url, sizeof url, "%s/v1/decisions?limit=0", base);
    assert_int_equal(call(url, "GET", NULL, NULL, NULL), 400);
    snprintf(url, sizeof url, "%s/v1/history", base);
    assert_int_equal(call(url, "GET", NULL, NULL, &rep), 200);
    assert_non_null(strstr(rep, "\"limits_w\""));
    free(rep);
    snprintf(url, sizeof url, "%s/v1/history?since=x", base);
    assert_int_equal(call(url, "GET", NULL, NULL, NULL), 400);
    snprintf(url, sizeof url, "%s/metrics", base);
    assert_int_equal(call(url, "GET", NULL, NULL, &rep), 200);
    const char *bw = strstr(rep, "\npfi_cluster_budget_watts ");
    assert_non_null(bw);
    assert_true(fabs(strtod(bw + strlen("\npfi_cluster_budget_watts "), NULL) - 7840) < 1e-6);
    assert_non_null(strstr(rep, "pfi_cluster_node_up{node=\"n1\"} 1"));
    assert_non_null(strstr(rep, "\npfi_cluster_job_cap_watts{job_id=\"101\"} "));
    assert_null(strstr(rep, "{job="));
    free(rep);
    snprintf(url, sizeof url, "%s/v1/jobs", base);
    assert_int_equal(call(url, "GET", NULL, NULL, &rep), 200);
    assert_non_null(strstr(rep, "\"101\""));
    free(rep);
    snprintf(url, sizeof url, "%s/v1/nope", base);
    assert_int_equal(call(url, "GET", NULL, NULL, NULL), 404);
    snprintf(url, sizeof url, "%s/v1/budget", base);
    assert_int_equal(call(url, "PUT", "{\"budget\": null}", tok, NULL), 200);
    assert_true(fabs(pfi_standin_cap_sum(x.s) - NN * NG * 700.0) < 1e-6);
    pfi_cl_server_stop(srv);
    unlink(tokf);
    site_down(&x);
}

/* A controller started without --token-file refuses every change (403), as a node daemon
 * without a token file does: docs/cluster.md says changes need its bearer token, yet one started
 * without a token file, even on 0.0.0.0, took a site budget from anyone.  Reads stay open. */
static void test_api_without_token(void **state)
{
    site x;
    site_up(&x);
    pfi_cl_server *srv;
    int port;
    /* Said at start, as the node daemon says it runs read-only without a token file. */
    char *log = start_logged(&x, NULL, &srv, &port);
    if (!strstr(log, "no token file") || !strstr(log, "read-only"))
        fail_msg("started without a token file, the log does not say so: '%s'", log);
    free(log);
    char url[128], *rep = NULL;
    double before = pfi_standin_cap_sum(x.s);
    static const struct {
        const char *path, *method, *body;
    } chg[] = {{"/v1/budget", "PUT", "{\"budget\": \"cut=30%\"}"},
               {"/v1/refresh", "POST", "{}"},
               {"/v1/grid/events", "POST",
                "{\"id\": \"x\", \"start\": \"now\", \"duration_s\": 60, \"cut\": 0.3, "
                "\"baseline_w\": 9000}"},
               {"/v1/grid/events/x", "DELETE", NULL}};
    for (size_t i = 0; i < sizeof chg / sizeof *chg; i++) {
        snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, chg[i].path);
        long st = call(url, chg[i].method, chg[i].body, NULL, &rep);
        if (st != 403)
            fail_msg("%s %s without a token file: %ld %s", chg[i].method, chg[i].path, st,
                     rep ? rep : "");
        assert_non_null(strstr(rep, "token"));
        free(rep);
        rep = NULL;
    }
    assert_false(x.c->budget.set);
    assert_true(fabs(pfi_standin_cap_sum(x.s) - before) < 1e-9);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/allocation", port);
    assert_int_equal(call(url, "GET", NULL, NULL, NULL), 200);
    pfi_cl_server_stop(srv);
    site_down(&x);
}

static void test_unknown_node_in_topology(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    write_topo(&x, TOPO_GHOST);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_ENOENT);
    assert_non_null(strstr(e.msg, "ghost"));
    /* Slurm hands out GPUs the daemon does not have: that node is not managed, and says why. */
    write_topo(&x, "{\"nodes\": [{\"name\": \"n1\", \"gpus\": 4}, "
                   "{\"name\": \"n4\", \"gpus\": 6}], \"jobs\": []}");
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    json_t *nodes = pfi_cl_json_nodes(x.c);
    json_t *n4 = json_array_get(json_object_get(nodes, "nodes"), 1);
    assert_true(json_is_false(json_object_get(n4, "up")));
    assert_non_null(strstr(json_string_value(json_object_get(n4, "why")), "Slurm lists 6 GPUs"));
    json_decref(nodes);
    /* Restored for the check below. */
    write_topo(&x, TOPO_GHOST);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_ENOENT);
    /* The state from before is kept: n1 and n4 listed, n2 and n3 no longer listed but kept
     * (departed: they answered before and may hold caps). */
    json_t *a = pfi_cl_json_allocation(x.c);
    assert_int_equal(json_integer_value(json_object_get(a, "nodes")), 4);
    json_decref(a);
    site_down(&x);
}

/* A daemon back with fewer GPUs than it had (n4 reported 6, now 4, Slurm lists 6): not
 * managed, saying why, and a heartbeat's answer does not bring it back up.  Its GPUs 4-5 were
 * kept as last reported: it passed as complete, was sent caps for GPUs it no longer has at every
 * heartbeat, and their default limits stayed in the site's 100%. */
static void test_fewer_gpus_after_restart(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    double site100 = pfi_cl_site_default_w(x.c);
    pfi_cl_node *n4 = NULL;
    for (int i = 0; i < x.c->n_nodes; i++)
        if (!strcmp(x.c->nodes[i].name, "n4"))
            n4 = &x.c->nodes[i];
    assert_non_null(n4);
    assert_true(n4->up);
    for (int g = 4; g < 6; g++) { /* as the daemon reported them before its restart */
        n4->gpu[g] = n4->gpu[0];
        n4->gpu[g].index = g;
    }
    write_topo(&x, "{\"nodes\": [{\"name\": \"n1\", \"gpus\": 4}, {\"name\": \"n2\", "
                   "\"gpus\": 4}, {\"name\": \"n3\", \"gpus\": 4}, {\"name\": \"n4\", "
                   "\"gpus\": 6}], \"jobs\": []}");
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    json_t *nodes = pfi_cl_json_nodes(x.c);
    json_t *j4 = json_array_get(json_object_get(nodes, "nodes"), 3);
    assert_string_equal(json_string_value(json_object_get(j4, "name")), "n4");
    assert_true(json_is_false(json_object_get(j4, "up")));
    const char *why = json_string_value(json_object_get(j4, "why"));
    if (!why || !strstr(why, "Slurm lists 6 GPUs but the node daemon does not report GPU 4"))
        fail_msg("n4's why: %s", why ? why : "-");
    json_decref(nodes);
    pfi_cl_heartbeat(x.c);
    nodes = pfi_cl_json_nodes(x.c);
    j4 = json_array_get(json_object_get(nodes, "nodes"), 3);
    assert_true(json_is_false(json_object_get(j4, "up")));
    json_decref(nodes);
    if (fabs(pfi_cl_site_default_w(x.c) - site100) > 1e-6)
        fail_msg("the site's 100%% is %.1f W with GPUs n4 no longer has (%.1f W before)",
                 pfi_cl_site_default_w(x.c), site100);
    site_down(&x);
}

/* A node that refuses the controller's token (401 to heartbeats and caps, reads open) is down
 * with the reason, and stays so through a refresh whose reads it answers: it showed up, no
 * reason given, while every change was refused.  Accepted again: up at the next heartbeat. */
static void test_node_refusing_token(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    pfi_standin_set_refuse(x.s, "n2", 1);
    pfi_cl_heartbeat(x.c);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    json_t *nodes = pfi_cl_json_nodes(x.c);
    json_t *j2 = json_array_get(json_object_get(nodes, "nodes"), 1);
    assert_string_equal(json_string_value(json_object_get(j2, "name")), "n2");
    assert_true(json_is_false(json_object_get(j2, "up")));
    const char *why = json_string_value(json_object_get(j2, "why"));
    if (!why || !strstr(why, "heartbeat: HTTP 401: the node refused the token of --node-token-file"))
        fail_msg("n2's why: %s", why ? why : "-");
    json_decref(nodes);
    /* A budget it leaves no room for names it as refusing, not as a node that does not answer
     * (the operator would look for a dead daemon). */
    assert_int_equal(set_budget(&x, 3000, &e), PFI_EINFEASIBLE);
    if (!strstr(e.msg, "[silent: n2 (refused the token), held at the caps last acknowledged, "
                       "else the GPUs' maximum: a node that refuses the controller's token or "
                       "does not answer cannot be capped]"))
        fail_msg("refusal: %s", e.msg);
    pfi_standin_set_refuse(x.s, "n2", 0);
    pfi_cl_heartbeat(x.c);
    nodes = pfi_cl_json_nodes(x.c);
    j2 = json_array_get(json_object_get(nodes, "nodes"), 1);
    assert_true(json_is_true(json_object_get(j2, "up")));
    json_decref(nodes);
    site_down(&x);
}

/* The controller restarted on the same store as x's, knowing no budget yet. */
static void restart_controller(site *x, const char *db)
{
    pfi_err e = {0};
    pfi_cl_config cfg = x->c->cfg;
    pfi_cl_close(x->c);
    assert_int_equal(pfi_cl_open(&cfg, &x->c, &e), PFI_OK);
    assert_int_equal(pfi_cl_grid_open(x->c, db, &e), PFI_OK);
    assert_int_equal(pfi_cl_refresh(x->c, &e), PFI_OK);
    assert_false(x->c->budget.set);
}

/* A restart takes back the budget saved in the store, without a ramp, and says so; it never
 * replaces a budget set meanwhile; a budget removed stays removed. */
static void test_budget_resume(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    char db[400], msg[1024];
    snprintf(db, sizeof db, "%s/resume.db", x.dir);
    assert_int_equal(pfi_cl_grid_open(x.c, db, &e), PFI_OK);
    double full = pfi_cl_site_default_w(x.c);
    assert_int_equal(pfi_cl_budget_resume(x.c, 1, msg, sizeof msg), 0); /* none saved */
    assert_string_equal(msg, "");
    assert_int_equal(set_budget(&x, 0.7 * full, &e), PFI_OK);

    restart_controller(&x, db);
    assert_int_equal(pfi_cl_budget_resume(x.c, 1, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "is in force again"));
    assert_true(x.c->budget.set && x.c->budget.watts == 0.7 * full);
    assert_true(pfi_standin_cap_sum(x.s) <= 0.7 * full + 1e-6);

    restart_controller(&x, db); /* the operator sets a budget before the resume runs */
    assert_int_equal(set_budget(&x, 0.8 * full, &e), PFI_OK);
    assert_int_equal(pfi_cl_budget_resume(x.c, 1, msg, sizeof msg), 0);
    assert_string_equal(msg, "");
    assert_true(x.c->budget.watts == 0.8 * full);

    pfi_cl_budget none = {.set = 0, .watts = -1};
    assert_int_equal(pfi_cl_set_budget(x.c, &none, &e), PFI_OK);
    restart_controller(&x, db);
    assert_int_equal(pfi_cl_budget_resume(x.c, 1, msg, sizeof msg), 0);
    assert_false(x.c->budget.set);
    rm_db(db);
    site_down(&x);
}

/* A node with more GPUs than Slurm lists, silent when the controller restarts: the count it
 * last reported is kept in the store, so its extra GPUs' caps are not given to other nodes
 * (counted at Slurm's count, the site went over). */
static void test_restart_keeps_extra_gpus(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    char db[400];
    snprintf(db, sizeof db, "%s/seen.db", x.dir);
    assert_int_equal(pfi_cl_grid_open(x.c, db, &e), PFI_OK);
    write_topo(&x, TOPO_NODES_N4_TWO TOPO_JOBS_AB
               ", {\"id\": \"103\", \"parts\": [{\"node\": \"n4\", \"gpus\": [0]}]}]}");
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    assert_int_equal(x.c->nodes[3].n_gpus, NG);
    double full = pfi_cl_site_default_w(x.c);
    assert_int_equal(set_budget(&x, 0.6 * full, &e), PFI_OK);
    pfi_standin_set_silent(x.s, "n4", 1);
    restart_controller(&x, db);
    assert_false(x.c->nodes[3].up);
    assert_int_equal(x.c->nodes[3].n_gpus, NG);
    pfi_standin_reset_peak(x.s);
    assert_int_equal(set_budget(&x, 0.65 * full, &e), PFI_OK);
    if (pfi_standin_peak(x.s) > 0.65 * full + 1e-6)
        fail_msg("site at %.0f W over a %.0f W budget with n4 silent after a restart",
                 pfi_standin_peak(x.s), 0.65 * full);
    /* It answers again, still beyond Slurm's count: still saved. */
    pfi_standin_set_silent(x.s, "n4", 0);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    assert_non_null(strstr(x.c->gpus_seen_text, "\"n4\":4"));
    rm_db(db);
    site_down(&x);
}

/* A silent node's GPUs are counted at the caps they hold in the site's record for compliance
 * reports: left out, its whole draw vanished from the record, the report and the VTN's DEMAND
 * while the seconds still counted as recorded. */
static void test_silent_node_in_site_record(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    char db[400];
    snprintf(db, sizeof db, "%s/rec.db", x.dir);
    assert_int_equal(pfi_cl_grid_open(x.c, db, &e), PFI_OK);
    double full = pfi_cl_site_default_w(x.c);
    assert_int_equal(set_budget(&x, 0.7 * full, &e), PFI_OK);
    pfi_standin_set_silent(x.s, "n3", 1);
    assert_int_equal(pfi_cl_refresh(x.c, &e), PFI_OK);
    assert_false(x.c->nodes[2].up);
    double held = 0, drawn = 0;
    for (int g = 0; g < x.c->nodes[2].n_gpus; g++)
        held += x.c->nodes[2].gpu[g].limit_w;
    assert_true(held > 0);
    /* The stand-ins report no draw: the answering nodes' GPUs draw 80% of their caps here. */
    for (int i = 0; i < x.c->n_nodes; i++)
        for (int g = 0; i != 2 && g < x.c->nodes[i].n_gpus; g++)
            drawn += x.c->nodes[i].power_w[g] = 0.8 * x.c->nodes[i].gpu[g].limit_w;
    double t0 = pfi_clock_wall();
    pfi_cl_grid_record(x.c);
    double mean = NAN;
    assert_int_equal(pfi_grid_power_mean(x.c->grid, t0 - 1, pfi_clock_wall() + 1, &mean), 1);
    assert_true(fabs(pfi_cl_site_draw_w(x.c) - drawn) < 1e-6); /* the nodes that answer */
    if (!(fabs(mean - (drawn + held)) < 1e-6))
        fail_msg("recorded %.1f W, the answering nodes draw %.1f W and the silent one holds "
                 "%.1f W", mean, drawn, held);
    assert_int_equal(x.c->grid_unread, 1);
    assert_non_null(strstr(x.c->note, "1 node(s) counted at their caps"));
    rm_db(db);
    site_down(&x);
}

/* A cut posted without a baseline while another event holds the site: its baseline is the draw
 * before that event, not the draw it curtailed (the cut then cut again from it).  Recorded every
 * 2 s: 80% of the site's maximum, then 50% for the last 50 minutes while event "a" bound. */
static void test_cut_baseline_outside_events(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    char db[400];
    snprintf(db, sizeof db, "%s/base.db", x.dir);
    assert_int_equal(pfi_cl_grid_open(x.c, db, &e), PFI_OK);
    double max = pfi_cl_grid_site(x.c).max_w, now = pfi_clock_wall();
    for (double t = now - 6600; t < now; t += 2) {
        int bound = t >= now - 3000;
        assert_int_equal(pfi_grid_power_add(x.c->grid, t, (bound ? 0.5 : 0.8) * max,
                                            bound ? 0.5 * max : NAN, bound ? "a" : NULL, &e),
                         PFI_OK);
    }
    json_t *body = json_pack("{s:s, s:f, s:f, s:f}", "id", "b", "start", now + 600,
                             "duration_s", 3600.0, "cut", 0.1);
    void *res = NULL;
    int created = 0;
    assert_int_equal(pfi_cl_grid_add(x.c, body, 0, &res, &created, &e), PFI_OK);
    json_decref(body);
    double base = json_number_value(json_object_get(res, "baseline_w"));
    const char *how = json_string_value(json_object_get(res, "baseline_method"));
    if (!(fabs(base - 0.8 * max) < 1e-6))
        fail_msg("the cut's baseline %.1f W (%s), not the %.1f W before event a", base, how,
                 0.8 * max);
    assert_non_null(strstr(how, "leaving out the 50 min other events bound (1800 samples)"));
    json_decref(res);
    rm_db(db);
    site_down(&x);
}

/* A finished event let go (a VTN's, an hour after its restore) leaves the events held and keeps
 * its report, which says until when (deleted, the report was gone: 404). */
static void test_let_go_keeps_report(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    char db[400];
    snprintf(db, sizeof db, "%s/hist.db", x.dir);
    assert_int_equal(pfi_cl_grid_open(x.c, db, &e), PFI_OK);
    double max = pfi_cl_grid_site(x.c).max_w, now = pfi_clock_wall();
    pfi_event ev; /* held from before: finished two hours ago */
    pfi_event_init_limit(&ev, "oadr-h-0", now - 7200, now - 6600, 0.7 * max);
    assert_int_equal(pfi_grid_put(x.c->grid, &ev, &e), PFI_OK);
    x.c->grid_ev[x.c->n_grid++] = ev;
    for (double t = now - 8000; t < now - 6000; t += 2)
        assert_int_equal(pfi_grid_power_add(x.c->grid, t, 0.6 * max, NAN, NULL, &e), PFI_OK);
    assert_int_equal(pfi_cl_grid_let_go(x.c, "oadr-h-0", &e), PFI_OK);
    assert_int_equal(x.c->n_grid, 0);
    assert_null(pfi_cl_grid_json(x.c, "oadr-h-0"));
    json_t *r = pfi_cl_grid_report(x.c, "oadr-h-0", &e);
    if (!r)
        fail_msg("the report of an event let go: %s", e.msg);
    assert_string_equal(json_string_value(json_object_get(r, "state")), "complete");
    assert_non_null(json_object_get(json_object_get(r, "let_go"), "kept_until"));
    json_decref(r);
    assert_int_equal(pfi_cl_grid_let_go(x.c, "oadr-h-0", &e), PFI_ENOENT);
    assert_null(pfi_cl_grid_report(x.c, "nope", &e));
    assert_int_equal(e.code, PFI_ENOENT);
    rm_db(db);
    site_down(&x);
}

/* Grid events on the site budget: an event in force holds the site under its target whatever
 * the manual budget; an infeasible one is refused with what can be met unless the SLAs yield;
 * a bad one changes nothing; deleting re-plans; events survive reopening. */
static void test_grid_events(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    char db[400];
    snprintf(db, sizeof db, "%s/grid.db", x.dir);
    assert_int_equal(pfi_cl_grid_open(x.c, db, &e), PFI_OK);
    double full = pfi_cl_site_default_w(x.c), now = pfi_clock_wall();
    assert_int_equal(set_budget(&x, 0.9 * full, &e), PFI_OK);
    json_t *body = json_pack("{s:s, s:f, s:f, s:f}", "id", "g1", "start", now - 1,
                             "duration_s", 3600.0, "limit_w", 0.7 * full);
    void *res = NULL;
    int created = 0;
    assert_int_equal(pfi_cl_grid_add(x.c, body, 0, &res, &created, &e), PFI_OK);
    json_decref(body);
    json_decref(res);
    assert_int_equal(created, 1);
    assert_int_equal(pfi_cl_reapply(x.c, &e), PFI_OK); /* the API does it at once */
    res = pfi_cl_grid_json(x.c, "g1");
    assert_true(json_is_true(json_object_get(res, "binding")));
    assert_non_null(json_object_get(json_object_get(res, "cost"), "equal"));
    json_decref(res);
    assert_true(pfi_standin_cap_sum(x.s) <= 0.7 * full + 1e-6);
    /* A manual budget above the event's target does not lift it. */
    assert_int_equal(set_budget(&x, 0.95 * full, &e), PFI_OK);
    assert_true(pfi_standin_cap_sum(x.s) <= 0.7 * full + 1e-6);

    /* Below job B's SLA floor: refused with what can be met, nothing stored. */
    body = json_pack("{s:s, s:f, s:f, s:f}", "id", "deep", "start", now + 600, "duration_s",
                     600.0, "limit_w", 0.3 * full);
    res = NULL;
    assert_int_equal(pfi_cl_grid_add(x.c, body, 0, &res, &created, &e), PFI_EINFEASIBLE);
    double ach = json_number_value(json_object_get(res, "achievable_w"));
    assert_true(ach > 0.3 * full && ach < 0.7 * full);
    json_decref(res);
    json_t *list = pfi_cl_grid_json(x.c, NULL);
    assert_int_equal(json_array_size(json_object_get(list, "events")), 1);
    json_decref(list);
    /* The same with the SLAs yielding: accepted. */
    json_object_set_new(body, "sla", json_string("yield"));
    res = NULL;
    assert_int_equal(pfi_cl_grid_add(x.c, body, 0, &res, &created, &e), PFI_OK);
    json_decref(res);
    json_decref(body);
    assert_int_equal(pfi_cl_reapply(x.c, &e), PFI_OK);
    /* Bad: ends before it starts; above the site's maximum.  Nothing stored. */
    const char *bad[] = {"{\"start\": 2000000000, \"end\": 1999999000, \"limit_w\": 5000}",
                         "{\"start\": 2000000000, \"duration_s\": 60, \"limit_w\": 1e9}"};
    for (int i = 0; i < 2; i++) {
        body = json_loads(bad[i], 0, NULL);
        res = NULL;
        assert_int_not_equal(pfi_cl_grid_add(x.c, body, 0, &res, &created, &e), PFI_OK);
        json_decref(body);
    }
    list = pfi_cl_grid_json(x.c, NULL);
    assert_int_equal(json_array_size(json_object_get(list, "events")), 2);
    json_decref(list);

    /* Deleted: the manual budget is back at once. */
    assert_int_equal(pfi_cl_grid_remove(x.c, "g1", &e), PFI_OK);
    assert_int_equal(pfi_cl_reapply(x.c, &e), PFI_OK);
    double sum = pfi_standin_cap_sum(x.s);
    assert_true(sum > 0.7 * full + 1 && sum <= 0.95 * full + 1e-6);
    assert_int_equal(pfi_cl_grid_remove(x.c, "g1", &e), PFI_ENOENT);
    json_t *rep = pfi_cl_grid_report(x.c, "deep", &e);
    assert_non_null(rep);
    assert_non_null(json_object_get(json_object_get(rep, "cost"), "oracle"));
    json_decref(rep);

    /* Another controller on the same store finds the event. */
    pfi_cl_close(x.c);
    pfi_cl_config cfg;
    pfi_cl_config_defaults(&cfg);
    snprintf(cfg.topo_file, sizeof cfg.topo_file, "%s", x.topo);
    cfg.heartbeat_s = 0;
    assert_int_equal(pfi_cl_open(&cfg, &x.c, &e), PFI_OK);
    assert_int_equal(pfi_cl_grid_open(x.c, db, &e), PFI_OK);
    list = pfi_cl_grid_json(x.c, "deep");
    assert_non_null(list);
    json_decref(list);
    rm_db(db);
    site_down(&x);
}

/* Removes a store file and its journals. */
static void unlink_db(const char *db)
{
    rm_db(db);
}

/* The report's compliance, as text (keys sorted). */
static char *report_text(site *x, const char *id)
{
    pfi_err e = {0};
    json_t *rep = pfi_cl_grid_report(x->c, id, &e);
    if (!rep)
        fail_msg("report of %s: %s", id, e.msg);
    char *s = json_dumps(json_object_get(rep, "compliance"), JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(rep);
    assert_non_null(s);
    return s;
}

/* A site event's report judges its ramps against the level noted when its ramp began (the site
 * budget then): a budget set since changes the plans, not the report. */
static void test_grid_report_level(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    char db[400];
    snprintf(db, sizeof db, "%s/level.db", x.dir);
    assert_int_equal(pfi_cl_grid_open(x.c, db, &e), PFI_OK);
    double full = pfi_cl_site_default_w(x.c), now = pfi_clock_wall();
    assert_int_equal(set_budget(&x, 0.9 * full, &e), PFI_OK);
    json_t *body = json_pack("{s:s, s:f, s:f, s:f, s:f, s:f}", "id", "lv", "start", now + 600,
                             "duration_s", 600.0, "limit_w", 0.7 * full, "ramp_down_s", 900.0,
                             "ramp_up_s", 300.0);
    void *res = NULL;
    int created = 0;
    assert_int_equal(pfi_cl_grid_add(x.c, body, 0, &res, &created, &e), PFI_OK);
    json_decref(body);
    json_decref(res);
    assert_int_equal(pfi_cl_reapply(x.c, &e), PFI_OK); /* its ramp under way: level noted */
    char *before = report_text(&x, "lv");
    assert_int_equal(set_budget(&x, 0.8 * full, &e), PFI_OK);
    char *after = report_text(&x, "lv");
    if (strcmp(before, after))
        fail_msg("the report changed with a budget set after the ramp began:\n%s\n%s", before,
                 after);
    free(before);
    free(after);
    unlink_db(db);
    site_down(&x);
}

/* A VTN's limit below what job B's SLA allows (refused by the API): taken, and held at the
 * least the site can hold with the SLAs kept, said in the note and in its GET (feasible
 * false); one letting the SLAs yield goes deeper. */
static void test_grid_vtn_short(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    char db[400];
    snprintf(db, sizeof db, "%s/short.db", x.dir);
    assert_int_equal(pfi_cl_grid_open(x.c, db, &e), PFI_OK);
    double full = pfi_cl_site_default_w(x.c), now = pfi_clock_wall();
    json_t *body = json_pack("{s:s, s:f, s:f, s:f}", "id", "oadr-deep-0", "start", now - 1,
                             "duration_s", 600.0, "limit_w", 0.3 * full);
    void *res = NULL;
    int created = 0;
    assert_int_equal(pfi_cl_grid_add(x.c, body, 0, &res, &created, &e), PFI_EINFEASIBLE);
    double ach = json_number_value(json_object_get(res, "achievable_w"));
    json_decref(res);
    assert_int_equal(pfi_cl_grid_add(x.c, body, PFI_CL_GRID_TAKE_SHORT, &res, &created, &e),
                     PFI_OK);
    json_decref(res);
    pfi_standin_reset_peak(x.s);
    if (pfi_cl_reapply(x.c, &e) != PFI_OK)
        fail_msg("an event the SLAs cannot meet, taken: %s", e.msg);
    double sum = pfi_standin_cap_sum(x.s);
    if (!(sum <= ach + 1e-6 && sum < 0.95 * full))
        fail_msg("held at %.0f W: the least the SLAs allow is %.0f W (site %.0f W)", sum, ach,
                 full);
    assert_non_null(strstr(x.c->note, "grid_infeasible: event oadr-deep-0"));
    res = pfi_cl_grid_json(x.c, "oadr-deep-0");
    assert_true(json_is_false(json_object_get(res, "feasible")));
    assert_true(json_is_true(json_object_get(res, "binding")));
    json_decref(res);
    /* Held, not said again at every re-plan. */
    x.c->note[0] = 0;
    assert_int_equal(pfi_cl_reapply(x.c, &e), PFI_OK);
    assert_null(strstr(x.c->note, "grid_infeasible"));
    /* The SLAs yielding: the site goes below that. */
    json_object_set_new(body, "sla", json_string("yield"));
    assert_int_equal(pfi_cl_grid_add(x.c, body, PFI_CL_GRID_TAKE_SHORT, &res, &created, &e),
                     PFI_OK);
    json_decref(res);
    json_decref(body);
    assert_int_equal(pfi_cl_reapply(x.c, &e), PFI_OK);
    assert_true(pfi_standin_cap_sum(x.s) < sum - 1);
    unlink_db(db);
    site_down(&x);
}

/* A site event lowered while in force is kept as a revision from then: its report has both
 * definitions, and says when it changed. */
static void test_grid_changed_in_force(void **state)
{
    site x;
    site_up(&x);
    pfi_err e = {0};
    char db[400];
    snprintf(db, sizeof db, "%s/revised.db", x.dir);
    assert_int_equal(pfi_cl_grid_open(x.c, db, &e), PFI_OK);
    double full = pfi_cl_site_default_w(x.c), now = pfi_clock_wall();
    for (int k = 0; k < 2; k++) {
        json_t *body = json_pack("{s:s, s:f, s:f, s:f}", "id", "cv", "start", now - 60,
                                 "duration_s", 600.0, "limit_w", (k ? 0.6 : 0.7) * full);
        void *res = NULL;
        int created = 0;
        assert_int_equal(pfi_cl_grid_add(x.c, body, 0, &res, &created, &e), PFI_OK);
        assert_int_equal(created, !k);
        json_decref(body);
        json_decref(res);
        assert_int_equal(pfi_cl_reapply(x.c, &e), PFI_OK);
    }
    json_t *rep = pfi_cl_grid_report(x.c, "cv", &e);
    assert_non_null(rep);
    json_t *revs = json_object_get(json_object_get(rep, "compliance"), "revisions");
    assert_int_equal(json_array_size(revs), 2);
    assert_true(fabs(json_number_value(json_object_get(json_array_get(revs, 0), "target_w")) -
                     0.7 * full) < 1e-6);
    assert_true(json_number_value(json_object_get(json_array_get(revs, 1), "from_s")) >= now);
    assert_non_null(strstr(json_string_value(json_object_get(rep, "state_message")),
                           "changed while under way"));
    json_decref(rep);
    assert_true(pfi_standin_cap_sum(x.s) <= 0.6 * full + 1e-6);
    unlink_db(db);
    site_down(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gres_idx),
        cmocka_unit_test(test_topo_slurm),
        cmocka_unit_test(test_slurm_timeout_rule),
        cmocka_unit_test(test_slurm_hangs),
        cmocka_unit_test(test_decode_curve),
        cmocka_unit_test(test_cut_and_restore),
        cmocka_unit_test(test_random_budgets_never_over),
        cmocka_unit_test(test_departed_node_counted),
        cmocka_unit_test(test_node_epoch_per_node),
        cmocka_unit_test(test_caps_named_only_where_taken),
        cmocka_unit_test(test_infeasible_changes_nothing),
        cmocka_unit_test(test_silent_node),
        cmocka_unit_test(test_silent_node_draw_left_out),
        cmocka_unit_test(test_silent_from_start_said),
        cmocka_unit_test(test_noop_reapply_not_counted),
        cmocka_unit_test(test_silent_node_extra_gpus_counted),
        cmocka_unit_test(test_node_silent_during_cut),
        cmocka_unit_test(test_node_silent_during_cut_loop),
        cmocka_unit_test(test_new_job_moves_watts),
        cmocka_unit_test(test_sla_breach_seen),
        cmocka_unit_test(test_refresh_keeps_targets),
        cmocka_unit_test(test_ramp),
        cmocka_unit_test(test_ramp_starts_at_caps),
        cmocka_unit_test(test_ramp_end_applied),
        cmocka_unit_test(test_note_cleared),
        cmocka_unit_test(test_silent_nodes_shown),
        cmocka_unit_test(test_decode_caps),
        cmocka_unit_test(test_budget_change_plans_once),
        cmocka_unit_test(test_warm_plan),
        cmocka_unit_test(test_api),
        cmocka_unit_test(test_api_without_token),
        cmocka_unit_test(test_unknown_node_in_topology),
        cmocka_unit_test(test_fewer_gpus_after_restart),
        cmocka_unit_test(test_node_refusing_token),
        cmocka_unit_test(test_topo_json_overlaps),
        cmocka_unit_test(test_grid_events),
        cmocka_unit_test(test_grid_report_level),
        cmocka_unit_test(test_grid_changed_in_force),
        cmocka_unit_test(test_grid_vtn_short),
        cmocka_unit_test(test_budget_resume),
        cmocka_unit_test(test_restart_keeps_extra_gpus),
        cmocka_unit_test(test_silent_node_in_site_record),
        cmocka_unit_test(test_cut_baseline_outside_events),
        cmocka_unit_test(test_let_go_keeps_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
