/* SPDX-License-Identifier: Apache-2.0 */
/* A budget sampler for the daemons' integration tests (tests/it_serve.sh, it_chaos.sh, ...), and
 * its own tests.
 *
 *   test_serve_sampler --sample STATE ALLOWED OUT
 *   test_serve_sampler --sample-site ALLOWED OUT STATE...   (a site: one state per node)
 *   test_serve_sampler --watch ALLOWED OUT STATE... [--and ALLOWED OUT STATE...]...
 * attaches to the simulator's shared states (the ones the fake NVML serves from) and, until the
 * file OUT.stop of the first group appears, compares the sum of all GPUs' power limits at single
 * instants with the watts in file ALLOWED; --watch checks several groups (a node, a site) in
 * turn from one process.  A state is read without its lock (pfi_sim_state_limit_sum: the first
 * n changes of its append-only log, n read atomically), never GPU by GPU at different times.
 * ALLOWED is read between two samples (cheaply: re-read only when the file was replaced, so
 * tests write it to a temporary file and rename it) and each sample is checked against the
 * larger of the readings just before and just after it, so a test that raises it before raising
 * the budget and lowers it after a cut completes never sees a false alarm.  ALLOWED may
 * instead be a schedule: a first line "schedule", then lines "T W" in time order, T in seconds
 * of pfi's wall clock (util/clock.h, scaled like the daemons' when PFI_CLOCK_SCALE is set): W
 * is allowed from T on (the first W before the first T), so a test states a ramp's steps ahead
 * of time and the sampler holds each from its exact start.  Each OUT gets
 * "samples N violations V max_sum W max_over W": first once every state is open (a test waits
 * for it before it changes a limit: tests/support/sampler.sh), then every 4096 rounds and at
 * the end.  It exits 0 only when it watched until OUT.stop appeared.
 *
 * Run with no argument, it tests itself: a state kept under the allowed sum is never reported,
 * one over it is. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "hw/hw.h"
#include "sim/sim.h"
#include "util/clock.h"
#include "support/files.h"

#define SITE_MAX 16
#define GROUPS_MAX 8

#define STEPS_MAX 4096

/* The watts in a file that tests replace by rename: parsed again only when stat says it
 * changed; a schedule is kept and evaluated at each reading. */
typedef struct allowed_file {
    const char *path;
    struct stat st;
    int known;
    double watts;  /* a plain value, or the last one read */
    int n_steps;   /* > 0: a schedule */
    double step_t[STEPS_MAX], step_w[STEPS_MAX];
} allowed_file;

static double read_allowed(allowed_file *a)
{
    struct stat st;
    if (stat(a->path, &st) == 0 &&
        !(a->known && st.st_ino == a->st.st_ino && st.st_size == a->st.st_size &&
          st.st_mtim.tv_sec == a->st.st_mtim.tv_sec &&
          st.st_mtim.tv_nsec == a->st.st_mtim.tv_nsec &&
          st.st_ctim.tv_sec == a->st.st_ctim.tv_sec &&
          st.st_ctim.tv_nsec == a->st.st_ctim.tv_nsec)) {
        FILE *f = fopen(a->path, "r");
        if (f) {
            char word[16] = "";
            double v = NAN, t, w;
            int n = 0, ok;
            if (fscanf(f, "%15s", word) == 1 && !strcmp(word, "schedule")) {
                while (n < STEPS_MAX && fscanf(f, "%lf %lf", &t, &w) == 2) {
                    a->step_t[n] = t;
                    a->step_w[n++] = w;
                }
                ok = n > 0;
            } else {
                ok = sscanf(word, "%lf", &v) == 1;
            }
            fclose(f);
            if (ok) {
                a->n_steps = n;
                if (n == 0)
                    a->watts = v;
                a->st = st;
                a->known = 1;
            }
        }
    }
    if (a->n_steps > 0) {
        double now = pfi_clock_wall();
        int k = 0;
        while (k + 1 < a->n_steps && a->step_t[k + 1] <= now)
            k++;
        a->watts = a->step_w[k];
    }
    return a->watts;
}

/* read_allowed of a file read once (a new reader each time). */
static double read_allowed_once(const char *path, double last)
{
    static allowed_file a;
    memset(&a, 0, sizeof a);
    a.path = path;
    a.watts = last;
    return read_allowed(&a);
}

/* -1 (said on stderr) when OUT could not be replaced: a test must not read an old count as the
 * last, nor an empty file. */
static int write_out(const char *out, long samples, long viol, double max_sum, double max_over)
{
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    FILE *f = fopen(tmp, "w");
    int ok = f != NULL;
    if (ok) {
        ok = fprintf(f, "samples %ld violations %ld max_sum %.1f max_over %.1f\n", samples, viol,
                     max_sum, max_over) > 0;
        ok = fclose(f) == 0 && ok;
    }
    if (ok && rename(tmp, out) == 0)
        return 0;
    fprintf(stderr, "sampler: cannot write %s: %s\n", out, strerror(errno));
    unlink(tmp);
    return -1;
}

/* One thing checked: a node (one state) or a site (several, one daemon each). */
typedef struct group {
    allowed_file allowed;
    const char *out;
    int ns;
    pfi_sim_state *s[SITE_MAX];
    double before; /* ALLOWED as read just before the next sample */
    long samples, viol, moved;
    double max_sum, max_over;
} group;

static int open_state(const char *path, pfi_sim_state **s)
{
    pfi_err e = {0};
    /* The daemon may still be creating the state: wait for it (at most ~30 s). */
    for (int k = 0; k < 3000 && pfi_sim_state_open(path, NULL, 1, s, &e) != PFI_OK; k++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (!*s) {
        fprintf(stderr, "sampler: %s: %s\n", path, e.msg);
        return -1;
    }
    return 0;
}

/* One sample of g: 0 taken, 1 retry (a site whose nodes moved while read), -1 error.
 * A site's nodes cannot be read at one instant, so it reads nodes 1..n, then 1..n-1 again, and
 * counts only when those did not change in between: each then held its sum while node n was
 * read, and the total is the site's at that instant. */
static int sample_group(group *g, pfi_err *e)
{
    double sum[SITE_MAX], total = 0, again;
    uint64_t seen[SITE_MAX], now;
    for (int i = 0; i < g->ns; i++)
        if (pfi_sim_state_limit_sum(g->s[i], &sum[i], &seen[i], e) != PFI_OK)
            return -1;
    for (int i = 0; i < g->ns - 1; i++) {
        if (pfi_sim_state_limit_sum(g->s[i], &again, &now, e) != PFI_OK)
            return -1;
        if (now != seen[i]) {
            g->moved++;
            return 1;
        }
    }
    for (int i = 0; i < g->ns; i++)
        total += sum[i];
    double after = read_allowed(&g->allowed);
    double allowed = g->before > after ? g->before : after;
    g->before = after;
    g->samples++;
    if (total > g->max_sum)
        g->max_sum = total;
    if (total - allowed > g->max_over)
        g->max_over = total - allowed;
    /* Exactly, in whole milliwatts (hw.h): not over by a fraction of a watt either. */
    if (pfi_hw_held_mw(total) > pfi_hw_cap_mw(allowed)) {
        if (g->viol == 0)
            fprintf(stderr, "sampler: %s: sum of limits %.3f W over the allowed %.3f W\n", g->out,
                    total, allowed);
        g->viol++;
    }
    return 0;
}

static int watch_main(group *gs, int ng)
{
    for (int k = 0; k < ng; k++) {
        group *g = &gs[k];
        if (g->ns < 1 || g->ns > SITE_MAX) {
            fprintf(stderr, "sampler: 1 to %d states a group\n", SITE_MAX);
            return 1;
        }
        for (int i = 0; i < g->ns; i++)
            if (!g->s[i])
                return 1;
        g->max_over = -INFINITY;
        g->allowed.watts = INFINITY;
        g->before = read_allowed(&g->allowed);
    }
    char stop[1100];
    snprintf(stop, sizeof stop, "%s.stop", gs[0].out);
    pfi_err e = {0};
    int bad = 0;
    for (unsigned long tries = 0; !bad; tries++) {
        if ((tries & 4095) == 0) {
            if (access(stop, F_OK) == 0)
                break;
            for (int k = 0; k < ng && !bad; k++)
                if (write_out(gs[k].out, gs[k].samples, gs[k].viol, gs[k].max_sum,
                              gs[k].max_over) != 0)
                    return 1;
        }
        for (int k = 0; k < ng && !bad; k++)
            bad = sample_group(&gs[k], &e) < 0;
    }
    if (bad)
        fprintf(stderr, "sampler: %s\n", e.msg);
    for (int k = 0; k < ng; k++) {
        if (write_out(gs[k].out, gs[k].samples, gs[k].viol, gs[k].max_sum, gs[k].max_over) != 0)
            bad = 1;
        for (int i = 0; i < gs[k].ns; i++)
            pfi_sim_state_close(gs[k].s[i]);
    }
    return bad ? 1 : 0;
}

/* argv: ALLOWED OUT STATE... [--and ALLOWED OUT STATE...]... */
static int watch_args(int argc, char **argv)
{
    static group gs[GROUPS_MAX];
    int ng = 0, i = 0;
    while (i < argc) {
        if (ng == GROUPS_MAX || argc - i < 3) {
            fprintf(stderr, "sampler: a group is ALLOWED OUT STATE... (at most %d groups)\n",
                    GROUPS_MAX);
            return 2;
        }
        group *g = &gs[ng++];
        memset(g, 0, sizeof *g);
        g->allowed.path = argv[i++];
        g->out = argv[i++];
        while (i < argc && strcmp(argv[i], "--and") != 0) {
            if (g->ns == SITE_MAX) {
                fprintf(stderr, "sampler: at most %d states a group\n", SITE_MAX);
                return 2;
            }
            if (open_state(argv[i++], &g->s[g->ns++]) != 0)
                return 1;
        }
        if (i < argc)
            i++; /* --and */
    }
    return watch_main(gs, ng);
}

static int sample_main(const char *state, const char *allowed_path, const char *out)
{
    char *args[3] = {(char *)allowed_path, (char *)out, (char *)state};
    return watch_args(3, args);
}

static int sample_site_main(const char *allowed_path, const char *out, int ns, char **states)
{
    if (ns < 1 || ns > SITE_MAX) {
        fprintf(stderr, "sampler: 1 to %d states\n", SITE_MAX);
        return 1;
    }
    char *args[2 + SITE_MAX];
    args[0] = (char *)allowed_path;
    args[1] = (char *)out;
    memcpy(args + 2, states, sizeof *states * (size_t)ns);
    return watch_args(2 + ns, args);
}

/* ---- self-test ---- */

static char dir[400];

static void read_out(const char *out, long *samples, long *viol)
{
    *samples = *viol = -1;
    FILE *f = fopen(out, "r");
    if (!f)
        return;
    if (fscanf(f, "samples %ld violations %ld", samples, viol) != 2)
        *samples = *viol = -1;
    fclose(f);
}

/* A simulated node of the default preset at path, open, every GPU's limit at watts; how many
 * GPUs it has in *n. */
static pfi_sim_state *node_at(const char *path, double watts, int *n)
{
    pfi_node_config cfg;
    pfi_err e = {0};
    assert_int_equal(pfi_sim_preset(PFI_SIM_DEFAULT_PRESET, &cfg, &e), PFI_OK);
    assert_int_equal(pfi_sim_state_create(path, &cfg, 1, 1, &e), PFI_OK);
    pfi_sim_state *s;
    assert_int_equal(pfi_sim_state_open(path, NULL, 1, &s, &e), PFI_OK);
    pfi_sim_node *node;
    assert_int_equal(pfi_sim_state_node(s, &node, NULL, &e), PFI_OK);
    *n = pfi_sim_node_gpus(node);
    assert_true(*n > 0);
    for (int g = 0; g < *n; g++)
        assert_int_equal(pfi_sim_state_set_limit(s, g, watts, &e), PFI_OK);
    return s;
}

/* Runs the sampler in a child, over one state file or (site != NULL) a site of two, writing
 * $dir/<name>, until it has taken 2000 samples (or seen a violation when want_violation);
 * returns the violations counted. */
static long run_child(const char *name, const char *state, char **site, const char *allowed,
                      int want_violation)
{
    char out[600], stop[700];
    snprintf(out, sizeof out, "%s/%s", dir, name);
    snprintf(stop, sizeof stop, "%s.stop", out);
    unlink(out);
    unlink(stop);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(site ? sample_site_main(allowed, out, 2, site) : sample_main(state, allowed, out));
    long samples = -1, viol = -1;
    /* No clock in the assertion: wait for progress, give up only after a generous bound. */
    for (int k = 0; k < 6000; k++) {
        read_out(out, &samples, &viol);
        if (want_violation ? viol > 0 : samples >= 2000)
            break;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    pfi_test_put_text(stop, "");
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    read_out(out, &samples, &viol);
    assert_true(samples > 0);
    return viol;
}

static long run_sampler(const char *state, const char *allowed, int want_violation)
{
    return run_child("out", state, NULL, allowed, want_violation);
}

static long run_site_sampler(char **states, const char *allowed, int want_violation)
{
    return run_child("site.out", NULL, states, allowed, want_violation);
}

/* A schedule: the watts of the last step begun, the first before any. */
static void test_allowed_schedule(void **state)
{
    (void)state;
    char path[] = "/tmp/pfi-sampler-allowed.XXXXXX", text[200];
    fclose(pfi_test_mkstemp(path));
    double now = pfi_clock_wall();
    snprintf(text, sizeof text, "schedule\n%.3f 500\n%.3f 300\n%.3f 400\n", now - 100, now - 10,
             now + 1000);
    pfi_test_put_text(path, text);
    assert_true(fabs(read_allowed_once(path, 7) - 300) < 1e-9);
    snprintf(text, sizeof text, "schedule\n%.3f 500\n%.3f 300\n", now + 100, now + 200);
    pfi_test_put_text(path, text);
    assert_true(fabs(read_allowed_once(path, 7) - 500) < 1e-9);
    pfi_test_put_text(path, "schedule\n");
    assert_true(fabs(read_allowed_once(path, 7) - 7) < 1e-9);
    pfi_test_put_text(path, "250.5\n");
    assert_true(fabs(read_allowed_once(path, 7) - 250.5) < 1e-9);
    /* Kept and read again: a step that begins later takes effect with no change to the file. */
    now = pfi_clock_wall();
    snprintf(text, sizeof text, "schedule\n%.3f 500\n%.3f 300\n", now - 100, now + 0.2);
    pfi_test_put_text(path, text);
    allowed_file a = {.path = path, .watts = 7};
    assert_true(fabs(read_allowed(&a) - 500) < 1e-9);
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_true(fabs(read_allowed(&a) - 300) < 1e-9);
    unlink(path);
}

/* Two nodes: their total under the allowed sum is never reported, one GPU over it is. */
static void test_site_sampler_sees_over_budget(void **state)
{
    char st1[600], st2[600], allowed[600];
    snprintf(st1, sizeof st1, "%s/site1.state", dir);
    snprintf(st2, sizeof st2, "%s/site2.state", dir);
    snprintf(allowed, sizeof allowed, "%s/site.allowed", dir);
    char *states[2] = {st1, st2};
    pfi_sim_state *s[2];
    int n = 0;
    for (int k = 0; k < 2; k++)
        s[k] = node_at(states[k], 300, &n);
    pfi_err e = {0};
    char text[64];
    snprintf(text, sizeof text, "%d\n", 2 * 300 * n);
    pfi_test_put_text(allowed, text);
    assert_int_equal(run_site_sampler(states, allowed, 0), 0);
    /* The second node's GPU raised by 1 W: the site total is over. */
    assert_int_equal(pfi_sim_state_set_limit(s[1], 0, 301, &e), PFI_OK);
    assert_true(run_site_sampler(states, allowed, 1) > 0);
    for (int k = 0; k < 2; k++)
        pfi_sim_state_close(s[k]);
}

static void test_sampler_sees_over_budget(void **state)
{
    char st[600], allowed[600];
    snprintf(st, sizeof st, "%s/sim.state", dir);
    snprintf(allowed, sizeof allowed, "%s/allowed", dir);
    int n;
    pfi_sim_state *s = node_at(st, 400, &n);
    pfi_err e = {0};
    /* Under the allowed sum: never reported. */
    char text[64];
    snprintf(text, sizeof text, "%d\n", 400 * n);
    pfi_test_put_text(allowed, text);
    assert_int_equal(run_sampler(st, allowed, 0), 0);
    /* One GPU raised past it: reported. */
    assert_int_equal(pfi_sim_state_set_limit(s, 0, 450, &e), PFI_OK);
    assert_true(run_sampler(st, allowed, 1) > 0);
    pfi_sim_state_close(s);
}

/* OUT that cannot be written: the sampler says so and exits 1 at once (it ran on with nothing
 * written, and a test read an old count or none). */
static void test_unwritable_out_fails(void **state)
{
    (void)state;
    char st[600], allowed[600], out[700];
    snprintf(st, sizeof st, "%s/unwritable.state", dir);
    snprintf(allowed, sizeof allowed, "%s/unwritable.allowed", dir);
    snprintf(out, sizeof out, "%s/no-such-dir/out", dir);
    pfi_node_config cfg;
    pfi_err e = {0};
    assert_int_equal(pfi_sim_preset(PFI_SIM_DEFAULT_PRESET, &cfg, &e), PFI_OK);
    assert_int_equal(pfi_sim_state_create(st, &cfg, 1, 1, &e), PFI_OK);
    pfi_test_put_text(allowed, "100000\n");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 2);
        _exit(sample_main(st, allowed, out));
    }
    /* Its stop file cannot be made either: a sampler that ran on is stopped after a bound. */
    int rc = 0, done = 0;
    for (int k = 0; k < 2000 && !done; k++) {
        done = waitpid(pid, &rc, WNOHANG) == pid;
        struct timespec ts = {0, 5 * 1000 * 1000};
        if (!done)
            nanosleep(&ts, NULL);
    }
    if (!done) {
        kill(pid, SIGKILL);
        waitpid(pid, &rc, 0);
    }
    assert_true(done);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
}

/* ALLOWED lowered (a new file renamed over it) while the sampler runs: the sampler reads the
 * new value at once and reports the limits over it; two groups in one process each count. */
static void test_watch_follows_allowed(void **state)
{
    char st[600], allowed[600], tmp[700], allowed2[600], out[600], out2[600], stop[700];
    snprintf(st, sizeof st, "%s/watch.state", dir);
    snprintf(allowed, sizeof allowed, "%s/watch.allowed", dir);
    snprintf(allowed2, sizeof allowed2, "%s/watch2.allowed", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", allowed);
    snprintf(out, sizeof out, "%s/watch.out", dir);
    snprintf(out2, sizeof out2, "%s/watch2.out", dir);
    snprintf(stop, sizeof stop, "%s.stop", out);
    int n;
    pfi_sim_state *s = node_at(st, 400, &n);
    char text[64];
    snprintf(text, sizeof text, "%d\n", 400 * n);
    pfi_test_put_text(allowed, text);
    pfi_test_put_text(allowed2, text);
    unlink(out);
    unlink(stop);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char *args[] = {allowed, out, st, "--and", allowed2, out2, st};
        _exit(watch_args(7, args));
    }
    long samples = -1, viol = -1;
    for (int k = 0; k < 6000 && samples < 2000; k++) {
        read_out(out, &samples, &viol);
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_true(samples >= 2000 && viol == 0);
    /* 1 W less allowed, by rename as the tests do it: over from now on. */
    snprintf(text, sizeof text, "%d\n", 400 * n - 1);
    pfi_test_put_text(tmp, text);
    assert_int_equal(rename(tmp, allowed), 0);
    for (int k = 0; k < 6000 && viol <= 0; k++) {
        read_out(out, &samples, &viol);
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    pfi_test_put_text(stop, "");
    int rc;
    waitpid(pid, &rc, 0);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
    read_out(out, &samples, &viol);
    assert_true(viol > 0);
    long s2, v2;
    read_out(out2, &s2, &v2);
    assert_true(s2 > 0 && v2 == 0);
    pfi_sim_state_close(s);
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "--sample"))
        return sample_main(argv[2], argv[3], argv[4]);
    if (argc >= 5 && !strcmp(argv[1], "--sample-site"))
        return sample_site_main(argv[2], argv[3], argc - 4, argv + 4);
    if (argc >= 5 && !strcmp(argv[1], "--watch"))
        return watch_args(argc - 2, argv + 2);
    if (argc != 1) {
        fprintf(stderr, "usage: %s [--sample STATE ALLOWED OUT | --sample-site ALLOWED OUT STATE... |\n"
                "        --watch ALLOWED OUT STATE... [--and ALLOWED OUT STATE...]...]\n",
                argv[0]);
        return 2;
    }
    const char *base = getenv("PFI_TEST_TMP");
    snprintf(dir, sizeof dir, "%s/serve-sampler-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_allowed_schedule),
                                       cmocka_unit_test(test_sampler_sees_over_budget),
                                       cmocka_unit_test(test_site_sampler_sees_over_budget),
                                       cmocka_unit_test(test_watch_follows_allowed),
                                       cmocka_unit_test(test_unwritable_out_fails)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[500];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}
