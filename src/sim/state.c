/* SPDX-License-Identifier: Apache-2.0 */
/* state.c: the simulator state shared between processes through one mapped file.
 *
 * The file holds the node config, the epoch and speed-up of simulated time, and an append-only
 * log of limit changes.  Writers take an exclusive flock, stamp the change with the simulated
 * time read under the lock (so the log is in time order across processes) and bump the count;
 * readers take a shared lock and replay the changes they have not seen into a private node.
 * Physics is deterministic from (config, log), so every process computes the same telemetry. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/sim.h"
#include "util/clock.h"

#define STATE_MAGIC "PFISIM01"
#define STATE_VERSION 2u
#define STATE_MAX_EVENTS 65536

typedef struct state_event {
    double t;
    double watts;
    int32_t gpu;
    int32_t pad;
} state_event;

typedef struct state_head {
    char magic[8];
    uint32_t version;
    uint32_t config_size; /* sizeof(pfi_node_config): refuses a file from another build */
    double epoch;         /* monotonic seconds at creation (util/clock.h) */
    double speed;         /* simulated seconds per wall second */
    uint64_t n_events;
    int32_t job_pid[PFI_SIM_MAX_JOBS]; /* the process running each job (pfi simjob); 0 none */
    pfi_node_config cfg;
} state_head;

typedef struct state_file {
    state_head h;
    state_event events[STATE_MAX_EVENTS];
} state_file;

struct pfi_sim_state {
    int fd;
    int writable;
    state_file *map;
    pfi_sim_node *node;
    uint64_t applied;
    /* pfi_sim_state_limit_sum's own view: each GPU's limit after the first lim_seen changes. */
    double lim[PFI_MAX_GPUS];
    uint64_t lim_seen;
    int lim_ready;
    char path[4096];
};

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int pfi_sim_state_create(const char *path, const pfi_node_config *cfg_in, double speed,
                         int overwrite, pfi_err *err)
{
    if (!(speed > 0 && speed <= 1e6))
        return pfi_err_set(err, PFI_EINVAL, "speed-up must be > 0 and <= 1e6, not %g", speed);
    pfi_node_config cfg = *cfg_in;
    int rc = pfi_sim_config_check(&cfg, err);
    if (rc != PFI_OK)
        return rc;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return pfi_err_set(err, PFI_EIO, "cannot create %s: %s", tmp, strerror(errno));
    /* Only the header is written; the event log stays a hole until used. */
    state_head *head = calloc(1, sizeof *head);
    if (!head) {
        close(fd);
        unlink(tmp);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    memcpy(head->magic, STATE_MAGIC, 8);
    head->version = STATE_VERSION;
    head->config_size = (uint32_t)sizeof(pfi_node_config);
    head->epoch = pfi_clock_mono();
    head->speed = speed;
    head->cfg = cfg;
    int bad = write_all(fd, head, sizeof *head) != 0 ||
              ftruncate(fd, (off_t)sizeof(state_file)) != 0 || fsync(fd) != 0;
    int saved = errno;
    free(head);
    close(fd);
    if (bad) {
        unlink(tmp);
        return pfi_err_set(err, PFI_EIO, "cannot write %s: %s", tmp, strerror(saved));
    }
    /* link() fails if path exists: the first creator wins without a window of half files. */
    if (overwrite ? rename(tmp, path) != 0 : link(tmp, path) != 0) {
        saved = errno;
        unlink(tmp);
        if (saved == EEXIST)
            return pfi_err_set(err, PFI_EBUSY, "simulator state %s already exists", path);
        return pfi_err_set(err, PFI_EIO, "cannot create %s: %s", path, strerror(saved));
    }
    if (!overwrite)
        unlink(tmp);
    return PFI_OK;
}

int pfi_sim_state_open(const char *path, const pfi_node_config *cfg, double speed,
                       pfi_sim_state **out, pfi_err *err)
{
    *out = NULL;
    int writable = 1;
    int fd = open(path, O_RDWR);
    if (fd < 0 && errno == ENOENT && cfg) {
        int rc = pfi_sim_state_create(path, cfg, speed, 0, err);
        if (rc != PFI_OK && rc != PFI_EBUSY)
            return rc;
        fd = open(path, O_RDWR);
    }
    if (fd < 0 && errno == EACCES) {
        writable = 0;
        fd = open(path, O_RDONLY);
    }
    if (fd < 0)
        return pfi_err_set(err, errno == ENOENT ? PFI_ENOENT : PFI_EIO,
                           "cannot open simulator state %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size != (off_t)sizeof(state_file)) {
        close(fd);
        return pfi_err_set(err, PFI_EINVAL, "%s is not a pfi simulator state (wrong size)", path);
    }
    void *m = mmap(NULL, sizeof(state_file), PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED,
                   fd, 0);
    if (m == MAP_FAILED) {
        close(fd);
        return pfi_err_set(err, PFI_EIO, "cannot map %s: %s", path, strerror(errno));
    }
    state_file *sf = m;
    if (memcmp(sf->h.magic, STATE_MAGIC, 8) != 0 || sf->h.version != STATE_VERSION ||
        sf->h.config_size != sizeof(pfi_node_config)) {
        munmap(m, sizeof(state_file));
        close(fd);
        return pfi_err_set(err, PFI_EINVAL,
                           "%s is not a simulator state of this pfi build (recreate it with "
                           "`pfi sim init`)", path);
    }
    pfi_sim_state *s = calloc(1, sizeof *s);
    if (!s) {
        munmap(m, sizeof(state_file));
        close(fd);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    s->fd = fd;
    s->writable = writable;
    s->map = sf;
    snprintf(s->path, sizeof s->path, "%s", path);
    int rc = pfi_sim_node_new(&sf->h.cfg, &s->node, err);
    if (rc != PFI_OK) {
        pfi_err_prefix(err, "%s: ", path);
        pfi_sim_state_close(s);
        return rc;
    }
    *out = s;
    return PFI_OK;
}

void pfi_sim_state_close(pfi_sim_state *s)
{
    if (!s)
        return;
    pfi_sim_node_free(s->node);
    munmap(s->map, sizeof(state_file));
    close(s->fd);
    free(s);
}

double pfi_sim_state_now(const pfi_sim_state *s)
{
    return (pfi_clock_mono() - s->map->h.epoch) * s->map->h.speed;
}

double pfi_sim_state_speed(const pfi_sim_state *s) { return s->map->h.speed; }

static int lock(pfi_sim_state *s, int how, pfi_err *err)
{
    while (flock(s->fd, how) != 0) {
        if (errno != EINTR)
            return pfi_err_set(err, PFI_EIO, "cannot lock %s: %s", s->path, strerror(errno));
    }
    return PFI_OK;
}

/* Replays the changes this process has not seen; called with the lock held. */
static int replay(pfi_sim_state *s, pfi_err *err)
{
    uint64_t n = __atomic_load_n(&s->map->h.n_events, __ATOMIC_ACQUIRE);
    if (n > STATE_MAX_EVENTS)
        return pfi_err_set(err, PFI_EINVAL, "%s is corrupt (event count)", s->path);
    for (; s->applied < n; s->applied++) {
        const state_event *ev = &s->map->events[s->applied];
        int rc = pfi_sim_set_limit(s->node, ev->gpu, ev->t, ev->watts, err);
        if (rc != PFI_OK)
            return pfi_err_prefix(err, "%s: replaying change %llu: ", s->path,
                                  (unsigned long long)s->applied);
    }
    return PFI_OK;
}

int pfi_sim_state_node(pfi_sim_state *s, pfi_sim_node **node, double *now, pfi_err *err)
{
    int rc = lock(s, LOCK_SH, err);
    if (rc != PFI_OK)
        return rc;
    rc = replay(s, err);
    if (now)
        *now = pfi_sim_state_now(s);
    flock(s->fd, LOCK_UN);
    *node = s->node;
    return rc;
}

int pfi_sim_state_limit_sum(pfi_sim_state *s, double *sum, uint64_t *changes, pfi_err *err)
{
    int ng = pfi_sim_node_gpus(s->node);
    if (!s->lim_ready) {
        /* Where the private node stands (every change it replayed is before INFINITY). */
        for (int g = 0; g < ng; g++)
            s->lim[g] = pfi_sim_limit(s->node, g, INFINITY);
        s->lim_seen = s->applied;
        s->lim_ready = 1;
    }
    /* No lock: a change is written before the count that publishes it (release), and the log
     * is append-only, so the first n changes are complete once n is read (acquire). */
    uint64_t n = __atomic_load_n(&s->map->h.n_events, __ATOMIC_ACQUIRE);
    if (n > STATE_MAX_EVENTS || n < s->lim_seen)
        return pfi_err_set(err, PFI_EINVAL, "%s is corrupt or was recreated (event count)",
                           s->path);
    for (; s->lim_seen < n; s->lim_seen++) {
        const state_event *ev = &s->map->events[s->lim_seen];
        if (ev->gpu < 0 || ev->gpu >= ng)
            return pfi_err_set(err, PFI_EINVAL, "%s is corrupt (change %llu: GPU %d)", s->path,
                               (unsigned long long)s->lim_seen, (int)ev->gpu);
        s->lim[ev->gpu] = ev->watts;
    }
    double t = 0;
    for (int g = 0; g < ng; g++)
        t += s->lim[g];
    *sum = t;
    if (changes)
        *changes = n;
    return PFI_OK;
}

int pfi_sim_state_set_limit(pfi_sim_state *s, int gpu, double watts, pfi_err *err)
{
    if (!s->writable)
        return pfi_err_set(err, PFI_EPERM, "simulator state %s is read-only for this user",
                           s->path);
    const pfi_node_config *c = &s->map->h.cfg;
    if (gpu < 0 || gpu >= c->n_gpus)
        return pfi_err_set(err, PFI_ENOENT, "no GPU %d (this node has %d)", gpu, c->n_gpus);
    if (!(watts >= c->gpu.min_limit_w - 0.5 && watts <= c->gpu.max_limit_w + 0.5))
        return pfi_err_set(err, PFI_ERANGE,
                           "power limit %.0f W is outside GPU %d's range %.0f-%.0f W", watts, gpu,
                           c->gpu.min_limit_w, c->gpu.max_limit_w);
    /* Within half a watt of the range is taken as its end (as pfi_hw_set_limit takes it): kept
     * as given, the node then showed a limit below its own minimum, which no GPU can hold. */
    watts = fmin(fmax(watts, c->gpu.min_limit_w), c->gpu.max_limit_w);
    int rc = lock(s, LOCK_EX, err);
    if (rc != PFI_OK)
        return rc;
    rc = replay(s, err);
    uint64_t n = s->map->h.n_events;
    if (rc == PFI_OK && n >= STATE_MAX_EVENTS)
        rc = pfi_err_set(err, PFI_EBUSY,
                         "simulator state %s is full (%d limit changes); create a new one with "
                         "`pfi sim init`", s->path, STATE_MAX_EVENTS);
    if (rc == PFI_OK) {
        double t = pfi_sim_state_now(s);
        double last = pfi_sim_last_change(s->node);
        if (t < last)
            t = last;
        /* Apply to the private node first: if it refuses, the file stays untouched. */
        rc = pfi_sim_set_limit(s->node, gpu, t, watts, err);
        if (rc == PFI_OK) {
            s->map->events[n] = (state_event){.t = t, .watts = watts, .gpu = gpu};
            __atomic_store_n(&s->map->h.n_events, n + 1, __ATOMIC_RELEASE);
            s->applied = n + 1;
        }
    }
    flock(s->fd, LOCK_UN);
    return rc;
}

int pfi_sim_state_set_job_pid(pfi_sim_state *s, int job, long pid, pfi_err *err)
{
    if (!s->writable)
        return pfi_err_set(err, PFI_EPERM, "simulator state %s is read-only for this user",
                           s->path);
    if (job < 0 || job >= s->map->h.cfg.n_jobs || job >= PFI_SIM_MAX_JOBS)
        return pfi_err_set(err, PFI_ENOENT, "no job %d on the simulated node", job);
    int rc = lock(s, LOCK_EX, err);
    if (rc != PFI_OK)
        return rc;
    __atomic_store_n(&s->map->h.job_pid[job], (int32_t)pid, __ATOMIC_RELEASE);
    flock(s->fd, LOCK_UN);
    return PFI_OK;
}

long pfi_sim_state_job_pid(const pfi_sim_state *s, int job)
{
    if (job < 0 || job >= PFI_SIM_MAX_JOBS)
        return 0;
    return __atomic_load_n(&s->map->h.job_pid[job], __ATOMIC_ACQUIRE);
}
