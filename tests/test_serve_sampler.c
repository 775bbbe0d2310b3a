/* SPDX-License-Identifier: Apache-2.0 */
/* A budget sampler for the node daemon's integration test (tests/it_serve.sh), and its own tests.
 *
 *   test_serve_sampler --sample STATE ALLOWED OUT
 *   test_serve_sampler --sample-site ALLOWED OUT STATE...   (a site: one state per node)
 * attaches to the simulator's shared state (the one the fake NVML serves from) and, until the
 * file OUT.stop appears, reads the sum of all GPUs' power limits at one instant (one locked
 * snapshot of the state, never GPU by GPU: a sequential read mixes instants and could report a
 * sum that never existed) and compares it with the watts in file ALLOWED.  ALLOWED is read
 * before and after each snapshot and the larger is used, so a test that raises it before
 * raising the budget and lowers it after a cut completes never sees a false alarm.  ALLOWED may
 * instead be a schedule: a first line "schedule", then lines "T W" in time order, T in seconds
 * of pfi's wall clock (util/clock.h, scaled like the daemons' when PFI_CLOCK_SCALE is set): W
 * is allowed from T on (the first W before the first T), so a test states a ramp's steps ahead
 * of time and the sampler holds each from its exact start.  OUT gets
 * "samples N violations V max_sum W max_over W".
 *
 * Run with no argument, it tests itself: a state kept under the allowed sum is never reported,
 * one over it is. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "hw/hw.h"
#include "sim/sim.h"
#include "util/clock.h"

static double read_allowed(const char *path, double last)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return last;
    double v;
    char word[16] = "";
    int ok;
    if (fscanf(f, "%15s", word) == 1 && !strcmp(word, "schedule")) {
        double now = pfi_clock_wall(), t, w;
        int n = 0;
        while (fscanf(f, "%lf %lf", &t, &w) == 2 && (n == 0 || t <= now)) {
            v = w;
            n++;
        }
        ok = n > 0;
    } else {
        ok = sscanf(word, "%lf", &v) == 1;
    }
    fclose(f);
    return ok ? v : last;
}

static void write_out(const char *out, long samples, long viol, double max_sum, double max_over)
{
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f, "samples %ld violations %ld max_sum %.1f max_over %.1f\n", samples, viol, max_sum,
            max_over);
    fclose(f);
    rename(tmp, out);
}

static int sample_main(const char *state, const char *allowed_path, const char *out)
{
    pfi_sim_state *s = NULL;
    pfi_err e = {0};
    /* The daemon may still be creating the state: wait for it (at most ~30 s). */
    for (int k = 0; k < 3000 && pfi_sim_state_open(state, NULL, 1, &s, &e) != PFI_OK; k++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (!s) {
        fprintf(stderr, "sampler: %s\n", e.msg);
        return 1;
    }
    char stop[1100];
    snprintf(stop, sizeof stop, "%s.stop", out);
    long samples = 0, viol = 0;
    double max_sum = 0, max_over = -INFINITY, allowed = INFINITY;
    for (;;) {
        if ((samples & 255) == 0) {
            if (access(stop, F_OK) == 0)
                break;
            write_out(out, samples, viol, max_sum, max_over);
        }
        double a0 = read_allowed(allowed_path, allowed);
        pfi_sim_node *node;
        double now;
        if (pfi_sim_state_node(s, &node, &now, &e) != PFI_OK) {
            fprintf(stderr, "sampler: %s\n", e.msg);
            break;
        }
        double sum = 0;
        for (int g = 0; g < pfi_sim_node_gpus(node); g++)
            sum += pfi_sim_limit(node, g, now);
        double a1 = read_allowed(allowed_path, a0);
        allowed = a0 > a1 ? a0 : a1;
        samples++;
        if (sum > max_sum)
            max_sum = sum;
        if (sum - allowed > max_over)
            max_over = sum - allowed;
        /* Exactly, in whole milliwatts (hw.h): not over by a fraction of a watt either. */
        if (pfi_hw_held_mw(sum) > pfi_hw_cap_mw(allowed)) {
            if (viol == 0)
                fprintf(stderr, "sampler: sum of limits %.3f W over the allowed %.3f W at t=%.3f\n",
                        sum, allowed, now);
            viol++;
        }
    }
    write_out(out, samples, viol, max_sum, max_over);
    pfi_sim_state_close(s);
    return 0;
}

/* The sum of one state's limits at one instant (one locked snapshot). */
static int state_sum(pfi_sim_state *s, double *sum, pfi_err *e)
{
    pfi_sim_node *node;
    double now;
    if (pfi_sim_state_node(s, &node, &now, e) != PFI_OK)
        return -1;
    *sum = 0;
    for (int g = 0; g < pfi_sim_node_gpus(node); g++)
        *sum += pfi_sim_limit(node, g, now);
    return 0;
}

#define SITE_MAX 16

/* A site of several simulated nodes (one state each, one daemon each): their limits cannot be
 * read at one instant, so each sample reads nodes 1..n, then 1..n-1 again, and counts only when
 * those did not move in between: each then held its sum while node n was read, and the total is
 * the site's at that instant.  Samples that moved are retried (counted in the output). */
static int sample_site_main(const char *allowed_path, const char *out, int ns, char **states)
{
    pfi_sim_state *s[SITE_MAX] = {0};
    pfi_err e = {0};
    if (ns < 1 || ns > SITE_MAX) {
        fprintf(stderr, "sampler: 1 to %d states\n", SITE_MAX);
        return 1;
    }
    for (int i = 0; i < ns; i++) {
        for (int k = 0; k < 3000 && pfi_sim_state_open(states[i], NULL, 1, &s[i], &e) != PFI_OK;
             k++) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (!s[i]) {
            fprintf(stderr, "sampler: %s: %s\n", states[i], e.msg);
            return 1;
        }
    }
    char stop[1100];
    snprintf(stop, sizeof stop, "%s.stop", out);
    long samples = 0, viol = 0, tries = 0;
    double max_sum = 0, max_over = -INFINITY, allowed = INFINITY;
    int bad = 0;
    for (;;) {
        if ((tries & 255) == 0) {
            if (access(stop, F_OK) == 0)
                break;
            write_out(out, samples, viol, max_sum, max_over);
        }
        tries++;
        double a0 = read_allowed(allowed_path, allowed);
        double first[SITE_MAX], again, total = 0;
        for (int i = 0; i < ns && !bad; i++)
            bad = state_sum(s[i], &first[i], &e);
        int moved = 0;
        for (int i = 0; i < ns - 1 && !bad && !moved; i++) {
            bad = state_sum(s[i], &again, &e);
            moved = again != first[i];
        }
        if (bad) {
            fprintf(stderr, "sampler: %s\n", e.msg);
            break;
        }
        if (moved)
            continue;
        for (int i = 0; i < ns; i++)
            total += first[i];
        double a1 = read_allowed(allowed_path, a0);
        allowed = a0 > a1 ? a0 : a1;
        samples++;
        if (total > max_sum)
            max_sum = total;
        if (total - allowed > max_over)
            max_over = total - allowed;
        if (pfi_hw_held_mw(total) > pfi_hw_cap_mw(allowed)) {
            if (viol == 0)
                fprintf(stderr, "sampler: site sum of limits %.3f W over the allowed %.3f W\n",
                        total, allowed);
            viol++;
        }
    }
    write_out(out, samples, viol, max_sum, max_over);
    for (int i = 0; i < ns; i++)
        pfi_sim_state_close(s[i]);
    return bad ? 1 : 0;
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

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Runs the sampler in a child until it has taken `want` samples (or seen a violation when
 * want_violation); returns the violations counted. */
static long run_sampler(const char *state, const char *allowed, int want_violation)
{
    char out[600], stop[700];
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(stop, sizeof stop, "%s/out.stop", dir);
    unlink(out);
    unlink(stop);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(sample_main(state, allowed, out));
    long samples = -1, viol = -1;
    /* No clock in the assertion: wait for progress, give up only after a generous bound. */
    for (int k = 0; k < 6000; k++) {
        read_out(out, &samples, &viol);
        if (want_violation ? viol > 0 : samples >= 2000)
            break;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    put(stop, "");
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    read_out(out, &samples, &viol);
    assert_true(samples > 0);
    return viol;
}

/* run_sampler for a site of two states. */
static long run_site_sampler(char **states, const char *allowed, int want_violation)
{
    char out[600], stop[700];
    snprintf(out, sizeof out, "%s/site.out", dir);
    snprintf(stop, sizeof stop, "%s/site.out.stop", dir);
    unlink(out);
    unlink(stop);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(sample_site_main(allowed, out, 2, states));
    long samples = -1, viol = -1;
    for (int k = 0; k < 6000; k++) {
        read_out(out, &samples, &viol);
        if (want_violation ? viol > 0 : samples >= 2000)
            break;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    put(stop, "");
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    read_out(out, &samples, &viol);
    assert_true(samples > 0);
    return viol;
}

/* Two nodes: their total under the allowed sum is never reported, one GPU over it is. */
/* A schedule: the watts of the last step begun, the first before any. */
static void test_allowed_schedule(void **state)
{
    (void)state;
    char path[] = "/tmp/pfi-sampler-allowed.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    double now = pfi_clock_wall();
    fprintf(f, "schedule\n%.3f 500\n%.3f 300\n%.3f 400\n", now - 100, now - 10, now + 1000);
    fclose(f);
    assert_true(fabs(read_allowed(path, 7) - 300) < 1e-9);
    f = fopen(path, "w");
    fprintf(f, "schedule\n%.3f 500\n%.3f 300\n", now + 100, now + 200);
    fclose(f);
    assert_true(fabs(read_allowed(path, 7) - 500) < 1e-9);
    f = fopen(path, "w");
    fprintf(f, "schedule\n");
    fclose(f);
    assert_true(fabs(read_allowed(path, 7) - 7) < 1e-9);
    f = fopen(path, "w");
    fprintf(f, "250.5\n");
    fclose(f);
    assert_true(fabs(read_allowed(path, 7) - 250.5) < 1e-9);
    unlink(path);
}

static void test_site_sampler_sees_over_budget(void **state)
{
    char st1[600], st2[600], allowed[600];
    snprintf(st1, sizeof st1, "%s/site1.state", dir);
    snprintf(st2, sizeof st2, "%s/site2.state", dir);
    snprintf(allowed, sizeof allowed, "%s/site.allowed", dir);
    char *states[2] = {st1, st2};
    pfi_node_config cfg;
    pfi_err e = {0};
    assert_int_equal(pfi_sim_preset(PFI_SIM_DEFAULT_PRESET, &cfg, &e), PFI_OK);
    pfi_sim_state *s[2];
    int n = 0;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(pfi_sim_state_create(states[k], &cfg, 1, 1, &e), PFI_OK);
        assert_int_equal(pfi_sim_state_open(states[k], NULL, 1, &s[k], &e), PFI_OK);
        pfi_sim_node *node;
        assert_int_equal(pfi_sim_state_node(s[k], &node, NULL, &e), PFI_OK);
        n = pfi_sim_node_gpus(node);
        for (int g = 0; g < n; g++)
            assert_int_equal(pfi_sim_state_set_limit(s[k], g, 300, &e), PFI_OK);
    }
    char text[64];
    snprintf(text, sizeof text, "%d\n", 2 * 300 * n);
    put(allowed, text);
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
    pfi_node_config cfg;
    pfi_err e = {0};
    assert_int_equal(pfi_sim_preset(PFI_SIM_DEFAULT_PRESET, &cfg, &e), PFI_OK);
    assert_int_equal(pfi_sim_state_create(st, &cfg, 1, 1, &e), PFI_OK);
    pfi_sim_state *s;
    assert_int_equal(pfi_sim_state_open(st, NULL, 1, &s, &e), PFI_OK);
    pfi_sim_node *node;
    assert_int_equal(pfi_sim_state_node(s, &node, NULL, &e), PFI_OK);
    int n = pfi_sim_node_gpus(node);
    assert_true(n > 0);
    for (int g = 0; g < n; g++)
        assert_int_equal(pfi_sim_state_set_limit(s, g, 400, &e), PFI_OK);
    /* Under the allowed sum: never reported. */
    char text[64];
    snprintf(text, sizeof text, "%d\n", 400 * n);
    put(allowed, text);
    assert_int_equal(run_sampler(st, allowed, 0), 0);
    /* One GPU raised past it: reported. */
    assert_int_equal(pfi_sim_state_set_limit(s, 0, 450, &e), PFI_OK);
    assert_true(run_sampler(st, allowed, 1) > 0);
    pfi_sim_state_close(s);
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "--sample"))
        return sample_main(argv[2], argv[3], argv[4]);
    if (argc >= 5 && !strcmp(argv[1], "--sample-site"))
        return sample_site_main(argv[2], argv[3], argc - 4, argv + 4);
    if (argc != 1) {
        fprintf(stderr, "usage: %s [--sample STATE ALLOWED OUT | --sample-site ALLOWED OUT STATE...]\n",
                argv[0]);
        return 2;
    }
    const char *base = getenv("PFI_TEST_TMP");
    snprintf(dir, sizeof dir, "%s/serve-sampler-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_allowed_schedule),
                                       cmocka_unit_test(test_sampler_sees_over_budget),
                                       cmocka_unit_test(test_site_sampler_sees_over_budget)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[500];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}
