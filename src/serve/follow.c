/* SPDX-License-Identifier: Apache-2.0 */
/* follow.c: throughput from the job's own log, inside the daemon.  A job's log is the path it
 * was registered with ("log", `pfi ctl job add --log`) or the file discovery found for it (its
 * stdout or stderr, discover.c); only a regular file is read.  It is read as it grows, with
 * the parsers of pfi sweep (format detected; the lines already there at the first read are parsed
 * for the facts they state, such as a sequence length, not timed).  Every observation updates the
 * job's observed tokens/s (as POST /v1/jobs/{id}/throughput does), and every cap change the daemon
 * makes is a free measurement: the time at one level of caps is measured as a sweep's level is (the
 * transient settles, MSER cuts what remains of it, the level is steady when the 95% CI is within
 * rel_ci of the mean), and each steady level becomes a point of the job's curve; from three levels
 * on (the baseline and two lower caps, as a registered curve needs) the points are the job's curve
 * (curve source "observed"; a curve the job was registered with, or a PFI30, is never replaced). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "serve/serve_int.h"

typedef struct feed_ctx {
    srv_follow *f;
    double now;
    int timed;     /* 0 while the backlog is parsed for its facts */
    int got;       /* observations timed this round */
} feed_ctx;

static void on_line(void *ctx, const char *line)
{
    feed_ctx *c = ctx;
    pfi_obs o;
    pfi_err e = {0};
    if (pfi_parser_feed(c->f->p, line, &o) && c->timed &&
        pfi_meter_add(&c->f->m, &o, c->now, &e) == PFI_OK)
        c->got++;
}

static void close_follow(srv_follow *f)
{
    if (f->fd >= 0)
        close(f->fd);
    pfi_parser_free(f->p);
    pfi_meter_free(&f->m);
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->path_link = -1;
}

/* What a job's log is read with: its path, its GPU set's generation and its units. */
typedef struct follow_key {
    const char *id, *path;
    int gpus_gen;
    double seq_len, tokens_per_step;
} follow_key;

static srv_follow *follow_for(srv_node *n, const follow_key *key)
{
    const char *id = key->id, *path = key->path;
    for (int k = 0; k < n->n_follow; k++)
        if (!strcmp(n->follow[k].id, id)) {
            const srv_follow *f = &n->follow[k];
            if (!strcmp(f->path, path) && f->gpus_gen == key->gpus_gen &&
                f->seq_len == key->seq_len && f->tokens_per_step == key->tokens_per_step)
                return &n->follow[k];
            /* a new log, other GPUs, or units registered since: start again */
            close_follow(&n->follow[k]);
            n->follow[k] = n->follow[--n->n_follow];
            break;
        }
    if (n->n_follow == SRV_MAX_JOBS)
        return NULL;
    srv_follow *f = &n->follow[n->n_follow];
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->path_link = -1;
    pfi_parse_cfg pc = {0};
    pc.seq_len = key->seq_len;
    pc.tokens_per_step = key->tokens_per_step;
    pfi_err e = {0};
    if (pfi_parser_new(&pc, &f->p, &e) != PFI_OK)
        return NULL;
    pfi_meter_init(&f->m);
    snprintf(f->id, sizeof f->id, "%s", id);
    snprintf(f->path, sizeof f->path, "%s", path);
    f->gpus_gen = key->gpus_gen;
    f->seq_len = key->seq_len;
    f->tokens_per_step = key->tokens_per_step;
    f->level_cap = NAN;
    n->n_follow++;
    return f;
}

/* /proc and /sys: files of the kernel's, not of a job. */
static int kernel_fs(const struct statfs *fs)
{
    return fs->f_type == PROC_SUPER_MAGIC || fs->f_type == SYSFS_MAGIC;
}

/* Opens a job's log when it is a regular file; -1 otherwise.  O_NONBLOCK so that a FIFO does
 * not hold the control loop in open() until some writer comes, and nothing but a regular file
 * is read: a FIFO or a device (/dev/zero reads without end) named as a job's "log", by the API
 * or a Slurm user's --power-log, froze every ramp step, grid event and watchdog after it. */
static int open_log(const char *path, int *why)
{
    /* Looked at before it is opened (opening a device has effects of its own: a watchdog
     * armed, a tape rewound), and again once open (it may have been swapped in between).  A
     * kernel file is no log though it reads as regular: reading /proc/kmsg took the kernel's
     * messages from syslog. */
    struct stat sb;
    struct statfs fs;
    if (stat(path, &sb) != 0) {
        *why = errno;
        return -1;
    }
    if (!S_ISREG(sb.st_mode) || statfs(path, &fs) != 0 || kernel_fs(&fs)) {
        *why = 0; /* not a regular file */
        return -1;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        *why = errno;
        return -1;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || fstatfs(fd, &fs) != 0 || kernel_fs(&fs)) {
        *why = 0;
        close(fd);
        return -1;
    }
    return fd;
}

/* A log rotated by rename (logrotate's create, Python's RotatingFileHandler): the path now
 * names another file.  Once the old one, read to its end, no longer grows and the new one has
 * lines, the old one is closed and the path followed from the start of the new one: the job
 * stayed measured by the renamed file, which no longer grew, and its space was held while it
 * was open.  A job still writing through its old descriptor (`> train.log` under logrotate's
 * create, which needs copytruncate) goes on being read there. */
static void follow_rename(srv_follow *f, const struct stat *held, long long got)
{
    struct stat now;
    if (got > 0 || stat(f->path, &now) != 0 || now.st_size == 0 ||
        (now.st_dev == held->st_dev && now.st_ino == held->st_ino))
        return;
    /* The new file must be the old one's owner's, and no symbolic link where the path was a
     * file: the job's user could put anything at the path (a symlink to /etc/shadow was opened
     * after a 2 s pause, and the log the job still wrote was no longer read), and the daemon
     * reads what its user cannot.  Not taken, the old file goes on being read, and that is
     * said once (a rotation that hands the log to another owner leaves the job unmeasured). */
    struct stat ln;
    int link = lstat(f->path, &ln) == 0 && S_ISLNK(ln.st_mode);
    if (now.st_uid != held->st_uid || (link && f->path_link == 0)) {
        if (!f->not_taken)
            f->not_taken = 1;
        return;
    }
    int why = 0, fd = open_log(f->path, &why);
    if (fd < 0)
        return; /* not there yet, or not a file: the old one stays until it is */
    if (fstat(fd, &now) != 0 || now.st_uid != held->st_uid) { /* swapped since the stat */
        close(fd);
        return;
    }
    close(f->fd);
    f->fd = fd;
    f->off = 0;
    pfi_linebuf_reset(&f->lb);
    f->reopened = 1;
}

/* Reads what was appended since the last call; 1 when new observations were timed. */
static int read_new(srv_follow *f, double now)
{
    if (f->fd < 0 && (f->fd = open_log(f->path, &f->open_errno)) < 0)
        return 0;
    if (f->path_link < 0) {
        struct stat ln;
        f->path_link = lstat(f->path, &ln) == 0 && S_ISLNK(ln.st_mode);
    }
    f->open_said = 0; /* open: a later failure is said again */
    struct stat sb;
    int held = fstat(f->fd, &sb) == 0;
    if (held && sb.st_size < f->off) {
        f->off = 0; /* truncated or replaced: from the start again */
        pfi_linebuf_reset(&f->lb); /* a cut line of the old log is not the new one's first */
    }
    feed_ctx c = {f, now, f->live, 0};
    char buf[65536];
    ssize_t k = 0;
    long long off0 = f->off;
    /* At most SRV_LOG_READ_MAX a tick: a backlog of gigabytes (or a sparse file) is read over
     * several ticks, not while every ramp step, grid event and watchdog waits.  The backlog
     * (all there is until the first read that reaches the end) is parsed for facts only. */
    for (long long left = SRV_LOG_READ_MAX; left > 0; left -= k) {
        size_t want = left < (long long)sizeof buf ? (size_t)left : sizeof buf;
        if ((k = pread(f->fd, buf, want, f->off)) <= 0)
            break;
        f->off += k;
        pfi_linebuf_push(&f->lb, buf, (size_t)k, on_line, &c);
    }
    if (k <= 0) {
        f->live = 1;
        if (held)
            follow_rename(f, &sb, f->off - off0);
    }
    return c.got > 0;
}

/* The curve point of a steady level: replaces one at the same cap. */
static void add_point(srv_follow *f, double cap, double tps, double draw)
{
    int k = 0;
    while (k < f->n_pts && fabs(f->pts_cap[k] - cap) > 1.0)
        k++;
    if (k == f->n_pts) {
        if (f->n_pts == PFI_MAX_LEVELS)
            return;
        f->n_pts++;
    }
    f->pts_cap[k] = cap;
    f->pts_tps[k] = tps;
    f->pts_draw[k] = draw;
}

/* Three or more steady levels (what a registered curve needs: the baseline and two lower
 * caps) make the job's curve, unless it was registered with one. */
static void set_curve(srv_node *n, srv_follow *f)
{
    if (f->n_pts < 3)
        return;
    /* Its baseline measured uncapped (every GPU at its default limit, baseline telemetry
     * taken) and no steady level there: that is the curve's top point.  The levels alone made
     * the highest capped one the baseline: 32,061 tokens/s at 466 W replaced the 38,322
     * measured uncapped, and every slowdown (SLA checks too) was read 16% short. */
    double def = INFINITY, base_tps = NAN, p0 = NAN;
    pthread_mutex_lock(&n->mu);
    int jj = pfi_srv_find_job(n->jobs, n->n_jobs, f->id);
    if (jj >= 0) {
        const srv_job *jb = &n->jobs[jj];
        for (int k = 0; k < jb->n_gpus; k++)
            def = fmin(def, n->gpu[jb->gpus[k]].dev.default_limit_w);
        if (jb->base.n > 0 && jb->base.power_w > 0) {
            base_tps = jb->t0_tps;
            p0 = jb->base.power_w;
        }
    }
    pthread_mutex_unlock(&n->mu);
    int at_default = 0;
    for (int k = 0; k < f->n_pts; k++)
        at_default |= fabs(f->pts_cap[k] - def) <= 1.0;
    json_t *pts = json_array();
    for (int k = 0; k < f->n_pts; k++)
        json_array_append_new(pts, json_pack("{s:f, s:f, s:f}", "cap_w", f->pts_cap[k],
                                             "tokens_per_s", f->pts_tps[k], "draw_w",
                                             f->pts_draw[k]));
    if (!at_default && isfinite(def) && base_tps > 0 && p0 > 0)
        json_array_append_new(pts, json_pack("{s:f, s:f, s:f}", "cap_w", def, "tokens_per_s",
                                             base_tps, "draw_w", p0));
    json_t *curve = json_pack("{s:o}", "points", pts);
    pthread_mutex_lock(&n->decide_mu);
    pthread_mutex_lock(&n->mu);
    int j = pfi_srv_find_job(n->jobs, n->n_jobs, f->id);
    if (j >= 0 && n->jobs[j].curve_src != SRV_CURVE_GIVEN &&
        n->jobs[j].curve_src != SRV_CURVE_PFI) {
        pfi_curve c;
        int src;
        double t0;
        pfi_err e = {0};
        if (pfi_srv_curve_from_json(n->gpu, &n->jobs[j], curve, NULL, &c, &src, &t0, &e) ==
            PFI_OK) {
            n->jobs[j].curve = c;
            n->jobs[j].curve_src = SRV_CURVE_OBSERVED;
            n->jobs[j].pfi30 = pfi_fit_s(&c.fit, 0.3) / 0.3;
            if (isfinite(t0))
                n->jobs[j].t0_tps = t0;
        }
    }
    pthread_mutex_unlock(&n->mu);
    pthread_mutex_unlock(&n->decide_mu);
    json_decref(curve);
}

/* A steady level at which the job is slower than its SLA allows, even at the fast end of the
 * level's 95% interval (by more than SRV_SLA_TOL), is kept as a breach seen (the latest
 * PFI_ALLOC_SEEN_MAX, one per cap): the plan reads the job's curve through it, and the caps are
 * planned again at the next tick.  Its curve's source does not matter: a registered curve can
 * be as wrong as an estimate, and what the log shows at a cap is the job's throughput there. */
static void sla_check(srv_node *n, const srv_follow *f, double cap, const pfi_window_stats *st)
{
    double fast = isfinite(st->hi) ? st->hi : st->mean, s = NAN, sla = NAN;
    pfi_alloc_seen kept = {0};
    pthread_mutex_lock(&n->decide_mu);
    pthread_mutex_lock(&n->mu);
    int j = pfi_srv_find_job(n->jobs, n->n_jobs, f->id);
    srv_job *jb = j >= 0 ? &n->jobs[j] : NULL;
    if (jb && isfinite(jb->sla) && jb->t0_tps > 0 && fast > 0 &&
        1 - fast / jb->t0_tps > jb->sla + SRV_SLA_TOL) {
        sla = jb->sla;
        s = fmin(1, fmax(0, 1 - st->mean / jb->t0_tps));
        if (pfi_alloc_seen_add(&jb->sla_seen, cap, s, PFI_SEEN_LATEST, NULL) == PFI_OK) {
            n->last_replan_mono = -1e9; /* at the next tick, not at the next interval */
            kept = jb->sla_seen;
        } else {
            s = NAN; /* no cap to read it at: nothing kept, nothing said */
        }
    }
    pthread_mutex_unlock(&n->mu);
    pthread_mutex_unlock(&n->decide_mu);
    if (kept.n > 0)
        pfi_srv_sla_seen_save(n, f->id, &kept);
    if (isfinite(s))
        pfi_srv_event_add(n, "sla_breach",
                          "job %s: %.1f%% slower than its baseline at %.0f W per GPU (its log, "
                          "steady), its SLA allows %.1f%%: its curve is read through this and "
                          "the caps are planned again",
                          f->id, 100 * s, cap, 100 * sla);
}

/* One job's level bookkeeping: its GPUs' mean limit and draw now (mu held by the caller's
 * copy), the meter's steady check. */
static void level_tick(srv_node *n, srv_follow *f, double cap, double draw, double now)
{
    pfi_steady_cfg sc;
    pfi_steady_defaults(&sc);
    if (!(fabs(cap - f->level_cap) <= 1.0)) {
        f->level_cap = cap;
        f->level_t0 = now;
        f->win_start = now + sc.settle_s;
        f->level_done = 0;
        f->draw_sum = 0;
        f->draw_n = 0;
        pfi_meter_clear(&f->m);
        return;
    }
    if (f->level_done || now < f->win_start)
        return;
    if (isfinite(draw)) {
        f->draw_sum += draw;
        f->draw_n++;
    }
    pfi_window_stats st;
    if (!pfi_steady_check(&f->m, &sc, now, &f->win_start, &st))
        return;
    f->level_done = 1;
    if (f->m.unit != PFI_OU_TOKENS) {
        /* Samples/s or steps/s taken as tokens/s made a 4-GPU job worth 5 "tokens/s" against
         * its neighbours' 10^5, and the plan sent it to the floor. */
        if (!f->unit_said)
            pfi_srv_event_add(n, "job_log",
                              "job %s: its log gives %s/s, not tokens/s (no %s in it, its "
                              "registration or its command line): no curve point or baseline "
                              "is taken from it; register it with %s",
                              f->id, f->m.unit == PFI_OU_SAMPLES ? "samples" : "steps",
                              f->m.unit == PFI_OU_SAMPLES ? "sequence length"
                                                          : "tokens per step",
                              f->m.unit == PFI_OU_SAMPLES ? "\"seq_len\"" : "\"tokens_per_step\"");
        f->unit_said = 1;
        return;
    }
    double d = f->draw_n ? f->draw_sum / f->draw_n : NAN;
    add_point(f, cap, st.mean, d);
    pfi_srv_event_add(n, "curve_point",
                      "job %s: %.0f tokens/s at %.0f W per GPU (steady, %d samples, from its log)",
                      f->id, st.mean, cap, st.n);
    set_curve(n, f);
    sla_check(n, f, cap, &st);
}

void pfi_srv_follow_tick(srv_node *n)
{
    double now = pfi_clock_mono();
    char ids[SRV_MAX_JOBS][SRV_ID_MAX], logs[SRV_MAX_JOBS][PFI_SERVE_PATH_MAX];
    double cap[SRV_MAX_JOBS], draw[SRV_MAX_JOBS], seq[SRV_MAX_JOBS], tps[SRV_MAX_JOBS];
    int ng[SRV_MAX_JOBS], gen[SRV_MAX_JOBS], nj = 0;
    pthread_mutex_lock(&n->mu);
    for (int j = 0; j < n->n_jobs; j++) {
        const srv_job *jb = &n->jobs[j];
        snprintf(ids[nj], SRV_ID_MAX, "%s", jb->id);
        snprintf(logs[nj], PFI_SERVE_PATH_MAX, "%s", jb->log);
        double c = 0, d = 0;
        int nd = 0;
        for (int k = 0; k < jb->n_gpus; k++) {
            const srv_gpu *g = &n->gpu[jb->gpus[k]];
            c += g->dev.limit_w;
            if (g->up && (g->s.have & PFI_F_POWER)) {
                d += g->s.power_w;
                nd++;
            }
        }
        cap[nj] = jb->n_gpus ? c / jb->n_gpus : NAN;
        draw[nj] = nd ? d / nd : NAN;
        ng[nj] = jb->n_gpus;
        gen[nj] = jb->gpus_gen;
        seq[nj] = jb->seq_len;
        tps[nj] = jb->tokens_per_step;
        nj++;
    }
    pthread_mutex_unlock(&n->mu);
    for (int j = 0; j < nj; j++) {
        const char *path = logs[j][0] ? logs[j] : pfi_srv_found_log(n, ids[j]);
        pthread_mutex_lock(&n->mu);
        int jj = pfi_srv_find_job(n->jobs, n->n_jobs, ids[j]);
        if (jj >= 0 && strcmp(n->jobs[jj].log_followed, path))
            snprintf(n->jobs[jj].log_followed, sizeof n->jobs[jj].log_followed, "%s", path);
        pthread_mutex_unlock(&n->mu);
        if (!path[0])
            continue;
        follow_key key = {ids[j], path, gen[j], seq[j], tps[j]};
        srv_follow *f = follow_for(n, &key);
        if (!f)
            continue;
        int fresh = read_new(f, now);
        if (f->fd < 0 && !f->open_said) {
            /* Unread and unsaid, the job went unmeasured (a log in a 0700 home the daemon's
             * unit could not read). */
            f->open_said = 1;
            pfi_srv_event_add(n, "job_log", "job %s: cannot read its log %s: %s (tried again "
                              "every tick)", ids[j], path,
                              f->open_errno ? strerror(f->open_errno) : "not a regular file");
        }
        if (f->not_taken == 1) {
            f->not_taken = 2;
            pfi_srv_event_add(n, "job_log", "job %s: %s names a new file of another owner, or a "
                              "symbolic link where the log was a file: not followed (the log it "
                              "named is read while it is open; register the job with its log "
                              "to follow another)", ids[j], path);
        }
        if (f->reopened) {
            f->reopened = 0;
            pfi_srv_event_add(n, "job_log", "job %s: %s names a new file (the log was rotated): "
                              "that one is followed from its start", ids[j], path);
        }
        f->m.scale = pfi_parser_per_gpu(f->p) ? ng[j] : 1;
        level_tick(n, f, cap[j], draw[j], now);
        if (fresh && f->m.n > 0 && f->m.unit == PFI_OU_TOKENS) {
            /* the baseline: the tokens gained over the window (duration-weighted), within this
             * level (the meter forgets a level's samples when the cap moves) */
            double last = f->m.s[f->m.n - 1].rate;
            double rate = pfi_meter_recent_rate(&f->m, now - SRV_LOG_RATE_WINDOW_S);
            pfi_err e = {0};
            pfi_srv_job_throughput(n, ids[j], last, isfinite(rate) ? rate : last, &e);
            /* A level measured (or a job never steady) keeps what the next window reads, not
             * every line of a run at one cap for days. */
            if (f->m.n > SRV_LOG_KEEP_SAMPLES &&
                (f->level_done || now - f->level_t0 > SRV_LOG_KEEP_LEVEL_S))
                pfi_meter_forget_before(&f->m, now - 2 * SRV_LOG_RATE_WINDOW_S);
        }
    }
    /* Logs of jobs that are gone are closed. */
    for (int k = 0; k < n->n_follow;) {
        int alive = 0;
        for (int j = 0; j < nj; j++)
            alive |= !strcmp(ids[j], n->follow[k].id);
        if (alive) {
            k++;
            continue;
        }
        close_follow(&n->follow[k]);
        n->follow[k] = n->follow[--n->n_follow];
    }
}

void pfi_srv_follow_free(srv_node *n)
{
    for (int k = 0; k < n->n_follow; k++)
        close_follow(&n->follow[k]);
    n->n_follow = 0;
}
