/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the sweep protocol in virtual time on the simulator (measure.h), of the rate and
 * steady-state meter (meter.h) and of the cap journal (journal.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hw/backend_sim.h"
#include "measure/measure.h"

static void assert_near(double a, double b, double rel)
{
    if (!(fabs(a - b) <= rel * fabs(b)))
        fail_msg("%.9g is not within %g of %.9g", a, rel, b);
}

/* ---- meter ---- */

static pfi_obs count_obs(double v)
{
    pfi_obs o = {.kind = PFI_OBS_COUNT, .unit = PFI_OU_TOKENS, .value = v, .period_s = NAN,
                 .job_t_s = NAN, .step = -1};
    return o;
}

static void test_meter_counts(void **state)
{
    pfi_meter m;
    pfi_meter_init(&m);
    pfi_err e = {0};
    /* 100 tokens/s, a redraw at t=2.5, a counter restart at t=5, a missing line at t=8. */
    double ts[] = {0, 1, 2, 2.5, 3, 4, 5, 6, 7, 9, 10};
    double cs[] = {0, 100, 200, 200, 300, 400, 0, 100, 200, 400, 500};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) {
        pfi_obs o = count_obs(cs[i]);
        assert_int_equal(pfi_meter_add(&m, &o, ts[i], &e), PFI_OK);
    }
    assert_int_equal(m.restarts, 1);
    assert_int_equal(m.n, 8);
    for (int i = 0; i < m.n; i++)
        assert_near(m.s[i].rate, 100, 1e-12);
    pfi_window_stats st;
    pfi_meter_window(&m, 0, 10, &st);
    assert_near(st.mean, 100, 1e-12);
    assert_near(st.lo, 100, 1e-9);
    assert_near(st.hi, 100, 1e-9);
    /* Garbage: negative and non-finite samples never enter. */
    pfi_obs bad = {.kind = PFI_OBS_RATE, .unit = PFI_OU_TOKENS, .value = NAN, .period_s = 1};
    assert_int_equal(pfi_meter_add(&m, &bad, 11, &e), PFI_OK);
    assert_int_equal(m.n, 8);
    /* Another unit is dropped, not mixed in. */
    pfi_obs other = {.kind = PFI_OBS_RATE, .unit = PFI_OU_SAMPLES, .value = 3, .period_s = 1};
    assert_int_equal(pfi_meter_add(&m, &other, 12, &e), PFI_OK);
    assert_int_equal(m.dropped, 1);
    pfi_meter_free(&m);
}

/* Count lines read together get one arrival time (the daemon reads a log once a tick): the
 * tokens of all of them count, over the time to the next read.  Twenty lines a tick, 5,000
 * tokens each, one tick a second: 100,000 tokens/s (it read 5,000: only the first line of a
 * read made an interval, the others moved the count with no time). */
static void test_meter_counts_batched(void **state)
{
    pfi_meter m;
    pfi_meter_init(&m);
    pfi_err e = {0};
    double c = 0;
    for (int tick = 0; tick < 6; tick++)
        for (int line = 0; line < 20; line++) {
            c += 5000;
            pfi_obs o = count_obs(c);
            assert_int_equal(pfi_meter_add(&m, &o, tick, &e), PFI_OK);
        }
    assert_int_equal(m.n, 5);
    for (int i = 0; i < m.n; i++)
        assert_near(m.s[i].rate, 100000, 1e-6);
    pfi_meter_free(&m);
}

/* A progress bar read once a second: whole steps a tick, 2 or 3 of a job at 2.3 it/s.  One
 * tick's sample is off by -13%/+30%; the recent rate (tokens over the window) is within a step
 * over the window, the daemon's baseline.  Forgetting keeps the newest samples and the count. */
static void test_meter_recent_rate(void **state)
{
    pfi_meter m;
    pfi_meter_init(&m);
    pfi_err e = {0};
    assert_true(isnan(pfi_meter_recent_rate(&m, 0)));
    for (int tick = 0; tick <= 60; tick++) {
        pfi_obs o = count_obs(floor(2.3 * tick) * 8192); /* 8 x 1024 tokens a step */
        assert_int_equal(pfi_meter_add(&m, &o, tick, &e), PFI_OK);
    }
    assert_int_equal(m.n, 60);
    double truth = 2.3 * 8192;
    int off = 0;
    for (int i = 0; i < m.n; i++)
        off += fabs(m.s[i].rate - truth) > 0.1 * truth;
    assert_true(off > 30); /* one tick: 16,384 or 24,576 */
    double r = pfi_meter_recent_rate(&m, 60 - 30);
    assert_true(fabs(r - truth) <= 8192.0 / 30 + 1e-9);
    /* only the samples that began at or after from: the last 10 s, 23 steps */
    assert_near(pfi_meter_recent_rate(&m, 50), (floor(2.3 * 60) - floor(2.3 * 50)) * 8192 / 10,
                1e-6);
    pfi_meter_forget_before(&m, 50.5); /* samples ending before 50.5 go: [50,51] stays */
    assert_int_equal(m.n, 10);
    assert_near(m.s[0].t0, 50, 1e-12);
    pfi_meter_forget_before(&m, 1e9);
    assert_int_equal(m.n, 0);
    pfi_obs o = count_obs(floor(2.3 * 61) * 8192); /* the count is kept: the next interval */
    assert_int_equal(pfi_meter_add(&m, &o, 61, &e), PFI_OK);
    assert_int_equal(m.n, 1);
    assert_near(m.s[0].t0, 60, 1e-12);
    pfi_meter_free(&m);
}

/* An observation marked restart (the parser replaced a provisional format, parse.h) makes the
 * meter forget what came before: its samples, its unit and its count. */
static void test_meter_restart(void **state)
{
    pfi_meter m;
    pfi_meter_init(&m);
    pfi_err e = {0};
    for (int i = 0; i < 4; i++) { /* a preprocessing bar: 5 steps/s */
        pfi_obs o = count_obs(5.0 * i);
        o.unit = PFI_OU_STEPS;
        assert_int_equal(pfi_meter_add(&m, &o, i, &e), PFI_OK);
    }
    assert_int_equal(m.n, 3);
    pfi_obs r = {.kind = PFI_OBS_RATE, .unit = PFI_OU_TOKENS, .value = 1000, .period_s = 0.5,
                 .job_t_s = NAN, .step = 1, .restart = 1};
    assert_int_equal(pfi_meter_add(&m, &r, 10, &e), PFI_OK);
    assert_int_equal(m.n, 1);
    assert_int_equal(m.unit, PFI_OU_TOKENS);
    assert_int_equal(m.dropped, 0);
    assert_near(m.s[0].rate, 1000, 0);
    assert_near(m.s[0].t0, 9.5, 0);
    /* The count was forgotten too: a count after the restart starts a new one. */
    r.restart = 0;
    r.value = 1200;
    assert_int_equal(pfi_meter_add(&m, &r, 11, &e), PFI_OK);
    assert_int_equal(m.n, 2);
    assert_int_equal(m.have_count, 0);
    pfi_meter_free(&m);
}

/* A --throughput-regex time per step may be the mean over the steps since the previous line
 * (period_may_span): its rate covers the time since that line when that is longer than the
 * stated step; the stated step alone when it is longer, and on the first line after none. A
 * line 0.3 s after a cap change stating a 300-step mean was counted as 0.3 s of the new level. */
static void test_meter_mean_since_previous(void **state)
{
    pfi_meter m;
    pfi_meter_init(&m);
    pfi_err e = {0};
    pfi_obs o = {.kind = PFI_OBS_RATE, .unit = PFI_OU_STEPS, .value = 50, .period_s = 0.02,
                 .period_may_span = 1, .job_t_s = NAN, .step = -1};
    assert_int_equal(pfi_meter_add(&m, &o, 10, &e), PFI_OK); /* first: its own step */
    assert_int_equal(pfi_meter_add(&m, &o, 16, &e), PFI_OK);
    o.period_s = 9; /* longer than since the previous line: its own */
    assert_int_equal(pfi_meter_add(&m, &o, 20, &e), PFI_OK);
    assert_int_equal(m.n, 3);
    assert_near(m.s[0].t0, 9.98, 1e-12);
    assert_near(m.s[1].t0, 10, 0);
    assert_near(m.s[1].t1, 16, 0);
    assert_near(m.s[2].t0, 11, 0);
    /* A line stating one step's own time (nanoGPT: period_may_span 0) keeps its step. */
    o.period_may_span = 0;
    o.period_s = 0.02;
    assert_int_equal(pfi_meter_add(&m, &o, 30, &e), PFI_OK);
    assert_near(m.s[3].t0, 29.98, 1e-12);
    pfi_meter_free(&m);
}

static void test_meter_job_clock(void **state)
{
    pfi_meter m;
    pfi_meter_init(&m);
    pfi_err e = {0};
    /* Lines arrive in bursts (a pipe), but carry the job's clock: rates stay exact. */
    for (int i = 0; i <= 10; i++) {
        pfi_obs o = count_obs(50.0 * i);
        o.job_t_s = 0.5 * i;
        double arrive = (i / 3) * 1.5 + 0.001 * i;
        assert_int_equal(pfi_meter_add(&m, &o, arrive, &e), PFI_OK);
    }
    for (int i = 0; i < m.n; i++)
        assert_near(m.s[i].rate, 100, 1e-12);
    pfi_meter_free(&m);
}

/* A deterministic noisy series: steady at 1000 +- 2%, after a transient at 1500. */
static void test_steady(void **state)
{
    pfi_meter m;
    pfi_meter_init(&m);
    pfi_err e = {0};
    pfi_steady_cfg c;
    pfi_steady_defaults(&c);
    unsigned s = 12345;
    double win = c.settle_s;
    int steady = 0;
    pfi_window_stats st;
    double t;
    for (t = 0.5; t < 120 && !steady; t += 0.5) {
        s = s * 1103515245u + 12345u;
        double noise = ((double)(s >> 8 & 0xffff) / 65535.0 - 0.5) * 0.04;
        double truth = t < 8 ? 1500 : 1000;
        pfi_obs o = {.kind = PFI_OBS_RATE, .unit = PFI_OU_TOKENS, .value = truth * (1 + noise),
                     .period_s = 0.5, .job_t_s = NAN, .step = -1};
        assert_int_equal(pfi_meter_add(&m, &o, t, &e), PFI_OK);
        steady = pfi_steady_check(&m, &c, t, &win, &st);
    }
    assert_true(steady);
    if (!(win >= 8 - 0.5))
        fail_msg("window from %g at t=%g: mean %g [%g, %g] n=%d", win, t, st.mean, st.lo, st.hi, st.n); /* the transient was dropped */
    assert_true(st.lo <= 1000 && 1000 <= st.hi);
    assert_true(0.5 * (st.hi - st.lo) <= c.rel_ci * st.mean);
    pfi_meter_free(&m);
}

/* ---- journal ---- */

static const char *tmpdir(void)
{
    const char *d = getenv("PFI_TEST_TMP");
    return d && *d ? d : "/tmp";
}

/* The one-GPU preset keeps the simulator's per-sample cost (it integrates the limit history)
 * small enough for ASan. */
static pfi_backend *open_sim(void)
{
    unsetenv("PFI_SIM_STATE");
    pfi_backend *b = NULL;
    pfi_err e = {0};
    if (pfi_hw_open("sim", "h200x1-small", 0, &b, &e) != PFI_OK)
        fail_msg("sim backend: %s", e.msg);
    return b;
}

static void test_journal(void **state)
{
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/journal-XXXXXX", tmpdir());
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/sub/dir/journal", dir);
    pfi_backend *b = open_sim();
    pfi_err e = {0};
    pfi_device d0, d1;
    unsetenv("PFI_SIM_STATE");
    pfi_hw_close(b);
    assert_int_equal(pfi_hw_open("sim", NULL, 0, &b, &e), PFI_OK); /* 8 GPUs */
    assert_int_equal(pfi_hw_info(b, 0, &d0, &e), PFI_OK);
    assert_int_equal(pfi_hw_info(b, 1, &d1, &e), PFI_OK);
    int gpus[] = {0, 1};
    pfi_journal j;
    assert_int_equal(pfi_journal_begin(&j, path, b, gpus, 2, &e), PFI_OK);
    /* While we hold it, nobody else restores or starts over it. */
    pfi_journal other;
    assert_int_equal(pfi_journal_load(&other, path, 0, &e), PFI_EBUSY);
    pfi_journal j2;
    assert_int_equal(pfi_journal_begin(&j2, path, b, gpus, 2, &e), PFI_EBUSY);
    assert_int_equal(pfi_hw_set_limit(b, 0, d0.min_limit_w + 50, NULL, &e), PFI_OK);
    assert_int_equal(pfi_journal_add(&j, b, 2, &e), PFI_OK);
    assert_int_equal(j.n, 3);
    /* The run being stored is named, its store path whole (spaces included), and survives a
     * later add. */
    assert_int_equal(pfi_journal_set_run(&j, "/data/my runs/pfi.db", 42, &e), PFI_OK);
    assert_int_equal(pfi_journal_add(&j, b, 3, &e), PFI_OK);
    assert_int_equal(pfi_journal_load(&other, path, 1, &e), PFI_OK); /* forced: lock is held */
    assert_int_equal(other.held, 0);
    assert_int_equal(other.run_id, 42);
    assert_string_equal(other.run_db, "/data/my runs/pfi.db");
    assert_int_equal(other.n, 4);
    pfi_journal_close(&other);
    /* The writer "crashes": its lock goes, the file stays. */
    pfi_journal_close(&j);
    assert_int_equal(pfi_journal_begin(&j2, path, b, gpus, 2, &e), PFI_EBUSY);
    assert_non_null(strstr(e.msg, "pfi restore"));
    assert_int_equal(pfi_journal_load(&other, path, 0, &e), PFI_OK);
    assert_int_equal(other.held, 1); /* the writer is gone */
    assert_int_equal(other.n, 4);
    assert_int_equal(other.run_id, 42);
    assert_near(other.e[0].limit_w, d0.limit_w, 1e-9);
    int restored = 0;
    assert_int_equal(pfi_journal_restore(&other, b, &restored, &e), PFI_OK);
    pfi_journal_close(&other);
    assert_int_equal(restored, 4);
    pfi_device now;
    assert_int_equal(pfi_hw_info(b, 0, &now, &e), PFI_OK);
    assert_near(now.limit_w, d0.limit_w, 1e-9);
    struct stat st;
    assert_int_not_equal(stat(path, &st), 0);
    assert_int_equal(pfi_journal_load(&other, path, 0, &e), PFI_ENOENT);
    /* A damaged file is refused with its line. */
    FILE *f = fopen(path, "w");
    fputs("pfi-journal 1\ngpu 0 uuid X limit_w banana\n", f);
    fclose(f);
    assert_int_equal(pfi_journal_load(&other, path, 0, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "line 2"));
    unlink(path);
    f = fopen(path, "w");
    fputs("hello\n", f);
    fclose(f);
    assert_int_equal(pfi_journal_load(&other, path, 0, &e), PFI_EINVAL);
    unlink(path);
    pfi_hw_close(b);
}

/* Numbers in a journal are range-checked: an overflowing GPU index, pid or run id, or a limit
 * that is not a finite positive number, is a damaged line, never a wrapped value. */
/* A journal another user could have written is not taken (its lines set any GPU's limit and
 * name a store to open): one writable by others, one of another user's (as root); and with
 * HOME unset the per-user folder is the account's, not /tmp (root's pfi restore with no HOME
 * applied a journal any user could plant in /tmp/.local/state/pfi). */
static void test_journal_untrusted(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/journal-untrusted-%ld", tmpdir(), (long)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("pfi-journal 1\npid 1\nbackend sim\nsim_state -\ngpu 0 uuid X limit_w 500.000\n", f);
    fclose(f);
    assert_int_equal(chmod(path, 0600), 0);
    pfi_journal j;
    pfi_err e = {0};
    assert_int_equal(pfi_journal_peek(&j, path, &e), PFI_OK);
    assert_int_equal(chmod(path, 0666), 0);
    assert_int_equal(pfi_journal_peek(&j, path, &e), PFI_EPERM);
    assert_non_null(strstr(e.msg, "writable by others: not trusted"));
    assert_int_equal(pfi_journal_load(&j, path, 1, &e), PFI_EPERM);
    assert_int_equal(chmod(path, 0600), 0);
    if (geteuid() == 0) {
        assert_int_equal(chown(path, 65534, 65534), 0);
        assert_int_equal(pfi_journal_load(&j, path, 1, &e), PFI_EPERM);
        assert_non_null(strstr(e.msg, "another user's: not trusted"));
    }
    assert_int_equal(unlink(path), 0);
    char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    char *xdg = getenv("XDG_STATE_HOME") ? strdup(getenv("XDG_STATE_HOME")) : NULL;
    char *pj = getenv("PFI_JOURNAL") ? strdup(getenv("PFI_JOURNAL")) : NULL;
    char *ss = getenv("PFI_SIM_STATE") ? strdup(getenv("PFI_SIM_STATE")) : NULL;
    unsetenv("HOME");
    unsetenv("XDG_STATE_HOME");
    unsetenv("PFI_JOURNAL");
    unsetenv("PFI_SIM_STATE");
    char paths[PFI_JOURNAL_DEFAULTS][PFI_JOURNAL_PATH_MAX];
    int n = pfi_journal_default_paths(paths, PFI_JOURNAL_DEFAULTS);
    for (int i = 0; i < n; i++)
        if (!strncmp(paths[i], "/tmp/", 5))
            fail_msg("with HOME unset a journal is looked for in %s", paths[i]);
    if (home)
        setenv("HOME", home, 1);
    if (xdg)
        setenv("XDG_STATE_HOME", xdg, 1);
    if (pj)
        setenv("PFI_JOURNAL", pj, 1);
    if (ss)
        setenv("PFI_SIM_STATE", ss, 1);
    free(home), free(xdg), free(pj), free(ss);
}

static void test_journal_hostile_numbers(void **state)
{
    const char *bad[] = {
        "pfi-journal 1\ngpu 2147483648 uuid X limit_w 500\n",
        "pfi-journal 1\ngpu -1 uuid X limit_w 500\n",
        "pfi-journal 1\ngpu 0 uuid X limit_w inf\n",
        "pfi-journal 1\ngpu 0 uuid X limit_w nan\n",
        "pfi-journal 1\ngpu 0 uuid X limit_w 1e999\n",
        "pfi-journal 1\ngpu 0 uuid X limit_w 500 trailing\n",
        "pfi-journal 1\npid 99999999999999999999\n",
        "pfi-journal 1\npid 12abc\n",
        "pfi-journal 1\nrun 9223372036854775808 /x.db\n",
        "pfi-journal 1\nrun 0 /x.db\n",
        "pfi-journal 4294967297\n",
        /* Cut short (a damaged disk, a copy stopped midway): "limit_w 700.000" cut to "70" was
         * read as 70 W, and a cut run line as a shorter store path.  Every line the journal
         * writes ends in a newline, so one without it is damaged. */
        "pfi-journal 1\ngpu 0 uuid X limit_w 70",
        "pfi-journal 1\nrun 3 /x.d",
        "pfi-journal 1\npid 42",
        /* A limit beyond any GPU (1e308 was tried, and its error printed 309 digits) or not
         * in the decimal form written; a GPU given twice (by index or by UUID: the second
         * line won); a line the restore would skip (a "gpu" with a flipped byte, a "backend"
         * cut to its word): each left a GPU unrestored while the file was deleted. */
        "pfi-journal 1\ngpu 0 uuid X limit_w 1e308\n",
        "pfi-journal 1\ngpu 0 uuid X limit_w 100001\n",
        "pfi-journal 1\ngpu 0 uuid X limit_w 0x2BC\n",
        "pfi-journal 1\ngpu 0 uuid X limit_w 500\ngpu 0 uuid Y limit_w 600\n",
        "pfi-journal 1\ngpu 0 uuid X limit_w 500\ngpu 1 uuid X limit_w 600\n",
        "pfi-journal 1\ngpu 0 uuid X limit_w 500\ngpv 1 uuid Y limit_w 600\n",
        "pfi-journal 1\nbackend\ngpu 0 uuid X limit_w 500\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fmemopen((void *)bad[i], strlen(bad[i]), "r");
        assert_non_null(f);
        pfi_journal j;
        memset(&j, 0, sizeof j);
        pfi_err e = {0};
        int rc = pfi_journal_parse(&j, f, "t", &e);
        fclose(f);
        if (rc != PFI_EINVAL)
            fail_msg("accepted: %s", bad[i]);
    }
    const char *good = "pfi-journal 1\npid 4242\nbackend nvml\nsim_state /tmp/a sim/state\n"
                       "run 9223372036854775807 /a b.db\ngpu 2147483647 uuid U limit_w 612.5\n";
    FILE *f = fmemopen((void *)good, strlen(good), "r");
    pfi_journal j;
    memset(&j, 0, sizeof j);
    pfi_err e = {0};
    assert_int_equal(pfi_journal_parse(&j, f, "t", &e), PFI_OK);
    fclose(f);
    assert_int_equal(j.pid, 4242);
    assert_true(j.run_id == 9223372036854775807LL);
    assert_string_equal(j.run_db, "/a b.db");
    assert_string_equal(j.sim_state, "/tmp/a sim/state"); /* was "/tmp/a" */
    assert_int_equal(j.e[0].gpu, 2147483647);
    assert_near(j.e[0].limit_w, 612.5, 1e-12);
    /* The most GPUs a journal holds parse; one more is damage, not a GPU left out. */
    size_t cap = 64 + (PFI_MAX_GPUS + 1) * 48;
    char *many = malloc(cap);
    assert_non_null(many);
    size_t len = (size_t)snprintf(many, cap, "pfi-journal 1\n");
    for (int i = 0; i <= PFI_MAX_GPUS; i++) {
        if (i == PFI_MAX_GPUS) {
            f = fmemopen(many, len, "r");
            memset(&j, 0, sizeof j);
            assert_int_equal(pfi_journal_parse(&j, f, "t", &e), PFI_OK);
            fclose(f);
            assert_int_equal(j.n, PFI_MAX_GPUS);
        }
        len += (size_t)snprintf(many + len, cap - len, "gpu %d uuid - limit_w 700.000\n", i);
    }
    f = fmemopen(many, len, "r");
    memset(&j, 0, sizeof j);
    assert_int_equal(pfi_journal_parse(&j, f, "t", &e), PFI_EINVAL);
    fclose(f);
    free(many);
}

/* The journal is its owner's alone (0600), a held one names its holder, and a simulated node
 * never uses the real journal's path. */
static void test_journal_mode_holder_path(void **state)
{
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/journal-XXXXXX", tmpdir());
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/journal", dir);
    pfi_backend *b = open_sim();
    pfi_err e = {0};
    int gpus[] = {0};
    mode_t old = umask(022);
    pfi_journal j;
    assert_int_equal(pfi_journal_begin(&j, path, b, gpus, 1, &e), PFI_OK);
    umask(old);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    pfi_journal other;
    assert_int_equal(pfi_journal_load(&other, path, 0, &e), PFI_EBUSY);
    char pid[32];
    snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
    assert_non_null(strstr(e.msg, pid));
    assert_non_null(strstr(e.msg, "test_sweep")); /* the holder's command line */
    assert_int_equal(pfi_journal_restore(&j, b, NULL, &e), PFI_OK);
    pfi_journal_close(&j);
    pfi_hw_close(b);
    rmdir(dir);

    char buf[1024], real[1024];
    unsetenv("PFI_JOURNAL");
    unsetenv("PFI_SIM_STATE");
    pfi_journal_default_path(real, sizeof real, 0);
    pfi_journal_default_path(buf, sizeof buf, 1);
    assert_string_not_equal(buf, real);
    assert_non_null(strstr(buf, "journal-sim"));
    setenv("PFI_SIM_STATE", "/tmp/some node.state", 1);
    assert_string_equal(pfi_journal_default_path(buf, sizeof buf, 1), "/tmp/some node.state.journal");
    assert_string_equal(pfi_journal_default_path(buf, sizeof buf, 0), real);
    setenv("PFI_JOURNAL", "/x/j", 1); /* an explicit path is always taken */
    assert_string_equal(pfi_journal_default_path(buf, sizeof buf, 1), "/x/j");
    unsetenv("PFI_JOURNAL");
    unsetenv("PFI_SIM_STATE");
}

/* ---- the sweep in virtual time ---- */

typedef struct sink_log {
    int begun, levels, ended;
    long ticks;
    char status[16];
} sink_log;

static int sk_begin(void *ctx, const pfi_run *run, pfi_err *err)
{
    ((sink_log *)ctx)->begun++;
    return PFI_OK;
}
static int sk_level(void *ctx, const pfi_run *run, int idx, const pfi_sample *s, int nt,
                    const int *gpus, int n, pfi_err *err)
{
    sink_log *l = ctx;
    l->levels++;
    l->ticks += nt;
    for (int i = 1; i < nt; i++)
        assert_true(s[(size_t)i * (size_t)n].t_s > s[(size_t)(i - 1) * (size_t)n].t_s);
    return PFI_OK;
}
static void sk_end(void *ctx, const pfi_run *run, const char *status)
{
    sink_log *l = ctx;
    l->ended++;
    snprintf(l->status, sizeof l->status, "%s", status);
}

static void test_sweep_virtual(void **state)
{
    pfi_backend *b = open_sim();
    assert_true(pfi_backend_sim_virtual(b));
    pfi_sim_node *node = pfi_backend_sim_node(b);
    const pfi_node_config *nc = pfi_sim_node_config(node);
    const pfi_job_config *job = &nc->jobs[0];
    pfi_sweep_cfg c;
    pfi_sweep_defaults(&c);
    c.n_gpus = job->n_gpus;
    for (int i = 0; i < c.n_gpus; i++)
        c.gpus[i] = job->first_gpu + i;
    double lv[] = {1.0, 0.8, 0.6, 0.5};
    memcpy(c.levels, lv, sizeof lv);
    c.n_levels = 4;
    c.levels_frac = 1;
    c.threaded_sampler = 0;
    sink_log sl = {0};
    c.sink = (pfi_sweep_sink){&sl, sk_begin, sk_level, sk_end, NULL};
    pfi_tput_source *src;
    pfi_err e = {0};
    assert_int_equal(pfi_source_sim(0, &src, &e), PFI_OK);
    pfi_sweep_result *r = malloc(sizeof *r);
    int rc = pfi_sweep_run(b, src, &c, r, &e);
    if (rc != PFI_OK)
        fail_msg("sweep: %s", e.msg);
    assert_string_equal(r->status, "done");
    assert_true(r->restored);
    assert_int_equal(sl.begun, 1);
    assert_int_equal(sl.ended, 1);
    assert_string_equal(sl.status, "done");
    /* 100% is the default limit on this preset: the baseline covers it. */
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, c.gpus[0], &d, &e), PFI_OK);
    int expect = fabs(d.default_limit_w - d.max_limit_w) < 0.5 ? 4 : 5;
    assert_int_equal(r->run.n_levels, expect);
    assert_int_equal(sl.levels, expect);
    assert_near(r->run.levels[0].cap_w, d.default_limit_w, 1e-9);
    assert_near(d.limit_w, d.default_limit_w, 1e-9); /* restored */
    for (int i = 0; i < r->run.n_levels; i++) {
        const pfi_level *L = &r->run.levels[i];
        pfi_sim_steady truth;
        assert_int_equal(pfi_sim_job_steady(node, 0, L->cap_w, &truth, &e), PFI_OK);
        /* Within its CI (the simulator's own jitter aside, a sweep should hit the truth). */
        double tol = fmax(0.5 * (L->tput_hi - L->tput_lo), 1e-3 * truth.tokens_per_s);
        if (fabs(L->tput - truth.tokens_per_s) > tol)
            fail_msg("cap %.0f W: measured %.1f [%.1f, %.1f], truth %.1f", L->cap_w, L->tput,
                     L->tput_lo, L->tput_hi, truth.tokens_per_s);
        assert_true(r->steady[i]);
        assert_true(L->n_samples > 0);
        assert_true(L->power_w <= L->cap_w + 5);
        assert_true(isfinite(L->sm_clock_mhz));
        assert_true(L->t_end_s > L->t_start_s);
        if (i > 0) {
            assert_true(L->tput <= r->run.levels[i - 1].tput * 1.001);
            assert_true(L->power_w < r->run.levels[i - 1].power_w);
        }
    }
    assert_true(r->run.levels[r->run.n_levels - 1].powercap_frac > 0.5);
    free(r);
    pfi_source_free(src);
    pfi_hw_close(b);
}

static void test_sweep_bad_levels(void **state)
{
    pfi_backend *b = open_sim();
    pfi_sweep_cfg c;
    pfi_sweep_defaults(&c);
    c.n_gpus = 1;
    c.gpus[0] = 0;
    c.levels[0] = 50; /* watts, below any minimum */
    c.n_levels = 1;
    c.threaded_sampler = 0;
    pfi_tput_source *src;
    pfi_err e = {0};
    assert_int_equal(pfi_source_sim(0, &src, &e), PFI_OK);
    pfi_sweep_result *r = malloc(sizeof *r);
    assert_int_equal(pfi_sweep_run(b, src, &c, r, &e), PFI_ERANGE);
    assert_non_null(strstr(e.msg, "50 W"));
    assert_int_equal(r->run.n_levels, 0);
    free(r);
    pfi_source_free(src);
    pfi_hw_close(b);
}

/* The baseline against the limits in force (GPU 0 held at 500 W): the default limit raises
 * it, said in the note; --baseline current starts at 500 W and leaves out every level above. */
static void test_sweep_plan_baseline(void **state)
{
    pfi_backend *b = open_sim();
    pfi_err e = {0};
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, 0, &d, &e), PFI_OK);
    assert_int_equal(pfi_hw_set_limit(b, 0, 500, NULL, &e), PFI_OK);
    pfi_sweep_cfg c;
    pfi_sweep_defaults(&c);
    c.n_gpus = 1;
    double lv[] = {1.0, 0.8, 0.6};
    memcpy(c.levels, lv, sizeof lv);
    c.n_levels = 3;
    c.levels_frac = 1;
    double caps[PFI_MAX_LEVELS][PFI_MAX_GPUS];
    int n = 0;
    pfi_sweep_plan_note note;
    assert_int_equal(pfi_sweep_plan(b, &c, caps, &n, &note, &e), PFI_OK);
    assert_near(caps[0][0], d.default_limit_w, 1e-9);
    assert_int_equal(note.n_raised, 1);
    assert_int_equal(note.raised_gpu[0], 0);
    assert_near(note.raised_from_w[0], 500, 1e-9);
    assert_near(note.raised_to_w[0], d.default_limit_w, 1e-9);
    assert_int_equal(note.n_dropped, 0);
    c.baseline_current = 1;
    assert_int_equal(pfi_sweep_plan(b, &c, caps, &n, &note, &e), PFI_OK);
    assert_near(caps[0][0], 500, 1e-9);
    assert_int_equal(note.n_raised, 0);
    int below = 0;
    for (int l = 0; l < 3; l++)
        below += lv[l] * d.max_limit_w <= 500;
    assert_int_equal(n, 1 + below);
    assert_int_equal(note.n_dropped, 3 - below);
    for (int k = 0; k < n; k++)
        assert_true(caps[k][0] <= 500);
    pfi_hw_close(b);
}

/* Starts of one journal at once (two sweeps, a sweep and pfi serve): one wins, the others are
 * refused.  Each checked that no journal was there, wrote its own and locked it: several ran,
 * and the first to end deleted the journal of another, whose crash left its GPUs capped. */
static void test_journal_race(void **state)
{
    (void)state;
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/journal-race-XXXXXX", tmpdir());
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/journal", dir);
    unsetenv("PFI_SIM_STATE");
    enum { N = 8 };
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t kid[N];
    for (int k = 0; k < N; k++) {
        kid[k] = fork();
        assert_true(kid[k] >= 0);
        if (kid[k] == 0) {
            close(go[1]);
            char c;
            pfi_backend *b = NULL;
            pfi_err e = {0};
            if (pfi_hw_open("sim", NULL, 0, &b, &e) != PFI_OK)
                _exit(3);
            if (read(go[0], &c, 1) != 1)
                _exit(4);
            int gpus[] = {0, 1};
            pfi_journal j;
            int rc = pfi_journal_begin(&j, path, b, gpus, 2, &e);
            if (rc == PFI_OK)
                usleep(300 * 1000); /* held while the others try */
            _exit(rc == PFI_OK ? 0 : rc == PFI_EBUSY ? 1 : 2);
        }
    }
    close(go[0]);
    char all[N];
    memset(all, 'g', sizeof all);
    assert_int_equal(write(go[1], all, N), N);
    close(go[1]);
    int won = 0, busy = 0;
    for (int k = 0; k < N; k++) {
        int st;
        assert_int_equal(waitpid(kid[k], &st, 0), kid[k]);
        assert_true(WIFEXITED(st));
        won += WEXITSTATUS(st) == 0;
        busy += WEXITSTATUS(st) == 1;
    }
    assert_int_equal(won, 1);
    assert_int_equal(busy, N - 1);
    char lk[640];
    snprintf(lk, sizeof lk, "%s.lock", path);
    unlink(path);
    unlink(lk);
    rmdir(dir);
}

/* Two journals on one GPU: the second is refused while the first holds it (each GPU has one
 * lock, whatever the journal's path), naming the GPU and the holder; on another GPU it goes;
 * once the first is closed, the GPU is free.  A simulated node's locks live beside its state. */
static void test_gpu_lock_across_journals(void **state)
{
    (void)state;
    char dir[512], p1[600], p2[600], ss[600];
    snprintf(dir, sizeof dir, "%s/gpulock-XXXXXX", tmpdir());
    assert_non_null(mkdtemp(dir));
    snprintf(p1, sizeof p1, "%s/j1", dir);
    snprintf(p2, sizeof p2, "%s/j2", dir);
    snprintf(ss, sizeof ss, "%s/node.sim", dir);
    setenv("PFI_SIM_STATE", ss, 1);
    unsetenv("PFI_LOCK_DIR");
    pfi_backend *b = NULL;
    pfi_err e = {0};
    assert_int_equal(pfi_hw_open("sim", NULL, 0, &b, &e), PFI_OK);
    int g01[] = {0, 1}, g1[] = {1}, g2[] = {2};
    pfi_journal j1, j2;
    assert_int_equal(pfi_journal_begin(&j1, p1, b, g01, 2, &e), PFI_OK);
    assert_int_equal(pfi_journal_check_gpus_free(b, g1, 1, &e), PFI_EBUSY);
    assert_int_equal(pfi_journal_begin(&j2, p2, b, g1, 1, &e), PFI_EBUSY);
    char want[96];
    snprintf(want, sizeof want, "GPU 1's power limit is being changed by pid %ld", (long)getpid());
    if (!strstr(e.msg, want))
        fail_msg("'%s' does not say '%s'", e.msg, want);
    assert_int_equal(access(p2, F_OK), -1); /* nothing written */
    assert_int_equal(pfi_journal_begin(&j2, p2, b, g2, 1, &e), PFI_OK);
    pfi_journal_close(&j2);
    unlink(p2);
    pfi_journal_close(&j1);
    /* j1 closed without a restore, as a killed sweep: its journal is still there, so its
     * GPUs' limits are its caps, not their originals.  A journal elsewhere would take them for
     * the originals and "restore" the caps at the end: refused, naming the journal left. */
    /* ... every time: a refusal (or a look) leaves the lock file naming the journal left (a
     * refused start wrote its own there, and the next try went on) */
    for (int again = 0; again < 3; again++) {
        assert_int_equal(pfi_journal_check_gpus_free(b, g01, 2, &e), PFI_EBUSY);
        assert_int_equal(pfi_journal_begin(&j2, p2, b, g1, 1, &e), PFI_EBUSY);
        if (!strstr(e.msg, p1) || !strstr(e.msg, "pfi restore --journal"))
            fail_msg("try %d: '%s' does not name the journal left, %s", again, e.msg, p1);
    }
    assert_int_equal(pfi_journal_begin(&j2, p2, b, g2, 1, &e), PFI_OK); /* not j1's GPU */
    pfi_journal_close(&j2);
    unlink(p2);
    unlink(p1); /* restored */
    assert_int_equal(pfi_journal_check_gpus_free(b, g01, 2, &e), PFI_OK);
    assert_int_equal(pfi_journal_begin(&j2, p2, b, g1, 1, &e), PFI_OK);
    pfi_journal_close(&j2);
    char ld[640];
    snprintf(ld, sizeof ld, "%s.locks", ss);
    struct stat st;
    assert_int_equal(stat(ld, &st), 0);
    pfi_hw_close(b);
    char rm[700];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    assert_int_equal(system(rm), 0);
    unsetenv("PFI_SIM_STATE");
}

/* A GPU's lock file another user planted and holds (in /run/lock anyone may create one, and a
 * GPU's UUID is public) is no lock to root, who alone can change a power limit: it is replaced
 * and taken.  It stopped root's pfi serve from starting, naming a pid the user wrote.  Not
 * root, the same file is a holder like any other (refused). */
static void test_gpu_lock_planted(void **state)
{
    (void)state;
    char dir[512], path[640];
    snprintf(dir, sizeof dir, "%s/gpulock-planted-XXXXXX", tmpdir());
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chmod(dir, 01777), 0);
    snprintf(path, sizeof path, "%s/pfi-gpu-GPU-x.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "1\n", 2), 2);
    if (geteuid() == 0)
        assert_int_equal(fchown(fd, 65534, 65534), 0); /* nobody's */
    assert_int_equal(flock(fd, LOCK_EX), 0);
    pfi_gpu_locks l = {0};
    pfi_err e = {0};
    int rc = pfi_gpu_lock(&l, dir, 0, "GPU-x", NULL, NULL, &e);
    if (geteuid() == 0) {
        if (rc != PFI_OK)
            fail_msg("a planted lock refused root: %s", e.msg);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal((int)st.st_uid, 0); /* root's own file now */
    } else {
        assert_int_equal(rc, PFI_EBUSY);
    }
    pfi_gpu_locks_release(&l);
    close(fd);
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
}

/* Root's GPU locks are in a folder of root's, its files 0600 (made so when an older pfi left
 * them 0644): a user who opened root's 0644 lock file in /run/lock and held it kept root's pfi
 * serve from starting at every restart.  A folder a user made first in the shared /run/lock is
 * moved aside, never used.  Not root, no folder it makes is root's: -1 (such a user's locks
 * stay in /run/lock itself, 0644 between users). */
static void test_gpu_lock_root_dir(void **state)
{
    (void)state;
    char base[512], dir[600], path[700];
    snprintf(base, sizeof base, "%s/gpulock-root-XXXXXX", tmpdir());
    assert_non_null(mkdtemp(base));
    assert_int_equal(chmod(base, 01777), 0);
    snprintf(dir, sizeof dir, "%s/pfi", base);
    assert_int_equal(mkdir(dir, 0777), 0);
    assert_int_equal(chmod(dir, 0777), 0);
    snprintf(path, sizeof path, "%s/pfi-gpu-GPU-y.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT, 0644); /* as an older pfi left it */
    assert_true(fd >= 0);
    assert_int_equal(fchmod(fd, 0644), 0);
    close(fd);
    if (geteuid() == 0)
        assert_int_equal(chown(dir, 65534, 65534), 0); /* a user's, made first */
    char got[700];
    int rc = pfi_gpu_lock_root_dir(base, got, sizeof got);
    assert_string_equal(got, dir);
    struct stat st;
    if (geteuid() == 0) {
        assert_int_equal(rc, 0);
        assert_int_equal(lstat(dir, &st), 0);
        assert_true(S_ISDIR(st.st_mode) && st.st_uid == 0 && !(st.st_mode & 022));
        assert_int_equal(stat(path, &st), -1); /* the user's folder moved aside */
        pfi_gpu_locks l = {0};
        pfi_err e = {0};
        if (pfi_gpu_lock(&l, dir, 0, "GPU-y", NULL, NULL, &e) != PFI_OK)
            fail_msg("root's lock in its own folder: %s", e.msg);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal((int)(st.st_mode & 0777), 0600);
        pfi_gpu_locks_release(&l);
        /* A folder a user made and systemd-tmpfiles made root's keeps the user's entries: a
         * link or a folder named after a GPU's lock is moved aside, not an error at every
         * start until a reboot. */
        char z[800], zl[800];
        snprintf(z, sizeof z, "%s/pfi-gpu-GPU-z.lock", dir);
        assert_int_equal(symlink("/etc/passwd", z), 0);
        snprintf(zl, sizeof zl, "%s/pfi-gpu-GPU-w.lock", dir);
        assert_int_equal(mkdir(zl, 0755), 0);
        pfi_gpu_locks l2 = {0};
        if (pfi_gpu_lock(&l2, dir, 0, "GPU-z", NULL, NULL, &e) != PFI_OK ||
            pfi_gpu_lock(&l2, dir, 0, "GPU-w", NULL, NULL, &e) != PFI_OK)
            fail_msg("a lock whose name a link or a folder took: %s", e.msg);
        assert_int_equal(lstat(z, &st), 0);
        assert_true(S_ISREG(st.st_mode) && st.st_uid == 0);
        assert_int_equal(lstat(zl, &st), 0);
        assert_true(S_ISREG(st.st_mode) && st.st_uid == 0);
        pfi_gpu_locks_release(&l2);
    } else {
        assert_int_equal(rc, 0 - 1);
    }
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    assert_int_equal(system(cmd), 0);
}

/* Root's default folder of locks, taken over by a user (chowned here): a lock taken in it is
 * refused, never traded for the shared /run/lock where another root process would lock apart;
 * the next pfi_gpu_lock_dir moves it aside and makes root's anew.  Not root: the shared folder. */
static void test_gpu_lock_root_default(void **state)
{
    (void)state;
    char *env = getenv("PFI_LOCK_DIR") ? strdup(getenv("PFI_LOCK_DIR")) : NULL;
    unsetenv("PFI_LOCK_DIR");
    char dir[256];
    assert_int_equal(pfi_gpu_lock_dir(NULL, 0, dir, sizeof dir), 1);
    struct stat st;
    if (geteuid() != 0) {
        assert_null(strstr(dir, "/pfi"));
    } else {
        assert_non_null(strstr(dir, "/pfi"));
        assert_int_equal(lstat(dir, &st), 0);
        assert_true(S_ISDIR(st.st_mode) && st.st_uid == 0 && !(st.st_mode & 022));
        assert_int_equal(chown(dir, 65534, 65534), 0);
        pfi_gpu_locks l = {0};
        pfi_err e = {0};
        assert_int_equal(pfi_gpu_lock(&l, dir, 0, "GPU-root-default-test", NULL, NULL, &e),
                         PFI_EPERM);
        assert_non_null(strstr(e.msg, "is not root's alone"));
        assert_int_equal(pfi_gpu_lock_dir(NULL, 0, dir, sizeof dir), 1);
        assert_int_equal(lstat(dir, &st), 0);
        assert_true(st.st_uid == 0 && !(st.st_mode & 022));
        assert_int_equal(pfi_gpu_lock(&l, dir, 0, "GPU-root-default-test", NULL, NULL, &e),
                         PFI_OK);
        pfi_gpu_locks_release(&l);
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -f '%s/pfi-gpu-GPU-root-default-test.lock'; rm -rf "
                 "'%s'.untrusted.*", dir, dir);
        assert_int_equal(system(cmd), 0);
    }
    if (env)
        setenv("PFI_LOCK_DIR", env, 1);
    free(env);
}

/* A journal held by a process that is not its writer (a restore of it) is said to be held by
 * that process, from the kernel's list of locks, not by the writer the file names (dead, or
 * its pid reused by an unrelated program). */
static void test_journal_holder_named(void **state)
{
    (void)state;
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/journal-holder-XXXXXX", tmpdir());
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/journal", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("pfi-journal 1\npid 999999999\nbackend sim\ngpu 0 uuid - limit_w 700.000\n", f);
    fclose(f);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX), 0); /* "the restore": this process */
    pfi_journal j;
    pfi_err e = {0};
    assert_int_equal(pfi_journal_load(&j, path, 0, &e), PFI_EBUSY);
    char want[64];
    snprintf(want, sizeof want, "is held by pid %ld", (long)getpid());
    if (!strstr(e.msg, want) || !strstr(e.msg, "its writer was pid 999999999"))
        fail_msg("'%s' does not name the holder (%s)", e.msg, want);
    close(fd);
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
}

/* A peek (a read-only daemon) reads the journal and tells a live writer from a dead one by the
 * kernel's list of locks, leaving the lock as it found it. */
static void test_journal_peek(void **state)
{
    (void)state;
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/journal-peek-XXXXXX", tmpdir());
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/journal", dir);
    pfi_journal j;
    pfi_err e = {0};
    assert_int_equal(pfi_journal_peek(&j, path, &e), PFI_ENOENT);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("pfi-journal 1\npid 999999999\nbackend sim\ngpu 0 uuid GPU-x limit_w 612.345\n", f);
    fclose(f);
    assert_int_equal(pfi_journal_peek(&j, path, &e), PFI_OK);
    assert_int_equal(j.writer_runs, 0);
    assert_int_equal(j.n, 1);
    assert_float_equal(j.e[0].limit_w, 612.345, 1e-9);
    assert_int_equal(j.lock_fd, -1);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0); /* the peek left it free */
    assert_int_equal(pfi_journal_peek(&j, path, &e), PFI_OK);
    assert_int_equal(j.writer_runs, 1); /* "the writer": this process */
    close(fd);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("pfi-journal 1\npid 12\ngpu 0 uuid GPU-x limit_w", f); /* cut mid-line */
    fclose(f);
    assert_int_equal(pfi_journal_peek(&j, path, &e), PFI_EINVAL);
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
}

/* A start that holds PATH.lock and never lets go (stopped) makes the next start give up with
 * a reason after a bounded wait, not hang. */
static void test_journal_lock_stuck(void **state)
{
    (void)state;
    char dir[512], path[600], lk[640];
    snprintf(dir, sizeof dir, "%s/journal-stuck-XXXXXX", tmpdir());
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/journal", dir);
    snprintf(lk, sizeof lk, "%s.lock", path);
    unsetenv("PFI_SIM_STATE");
    int fd = open(lk, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX), 0); /* another open file: flock conflicts */
    pfi_backend *b = NULL;
    pfi_err e = {0};
    assert_int_equal(pfi_hw_open("sim", NULL, 0, &b, &e), PFI_OK);
    int gpus[] = {0};
    pfi_journal j;
    assert_int_equal(pfi_journal_begin(&j, path, b, gpus, 1, &e), PFI_EBUSY);
    /* No pid written: the kernel's list of locks names the holder all the same. */
    char me[64];
    snprintf(me, sizeof me, "held by pid %ld", (long)getpid());
    if (!strstr(e.msg, me))
        fail_msg("'%s' does not say '%s'", e.msg, me);
    /* A start writes its pid there: the one that waits in vain names it. */
    int len = snprintf(me, sizeof me, "%ld\n", (long)getpid());
    assert_int_equal(pwrite(fd, me, (size_t)len, 0), len);
    assert_int_equal(pfi_journal_begin(&j, path, b, gpus, 1, &e), PFI_EBUSY);
    snprintf(me, sizeof me, "held by pid %ld", (long)getpid());
    assert_non_null(strstr(e.msg, me));
    assert_int_equal(access(path, F_OK), -1); /* nothing written */
    close(fd);
    assert_int_equal(pfi_journal_begin(&j, path, b, gpus, 1, &e), PFI_OK);
    pfi_journal_close(&j);
    pfi_hw_close(b);
    unlink(path);
    unlink(lk);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meter_counts),     cmocka_unit_test(test_meter_counts_batched),
        cmocka_unit_test(test_meter_job_clock),
        cmocka_unit_test(test_meter_mean_since_previous),
        cmocka_unit_test(test_meter_restart),
        cmocka_unit_test(test_steady),           cmocka_unit_test(test_journal),
        cmocka_unit_test(test_journal_race),     cmocka_unit_test(test_journal_lock_stuck),
        cmocka_unit_test(test_gpu_lock_across_journals),
        cmocka_unit_test(test_gpu_lock_planted),
        cmocka_unit_test(test_gpu_lock_root_dir),
        cmocka_unit_test(test_gpu_lock_root_default),
        cmocka_unit_test(test_journal_holder_named),
        cmocka_unit_test(test_journal_peek),
        cmocka_unit_test(test_meter_recent_rate),
        cmocka_unit_test(test_journal_hostile_numbers),
        cmocka_unit_test(test_journal_untrusted),
        cmocka_unit_test(test_journal_mode_holder_path),
        cmocka_unit_test(test_sweep_virtual),    cmocka_unit_test(test_sweep_bad_levels),
        cmocka_unit_test(test_sweep_plan_baseline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
