/* SPDX-License-Identifier: Apache-2.0 */
/* source.c: the throughput sources of measure.h: a launched command, a followed log file,
 * the simulator. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hw/backend_sim.h"
#include "measure/launch.h"
#include "measure/measure.h"
#include "util/clock.h"

/* ---- log sources ---- */

typedef struct log_src {
    pfi_launch launch;
    pfi_follow follow;
    int following;
    char **argv;
    char *log_path;
    int stdout_fd;
    /* Set while waiting, for the line callback. */
    pfi_backend *b;
    pfi_obs_fn fn;
    void *ctx;
} log_src;

static void on_line(void *arg, const char *line)
{
    pfi_tput_source *s = arg;
    log_src *ls = s->impl;
    pfi_obs o;
    if (pfi_parser_feed(s->parser, line, &o) && ls->fn)
        ls->fn(ls->ctx, &o, pfi_hw_now(ls->b));
}

/* Lines are time-stamped as they arrive, so the wait polls in short slices of real time: the
 * backend clock may run faster than real time (the simulator's speed-up).  A clock that moves
 * only when slept (the embedded simulator) is moved by the real time each slice took, so a log
 * followed against it keeps time and the wait ends: without that it waited for ever. */
#define SLICE_S 0.02

static void keep_time(pfi_backend *b, double hw_before, double wall_before)
{
    if (pfi_hw_now(b) == hw_before) {
        double spent = pfi_clock_mono() - wall_before;
        pfi_hw_sleep(b, spent > 0 ? spent : SLICE_S);
    }
}

static int log_wait(pfi_tput_source *s, pfi_backend *b, double until, pfi_obs_fn fn, void *ctx,
                    pfi_err *err)
{
    log_src *ls = s->impl;
    ls->b = b;
    ls->fn = fn;
    ls->ctx = ctx;
    int rc = PFI_OK;
    /* A log is written in real time: whatever the backend's clock does, the wait also ends
     * after as many real seconds as it was asked to wait, or at once on an interrupt. */
    double left0 = until - pfi_hw_now(b);
    double wall_end = pfi_clock_mono() + (left0 > 0 ? left0 : 0);
    for (;;) {
        double left = until - pfi_hw_now(b);
        if (left <= 0 || pfi_clock_mono() >= wall_end || (s->interrupt && *s->interrupt))
            break;
        double slice = left < SLICE_S ? left : SLICE_S;
        double hw0 = pfi_hw_now(b), wall0 = pfi_clock_mono();
        if (ls->following) {
            rc = pfi_follow_poll(&ls->follow, on_line, s, err);
            if (rc != PFI_OK)
                break;
            pfi_clock_sleep(slice);
        } else {
            rc = pfi_launch_poll(&ls->launch, slice, on_line, s, err);
            if (rc != PFI_OK)
                break;
            if (!ls->launch.running) {
                char how[64];
                pfi_launch_describe(&ls->launch, how, sizeof how);
                rc = pfi_err_set(err, PFI_ECHILD, "the command '%s' %s", ls->argv[0], how);
                break;
            }
        }
        keep_time(b, hw0, wall0);
    }
    ls->fn = NULL;
    return rc;
}

static void log_stop(pfi_tput_source *s)
{
    log_src *ls = s->impl;
    if (!ls->following) {
        pfi_launch_stop(&ls->launch, 5.0);
        pfi_launch_close(&ls->launch);
    }
}

static int log_restart(pfi_tput_source *s, pfi_err *err)
{
    log_src *ls = s->impl;
    if (ls->following)
        return pfi_err_set(err, PFI_ENOTSUP, "--restart cannot relaunch a job it did not start");
    log_stop(s);
    int rc = pfi_launch_start(&ls->launch, ls->argv, ls->log_path, err);
    ls->launch.out_to = ls->stdout_fd;
    return rc;
}

static void log_destroy(pfi_tput_source *s)
{
    log_src *ls = s->impl;
    if (ls->following)
        pfi_follow_close(&ls->follow);
    else
        log_stop(s);
    if (ls->argv) {
        for (char **a = ls->argv; *a; a++)
            free(*a);
        free(ls->argv);
    }
    free(ls->log_path);
    pfi_parser_free(s->parser);
    free(ls);
}

static int new_log_source(const pfi_parse_cfg *pc, pfi_tput_source **out, log_src **ls_out,
                          pfi_err *err)
{
    pfi_tput_source *s = calloc(1, sizeof *s);
    log_src *ls = calloc(1, sizeof *ls);
    if (!s || !ls) {
        free(s);
        free(ls);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    int rc = pfi_parser_new(pc, &s->parser, err);
    if (rc != PFI_OK) {
        free(s);
        free(ls);
        return rc;
    }
    ls->launch.out_fd = ls->launch.err_fd = -1;
    ls->follow.fd = -1;
    s->impl = ls;
    s->wait = log_wait;
    s->stop = log_stop;
    s->destroy = log_destroy;
    *out = s;
    *ls_out = ls;
    return PFI_OK;
}

int pfi_source_launch(char *const argv[], const char *log_path, int stdout_fd,
                      const pfi_parse_cfg *pc, pfi_tput_source **out, pfi_err *err)
{
    *out = NULL;
    pfi_tput_source *s;
    log_src *ls;
    int rc = new_log_source(pc, &s, &ls, err);
    if (rc != PFI_OK)
        return rc;
    s->kind = "command";
    s->restart = log_restart;
    int n = 0;
    while (argv && argv[n])
        n++;
    ls->argv = calloc((size_t)n + 1, sizeof *ls->argv);
    ls->log_path = log_path ? strdup(log_path) : NULL;
    int oom = !ls->argv || (log_path && !ls->log_path);
    for (int i = 0; !oom && i < n; i++)
        oom = !(ls->argv[i] = strdup(argv[i]));
    if (oom) {
        log_destroy(s);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    ls->stdout_fd = stdout_fd;
    rc = pfi_launch_start(&ls->launch, ls->argv, ls->log_path, err);
    if (rc != PFI_OK) {
        log_destroy(s);
        return rc;
    }
    ls->launch.out_to = stdout_fd;
    *out = s;
    return PFI_OK;
}

int pfi_source_follow(const char *path, const pfi_parse_cfg *pc, pfi_tput_source **out,
                      pfi_err *err)
{
    *out = NULL;
    pfi_tput_source *s;
    log_src *ls;
    int rc = new_log_source(pc, &s, &ls, err);
    if (rc != PFI_OK)
        return rc;
    s->kind = "follow";
    ls->following = 1;
    /* A log that is not there (a typo, a job not started) is said at once, not after the
     * timeout. */
    struct stat st;
    if (path && *path && stat(path, &st) != 0)
        rc = pfi_err_set(err, errno == ENOENT ? PFI_ENOENT : PFI_EIO,
                         "cannot follow the log %s: %s (--attach follows the log of a job that "
                         "is already running)",
                         path, strerror(errno));
    else if (path && *path && S_ISDIR(st.st_mode))
        rc = pfi_err_set(err, PFI_EINVAL, "cannot follow the log %s: it is a directory", path);
    if (rc == PFI_OK)
        rc = pfi_follow_open(&ls->follow, path, 1, err);
    if (rc == PFI_OK && ls->follow.fd < 0)
        rc = pfi_err_set(err, PFI_EIO, "cannot open the log %s", path);
    if (rc != PFI_OK) {
        log_destroy(s);
        return rc;
    }
    s->path = ls->follow.path;
    *out = s;
    return PFI_OK;
}

/* ---- the simulator ---- */

typedef struct sim_src {
    int job;
} sim_src;

static int sim_wait(pfi_tput_source *s, pfi_backend *b, double until, pfi_obs_fn fn, void *ctx,
                    pfi_err *err)
{
    sim_src *ss = s->impl;
    double now = pfi_hw_now(b);
    if (until > now)
        pfi_hw_sleep(b, until - now);
    pfi_sim_job_status st;
    int rc = pfi_backend_sim_job(b, ss->job, &st, err);
    if (rc != PFI_OK)
        return rc;
    now = pfi_hw_now(b);
    pfi_obs o = {.kind = PFI_OBS_COUNT, .unit = PFI_OU_TOKENS, .value = st.tokens,
                 .period_s = NAN, .job_t_s = now, .step = (long long)st.iterations};
    fn(ctx, &o, now);
    return PFI_OK;
}

static void sim_destroy(pfi_tput_source *s)
{
    free(s->impl);
}

int pfi_source_sim(int job, pfi_tput_source **out, pfi_err *err)
{
    *out = NULL;
    pfi_tput_source *s = calloc(1, sizeof *s);
    sim_src *ss = calloc(1, sizeof *ss);
    if (!s || !ss) {
        free(s);
        free(ss);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    ss->job = job;
    s->kind = "sim";
    s->wait = sim_wait;
    s->destroy = sim_destroy;
    s->impl = ss;
    *out = s;
    return PFI_OK;
}

void pfi_source_free(pfi_tput_source *s)
{
    if (!s)
        return;
    if (s->destroy)
        s->destroy(s);
    free(s);
}
