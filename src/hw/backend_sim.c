/* SPDX-License-Identifier: Apache-2.0 */
/* backend_sim.c: the simulator behind the backend interface (see hw/backend_sim.h for how it
 * is opened, virtual versus shared real time, and the extras). */
#include "hw/backend_sim.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"

#include "hw/backend_impl.h"

typedef struct sim_impl {
    pthread_mutex_t mu;
    pfi_sim_node *node;   /* virtual mode: owned */
    pfi_sim_state *state; /* shared mode */
    double t;             /* virtual clock */
} sim_impl;

extern const pfi_backend_ops pfi_backend_sim_ops;

static int env_speed(double *speed, pfi_err *err)
{
    const char *v = getenv("PFI_SIM_SPEED");
    *speed = 1;
    if (!v || !*v)
        return PFI_OK;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || *end || !(x > 0 && x <= PFI_SIM_SPEED_MAX))
        return pfi_err_set(err, PFI_EINVAL, "PFI_SIM_SPEED='%s' is not a speed-up in (0, %g]",
                           v, PFI_SIM_SPEED_MAX);
    *speed = x;
    return PFI_OK;
}

static int sim_open(pfi_backend *b, const char *arg, pfi_err *err)
{
    sim_impl *s = calloc(1, sizeof *s);
    if (!s)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    pthread_mutex_init(&s->mu, NULL);
    int rc;
    const char *path = getenv("PFI_SIM_STATE");
    if (path && *path) {
        double speed;
        pfi_node_config cfg;
        rc = env_speed(&speed, err);
        /* The config matters only to the process that creates the file. */
        if (rc == PFI_OK)
            rc = pfi_sim_state_open(path, NULL, speed, &s->state, err);
        if (rc == PFI_ENOENT) {
            rc = pfi_sim_config_load(arg, &cfg, err);
            if (rc == PFI_OK)
                rc = pfi_sim_state_open(path, &cfg, speed, &s->state, err);
        }
    } else {
        pfi_node_config cfg;
        rc = pfi_sim_config_load(arg, &cfg, err);
        if (rc == PFI_OK)
            rc = pfi_sim_node_new(&cfg, &s->node, err);
    }
    if (rc != PFI_OK) {
        pthread_mutex_destroy(&s->mu);
        free(s);
        return rc;
    }
    b->impl = s;
    return PFI_OK;
}

static void sim_close(pfi_backend *b)
{
    sim_impl *s = b->impl;
    if (!s)
        return;
    pfi_sim_node_free(s->node);
    pfi_sim_state_close(s->state);
    pthread_mutex_destroy(&s->mu);
    free(s);
    b->impl = NULL;
}

/* The node and the current time; called with the mutex held. */
static int current(sim_impl *s, pfi_sim_node **node, double *t, pfi_err *err)
{
    if (s->state)
        return pfi_sim_state_node(s->state, node, t, err);
    *node = s->node;
    *t = s->t;
    return PFI_OK;
}

/* What read_now reads; out points to the matching type. */
typedef enum { READ_COUNT, READ_DEVICE, READ_SAMPLE, READ_JOB } read_kind;

/* Reads one thing of the node at its current time, the mutex held throughout so that a shared
 * state's node cannot change between finding it and reading it. */
static int read_now(sim_impl *s, read_kind what, int idx, void *out, pfi_err *err)
{
    pfi_sim_node *n;
    double t;
    pthread_mutex_lock(&s->mu);
    int rc = current(s, &n, &t, err);
    if (rc == PFI_OK) {
        switch (what) {
        case READ_COUNT:
            *(int *)out = pfi_sim_node_gpus(n);
            break;
        case READ_DEVICE:
            rc = pfi_sim_device(n, idx, t, out, err);
            break;
        case READ_SAMPLE:
            rc = pfi_sim_sample(n, idx, t, out, err);
            break;
        case READ_JOB:
            rc = pfi_sim_job_status_at(n, idx, t, out, err);
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static int sim_count(pfi_backend *b, int *count, pfi_err *err)
{
    return read_now(b->impl, READ_COUNT, 0, count, err);
}

static int sim_info(pfi_backend *b, int idx, pfi_device *out, pfi_err *err)
{
    return read_now(b->impl, READ_DEVICE, idx, out, err);
}

static int sim_sample(pfi_backend *b, int idx, pfi_sample *out, pfi_err *err)
{
    return read_now(b->impl, READ_SAMPLE, idx, out, err);
}

static int sim_set_limit(pfi_backend *b, int idx, double watts, pfi_err *err)
{
    sim_impl *s = b->impl;
    pthread_mutex_lock(&s->mu);
    int rc = s->state ? pfi_sim_state_set_limit(s->state, idx, watts, err)
                      : pfi_sim_set_limit(s->node, idx, s->t, watts, err);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static double sim_now(pfi_backend *b)
{
    sim_impl *s = b->impl;
    pthread_mutex_lock(&s->mu);
    double t = s->state ? pfi_sim_state_now(s->state) : s->t;
    pthread_mutex_unlock(&s->mu);
    return t;
}

static void sim_sleep(pfi_backend *b, double seconds)
{
    sim_impl *s = b->impl;
    if (!(seconds > 0))
        return;
    if (!s->state) {
        pthread_mutex_lock(&s->mu);
        s->t += seconds;
        pthread_mutex_unlock(&s->mu);
        return;
    }
    /* A signal cuts the sleep short on purpose: the caller checks why it was woken. */
    pfi_clock_sleep(seconds / pfi_sim_state_speed(s->state));
}

/* A simulated job's process: the pid `pfi simjob` recorded in the shared state, while it is
 * alive (a virtual node has no processes). */
static int sim_processes(pfi_backend *b, int idx, pfi_gpu_proc *out, int cap, int *n,
                         pfi_err *err)
{
    sim_impl *s = b->impl;
    pfi_sim_node *node;
    double t;
    *n = 0;
    pthread_mutex_lock(&s->mu);
    int rc = current(s, &node, &t, err);
    if (rc == PFI_OK && (idx < 0 || idx >= pfi_sim_node_gpus(node)))
        rc = pfi_err_set(err, PFI_ENOENT, "no GPU %d (this node has %d)", idx,
                         pfi_sim_node_gpus(node));
    if (rc == PFI_OK && s->state) {
        const pfi_node_config *c = pfi_sim_node_config(node);
        for (int j = 0; j < c->n_jobs; j++) {
            long pid = pfi_sim_state_job_pid(s->state, j);
            if (pid <= 0 || idx < c->jobs[j].first_gpu ||
                idx >= c->jobs[j].first_gpu + c->jobs[j].n_gpus)
                continue;
            if (kill((pid_t)pid, 0) != 0 && errno != EPERM)
                continue; /* it ended without saying so (killed) */
            pfi_sample smp;
            double mem = NAN;
            pfi_err e2 = {0};
            if (pfi_sim_sample(node, idx, t, &smp, &e2) == PFI_OK && (smp.have & PFI_F_MEM_USED))
                mem = smp.mem_used_mib;
            if (*n < cap)
                out[*n] = (pfi_gpu_proc){pid, mem};
            (*n)++;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static int sim_simulated(pfi_backend *b)
{
    return 1;
}

const pfi_backend_ops pfi_backend_sim_ops = {
    .name = "sim",
    .open = sim_open,
    .close = sim_close,
    .device_count = sim_count,
    .device_info = sim_info,
    .sample = sim_sample,
    .set_limit = sim_set_limit,
    .now = sim_now,
    .sleep = sim_sleep,
    .simulated = sim_simulated,
    .processes = sim_processes,
};

static sim_impl *impl_of(pfi_backend *b)
{
    return b && b->ops == &pfi_backend_sim_ops ? b->impl : NULL;
}

pfi_sim_node *pfi_backend_sim_node(pfi_backend *b)
{
    sim_impl *s = impl_of(b);
    if (!s)
        return NULL;
    pfi_sim_node *n = s->node;
    if (s->state) {
        double t;
        pthread_mutex_lock(&s->mu);
        if (pfi_sim_state_node(s->state, &n, &t, NULL) != PFI_OK)
            n = NULL;
        pthread_mutex_unlock(&s->mu);
    }
    return n;
}

int pfi_backend_sim_virtual(pfi_backend *b)
{
    sim_impl *s = impl_of(b);
    return s && !s->state;
}

int pfi_backend_sim_job(pfi_backend *b, int job, pfi_sim_job_status *out, pfi_err *err)
{
    sim_impl *s = impl_of(b);
    if (!s)
        return pfi_err_set(err, PFI_ENOTSUP, "not a simulator backend");
    return read_now(s, READ_JOB, job, out, err);
}
