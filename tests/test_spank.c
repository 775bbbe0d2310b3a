/* SPDX-License-Identifier: Apache-2.0 */
/* The SPANK plugin (src/slurm/pfi_spank.c) without Slurm: its source is compiled in, the part
 * of Slurm it calls (options, job items, logging) is stubbed below, and the node daemon is a
 * Unix-socket server here that records every request and answers after a set delay.
 * tests/it_slurm.sh runs the plugin in a real slurmd; this covers what a real daemon and a real
 * Slurm make hard to set up: what exactly goes out, and how long the prolog takes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "slurm/pfi_spank.c"

/* ---- Slurm's side ---- */

static char g_log[16384];
static spank_context_t g_ctx = S_CTX_JOB_SCRIPT;
static uint32_t g_job = 4242;
static const char *g_opt[4]; /* by option val (1: sla, 2: weight, 3: log) */

static void log_add(const char *fmt, va_list ap)
{
    size_t n = strlen(g_log);
    if (n + 2 < sizeof g_log) {
        vsnprintf(g_log + n, sizeof g_log - n - 1, fmt, ap);
        strcat(g_log, "\n");
    }
}
#define LOG_STUB(name)                                                                          \
    void name(const char *fmt, ...)                                                             \
    {                                                                                           \
        va_list ap;                                                                             \
        va_start(ap, fmt);                                                                      \
        log_add(fmt, ap);                                                                       \
        va_end(ap);                                                                             \
    }
LOG_STUB(slurm_error)
LOG_STUB(slurm_info)
LOG_STUB(slurm_debug)
LOG_STUB(slurm_spank_log)

spank_context_t spank_context(void)
{
    return g_ctx;
}

spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
    return ESPANK_SUCCESS;
}

spank_err_t spank_option_getopt(spank_t sp, struct spank_option *opt, char **optarg)
{
    if (opt->val < 1 || opt->val > 3 || !g_opt[opt->val])
        return ESPANK_ERROR;
    *optarg = (char *)g_opt[opt->val];
    return ESPANK_SUCCESS;
}

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
    if (item != S_JOB_ID)
        return ESPANK_ERROR;
    va_list ap;
    va_start(ap, item);
    *va_arg(ap, uint32_t *) = g_job;
    va_end(ap);
    return ESPANK_SUCCESS;
}

const char *spank_strerror(spank_err_t err)
{
    return "stub";
}

/* ---- the node daemon ---- */

typedef struct fake_node {
    char dir[64], sock[128], url[160], spool[128];
    int fd;
    pthread_t th;
    volatile int stop;
    int delay_ms;
    pthread_mutex_t mu;
    char reqs[16384]; /* "METHOD PATH BODY\n" per request */
    int n_req;
} fake_node;

static void serve_one(fake_node *d, int c)
{
    char buf[8192];
    size_t n = 0;
    for (;;) {
        struct pollfd p = {c, POLLIN, 0};
        if (poll(&p, 1, 2000) <= 0)
            break;
        ssize_t k = read(c, buf + n, sizeof buf - 1 - n);
        if (k <= 0)
            break;
        n += (size_t)k;
        buf[n] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        const char *cl = strcasestr(buf, "Content-Length:");
        if (end && (!cl || cl > end || strlen(end + 4) >= strtoul(cl + 15, NULL, 10)))
            break;
    }
    char method[16] = "", path[256] = "";
    sscanf(buf, "%15s %255s", method, path);
    char *body = strstr(buf, "\r\n\r\n");
    struct timespec ts = {d->delay_ms / 1000, (d->delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&d->mu);
    size_t have = strlen(d->reqs);
    snprintf(d->reqs + have, sizeof d->reqs - have, "%s %s %s\n", method, path,
             body ? body + 4 : "");
    d->n_req++;
    pthread_mutex_unlock(&d->mu);
    const char *ans = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
    ssize_t w = send(c, ans, strlen(ans), MSG_NOSIGNAL); /* the plugin may have given up */
    (void)w;
}

static void *daemon_main(void *arg)
{
    fake_node *d = arg;
    while (!d->stop) {
        struct pollfd p = {d->fd, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int c = accept(d->fd, NULL, NULL);
        if (c < 0)
            continue;
        serve_one(d, c);
        close(c);
    }
    return NULL;
}

static void daemon_start(fake_node *d, int delay_ms)
{
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "/tmp/test_spank.XXXXXX");
    assert_non_null(mkdtemp(d->dir));
    snprintf(d->sock, sizeof d->sock, "%s/node.sock", d->dir);
    snprintf(d->url, sizeof d->url, "url=unix:%s", d->sock);
    snprintf(d->spool, sizeof d->spool, "spool=%s/spool", d->dir);
    d->delay_ms = delay_ms;
    pthread_mutex_init(&d->mu, NULL);
    d->fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(d->fd >= 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", d->sock);
    assert_int_equal(bind(d->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(d->fd, 16), 0);
    assert_int_equal(pthread_create(&d->th, NULL, daemon_main, d), 0);
    g_log[0] = '\0';
    memset(g_opt, 0, sizeof g_opt);
    g_ctx = S_CTX_JOB_SCRIPT;
}

static void daemon_stop(fake_node *d)
{
    d->stop = 1;
    pthread_join(d->th, NULL);
    close(d->fd);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
    assert_int_equal(system(cmd), 0);
    pthread_mutex_destroy(&d->mu);
}

/* The job prolog with the plugstack arguments given (url= and spool= of d first). */
static int prolog(fake_node *d, const char *extra)
{
    char *av[3] = {d->url, d->spool, (char *)extra};
    setenv("SLURM_JOB_GPUS", "0,1", 1);
    return slurm_spank_job_prolog(NULL, extra ? 3 : 2, av);
}

/* ---- tests ---- */

/* What passes the submission check is what the daemon gets: 0.9999999 went out as "sla":1
 * (%.6g), which the daemon refuses, so the job ran unmanaged. */
static void test_values_sent_exactly(void **state)
{
    fake_node d;
    daemon_start(&d, 0);
    g_opt[1] = "0.9999999";
    g_opt[2] = "1.234567";
    assert_int_equal(pfi_options[0].cb(1, g_opt[1], 0), 0);
    assert_int_equal(pfi_options[1].cb(2, g_opt[2], 0), 0);
    assert_int_equal(prolog(&d, NULL), 0);
    assert_non_null(strstr(d.reqs, "\"sla\":0.9999999,"));
    assert_non_null(strstr(d.reqs, "\"weight\":1.234567,"));
    /* A short value stays short (the shortest text that reads back as the same double). */
    g_opt[1] = "0.3";
    g_opt[2] = NULL;
    assert_int_equal(prolog(&d, NULL), 0);
    assert_non_null(strstr(d.reqs, "\"sla\":0.3,"));
    /* The site default too: with 0.9999999 every job without --power-sla was refused. */
    g_opt[1] = NULL;
    assert_int_equal(prolog(&d, "default_sla=0.99999999"), 0);
    assert_non_null(strstr(d.reqs, "\"sla\":0.99999999,"));
    assert_int_equal(d.n_req, 3);
    daemon_stop(&d);
}

/* Refused at submission with the range named: a sign ("-0" was read as 0), 1 and over, hex
 * floats and words strtod would read. */
static void test_sla_refused(void **state)
{
    const char *bad[] = {"-0", "-0.0", "-0.1", "+-0", "1", "1.5", "0x1p-3", "nan", "inf", "",
                         "0.1x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        g_log[0] = '\0';
        assert_int_equal(pfi_options[0].cb(1, bad[i], 0), -1);
        assert_non_null(strstr(g_log, "expected a max slowdown in [0, 1)"));
    }
    assert_int_equal(pfi_options[0].cb(1, "0", 0), 0);
    assert_int_equal(pfi_options[0].cb(1, "+0.2", 0), 0);
}

/* --power-log expands %j and %% only: Slurm's other patterns (%A_%a for an array) stayed in
 * the path as they were, so each task was told to follow a file that never exists.  Refused at
 * submission, saying what is expanded; one that reaches the prolog anyway (a job submitted
 * without the plugin) is registered without it. */
static void test_log_patterns(void **state)
{
    const char *bad[] = {"/scratch/train-%A_%a.log", "/s/%x-%u.log", "/s/%N", "/s/50%",
                         "/s/%5j", "/s/%%%a"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        g_log[0] = '\0';
        assert_int_equal(pfi_options[2].cb(3, bad[i], 0), -1);
        assert_non_null(strstr(g_log, "is not expanded: only %j (the job id; each array task "
                                      "has its own) and %% (a %) are"));
    }
    assert_non_null(strstr(g_log, "'%a' is not expanded"));
    assert_int_equal(pfi_options[2].cb(3, "/s/train-%j-%%A.log", 0), 0);
    /* Not UTF-8 (the daemon refused the registration, the job ran unmanaged): refused at
     * submission; UTF-8 taken. */
    const char *not_utf8[] = {"/scratch/\xff\xfe.log", "/s/\xc0\xaf.log", "/s/\xed\xa0\x80.log",
                              "/s/\xe2\x82.log"};
    for (size_t i = 0; i < sizeof not_utf8 / sizeof *not_utf8; i++) {
        g_log[0] = '\0';
        assert_int_equal(pfi_options[2].cb(3, not_utf8[i], 0), -1);
        assert_non_null(strstr(g_log, "in UTF-8"));
    }
    assert_int_equal(pfi_options[2].cb(3, "/scratch/\xc3\xa9t\xc3\xa9-\xf0\x9f\x9a\x80.log", 0), 0);

    fake_node d;
    daemon_start(&d, 0);
    g_opt[3] = "/s/%A_%a.log";
    assert_int_equal(prolog(&d, NULL), 0);
    assert_null(strstr(d.reqs, "\"log\""));
    assert_non_null(strstr(g_log, "registered without it"));
    g_opt[3] = "/s/train-%j-%%A.log";
    assert_int_equal(prolog(&d, NULL), 0);
    assert_non_null(strstr(d.reqs, "\"log\":\"/s/train-4242-%A.log\""));
    /* A node name with a quote and a backslash is escaped (the body was malformed JSON). */
    setenv("SLURMD_NODENAME", "n1\"x\\y", 1);
    assert_int_equal(prolog(&d, NULL), 0);
    assert_non_null(strstr(d.reqs, "\"node\":\"n1\\\"x\\\\y\"}"));
    unsetenv("SLURMD_NODENAME");
    daemon_stop(&d);
}

/* An srun inside an allocation reads the options, but the job was registered at its
 * allocation: a step's value that differs from the job's was dropped without a word.  srun also
 * reads the job's own values from the job's environment: no warning for those. */
static void test_step_options(void **state)
{
    const char *env = "SLURM_SPANK__SLURM_SPANK_OPTION_pfi_power_sla";
    g_ctx = S_CTX_LOCAL;
    unsetenv(env);
    setenv("SLURM_JOB_ID", "77", 1);
    g_log[0] = '\0';
    assert_int_equal(pfi_options[0].cb(1, "0.05", 0), 0);
    assert_non_null(strstr(g_log, "pfi: warning: --power-sla=0.05 is ignored on a step of job "
                                  "77 (the job was submitted without it): pfi takes it when "
                                  "the job is submitted (sbatch, salloc, or an srun that "
                                  "creates the job)"));
    g_log[0] = '\0';
    assert_int_equal(pfi_options[2].cb(3, "/s/%j.log", 0), 0);
    assert_non_null(strstr(g_log, "--power-log=/s/%j.log is ignored on a step of job 77"));
    setenv(env, "0.2", 1);
    g_log[0] = '\0';
    assert_int_equal(pfi_options[0].cb(1, "0.2", 0), 0);
    assert_string_equal(g_log, "");
    assert_int_equal(pfi_options[0].cb(1, "0.3", 0), 0);
    assert_non_null(strstr(g_log, "--power-sla=0.3 is ignored on a step of job 77 (the job "
                                  "keeps --power-sla=0.2)"));
    /* Not a step: in slurmstepd (remote), sbatch or salloc (a new job, even inside one), or an
     * srun that creates its job. */
    g_log[0] = '\0';
    assert_int_equal(pfi_options[0].cb(1, "0.05", 1), 0);
    g_ctx = S_CTX_ALLOCATOR;
    assert_int_equal(pfi_options[0].cb(1, "0.05", 0), 0);
    g_ctx = S_CTX_LOCAL;
    unsetenv("SLURM_JOB_ID");
    assert_int_equal(pfi_options[0].cb(1, "0.05", 0), 0);
    assert_string_equal(g_log, "");
    unsetenv(env);
    g_ctx = S_CTX_JOB_SCRIPT;
}

/* The help (sbatch --help) says the range the option takes, as its refusal does: it said
 * "(> 0)" and 0.0000001 was refused. */
static void test_help_ranges(void **state)
{
    g_log[0] = '\0';
    assert_int_equal(pfi_options[1].cb(2, "0.0000001", 0), -1);
    assert_non_null(strstr(g_log, "from 0.000001 to 1000000"));
    assert_non_null(strstr(pfi_options[1].usage, "(0.000001 to 1000000)"));
    assert_non_null(strstr(pfi_options[0].usage, "in [0, 1)"));
}

static double elapsed_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

static int spooled(const fake_node *d)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "ls '%s/spool' | wc -l", d->dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    assert_non_null(p);
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

/* The spooled deregistrations a prolog sends first take one timeout in all: a daemon that
 * answers each just in time (0.3 s here, timeout 1 s) held a job's start one answer per
 * spooled job, up to 64 timeouts.  What is left goes at the next prolog or epilog. */
static void test_spool_deadline(void **state)
{
    fake_node d;
    daemon_start(&d, 300);
    char path[192];
    snprintf(path, sizeof path, "%s/spool", d.dir);
    assert_int_equal(mkdir(path, 0700), 0);
    for (int i = 0; i < 12; i++) {
        snprintf(path, sizeof path, "%s/spool/%d", d.dir, 100 + i);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fclose(f);
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(prolog(&d, "timeout=1"), 0);
    double took = elapsed_since(&t0);
    int left = spooled(&d);
    /* 12 answers at 0.3 s would be 3.6 s; within 1 s, at most 3 and a cut one. */
    assert_true(left >= 8 && left < 12);
    assert_true(took < 2.5);
    assert_non_null(strstr(d.reqs, "POST /v1/jobs {\"id\":\"4242\""));
    assert_int_equal(slurm_spank_job_epilog(NULL, 3, (char *[]){d.url, d.spool, "timeout=1"}),
                     0);
    assert_true(spooled(&d) < left);
    daemon_stop(&d);
}

/* The epilog of a job whose environment lists no GPU (Slurm after a slurmctld restart): its
 * DELETE is sent all the same; it was skipped and the job stayed registered for good. */
static void test_epilog_without_gpu_list(void **state)
{
    fake_node d;
    daemon_start(&d, 0);
    unsetenv("SLURM_JOB_GPUS");
    unsetenv("CUDA_VISIBLE_DEVICES");
    assert_int_equal(slurm_spank_job_epilog(NULL, 2, (char *[]){d.url, d.spool}), 0);
    assert_non_null(strstr(d.reqs, "DELETE /v1/jobs/4242"));
    /* The prolog of such a job registers nothing. */
    int before = d.n_req;
    assert_int_equal(slurm_spank_job_prolog(NULL, 2, (char *[]){d.url, d.spool}), 0);
    assert_int_equal(d.n_req, before);
    /* A daemon that cannot be reached, required=1: the epilog is what is asked to fail, and
     * a job the daemon may never have held is not said to keep caps for sure. */
    char url[300];
    snprintf(url, sizeof url, "url=unix:%s/none.sock", d.dir);
    /* ...but with no GPU listed (a CPU-only job), an unreachable daemon is no failure and
     * nothing is spooled: a node without a daemon drained under required=1, and spooled every
     * CPU job's id for ever. */
    g_log[0] = '\0';
    assert_int_equal(slurm_spank_job_epilog(NULL, 4, (char *[]){url, d.spool, "required=1",
                                                                "timeout=1"}),
                     0);
    assert_int_equal(spooled(&d), 0);
    if (!strstr(g_log, "nothing spooled"))
        fail_msg("epilog without a GPU list, daemon down: %s", g_log);
    setenv("SLURM_JOB_GPUS", "0,1", 1);
    g_log[0] = '\0';
    assert_int_equal(slurm_spank_job_epilog(NULL, 4, (char *[]){url, d.spool, "required=1",
                                                                "timeout=1"}),
                     -1);
    if (!strstr(g_log, "asking Slurm to fail the epilog"))
        fail_msg("required=1 epilog: %s", g_log);
    g_log[0] = '\0';
    assert_int_equal(slurm_spank_job_epilog(NULL, 3, (char *[]){url, d.spool, "timeout=1"}), 0);
    if (!strstr(g_log, "spooled: if the daemon holds the job, its GPUs keep the job's caps"))
        fail_msg("epilog, daemon down: %s", g_log);
    daemon_stop(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_sent_exactly),
        cmocka_unit_test(test_sla_refused),
        cmocka_unit_test(test_spool_deadline),
        cmocka_unit_test(test_epilog_without_gpu_list),
        cmocka_unit_test(test_log_patterns),
        cmocka_unit_test(test_step_options),
        cmocka_unit_test(test_help_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
