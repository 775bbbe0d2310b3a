/* SPDX-License-Identifier: Apache-2.0 */
/* discover.c: jobs found by themselves.  Every sample interval the GPUs' compute processes
 * are listed through the backend (pfi_hw_processes: NVML's running processes, or the
 * simulator's jobs) and each is mapped to its job (pfi_proc_job_of: Slurm job id, Kubernetes
 * pod, else process group).  A job seen for the first time is registered with its GPUs like a
 * client's registration (same checks, same decision under the budget); a job registered by
 * the Slurm plugin or the API takes precedence: a discovered job with its id (or "slurm-N" for
 * "N") or on its GPUs is matched to it, not registered again.  A job discovery registered is
 * retired when its processes are gone, through the same removal as DELETE /v1/jobs/{id}, whose
 * decision re-plans the freed GPUs under the budget.  A job's log is its stdout or stderr file
 * (procjob.c); when both are regular files, the one that shows throughput now (pick_log,
 * logpick.c); when neither is and its output goes down a pipe, the file the pipe's reader
 * writes (tee's). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "serve/serve_int.h"
#include "util/text.h"

typedef struct round_job {
    pfi_proc_job pj;
    int gpus[PFI_MAX_GPUS], n_gpus;
    long other_pid;                         /* a process of the job with another stdout file */
    char other_log[PFI_SERVE_PATH_MAX];     /* that file ("" none) */
} round_job;

/* A GPU process whose pid is not in proc_root: ended between the two reads, or there all along
 * where the daemon cannot see it (a container's PID namespace while NVML gives host pids,
 * hidepid).  Seen the round before too, it is a job of its own, "pid-P" with no log: its GPUs
 * were planned as idle, a running job sent to its minimum cap.  1 when pj is that job. */
static int unmapped_job(srv_node *n, long pid, pfi_proc_job *pj)
{
    int seen = 0;
    for (int k = 0; k < n->n_unmapped[1]; k++)
        seen |= n->unmapped[1][k] == pid;
    int have = 0;
    for (int k = 0; k < n->n_unmapped[0]; k++)
        have |= n->unmapped[0][k] == pid;
    if (!have && n->n_unmapped[0] < SRV_MAX_JOBS)
        n->unmapped[0][n->n_unmapped[0]++] = pid;
    if (!seen)
        return 0;
    memset(pj, 0, sizeof *pj);
    pj->pid = pid;
    snprintf(pj->id, sizeof pj->id, "pid-%ld", pid);
    snprintf(pj->kind, sizeof pj->kind, "not in /proc");
    pj->uid = -1;
    return 1;
}

/* Adds GPU i's processes to the round's jobs.  0 when the listing failed (then no job on it is
 * retired this round, said when it starts), -1 when the backend cannot list processes at all. */
static int list_gpu(srv_node *n, int i, round_job *rj, int *nr)
{
    pfi_gpu_proc p[PFI_MAX_GPU_PROCS];
    int np = 0;
    pfi_err e = {0};
    pthread_mutex_lock(&n->hw_mu);
    int rc = pfi_hw_processes(n->b, i, p, PFI_MAX_GPU_PROCS, &np, &e);
    pthread_mutex_unlock(&n->hw_mu);
    if (rc == PFI_ENOTSUP) {
        pfi_srv_event_add(n, "discovery_off", "jobs are not discovered: %s", e.msg);
        return -1;
    }
    if (rc != PFI_OK) {
        if (!n->list_failed[i])
            pfi_srv_event_add(n, "discovery_error", "GPU %d: its processes cannot be listed (%s): "
                              "the jobs on it are kept until they can", i, e.msg);
        n->list_failed[i] = 1;
        return 0;
    }
    if (n->list_failed[i])
        pfi_srv_event_add(n, "discovery", "GPU %d: its processes are listed again", i);
    n->list_failed[i] = 0;
    for (int k = 0; k < np && k < PFI_MAX_GPU_PROCS; k++) {
        pfi_proc_job pj;
        if (pfi_proc_job_of(n->cfg->proc_root, p[k].pid, &pj, &e) != PFI_OK &&
            !unmapped_job(n, p[k].pid, &pj))
            continue; /* ended between the two reads */
        int f = 0;
        while (f < *nr && strcmp(rj[f].pj.id, pj.id) != 0)
            f++;
        if (f < *nr && pfi_proc_job_apart(&rj[f].pj, &pj)) {
            if (strcmp(rj[f].pj.id, pj.id) != 0)
                f = *nr; /* the one listed before was renamed and keeps its GPUs */
            else
                for (f = 0; f < *nr && strcmp(rj[f].pj.id, pj.id) != 0; f++) {
                }
        }
        if (f == *nr) {
            if (*nr == SRV_MAX_JOBS)
                continue;
            rj[f].pj = pj;
            rj[f].n_gpus = 0;
            rj[f].other_log[0] = '\0';
            (*nr)++;
        } else if (pj.log[0] && rj[f].pj.log[0] && strcmp(pj.log, rj[f].pj.log) &&
                   !rj[f].other_log[0]) {
            rj[f].other_pid = pj.pid;
            snprintf(rj[f].other_log, sizeof rj[f].other_log, "%s", pj.log);
        }
        int have = 0;
        for (int g = 0; g < rj[f].n_gpus; g++)
            have |= rj[f].gpus[g] == i;
        if (!have)
            rj[f].gpus[rj[f].n_gpus++] = i;
    }
    return 1;
}

/* The registered job a discovered one is: same id ("slurm-N" also matches "N"), else one
 * holding any of its GPUs.  -1 when none (mu held). */
static int registered_match(const srv_node *n, const round_job *r)
{
    int j = pfi_srv_find_job(n->jobs, n->n_jobs, r->pj.id);
    if (j >= 0)
        return j;
    if (strncmp(r->pj.id, "slurm-", 6) == 0 &&
        (j = pfi_srv_find_job(n->jobs, n->n_jobs, r->pj.id + 6)) >= 0)
        return j;
    for (int g = 0; g < r->n_gpus; g++)
        if (n->gpu[r->gpus[g]].job >= 0)
            return n->gpu[r->gpus[g]].job;
    return -1;
}

static srv_found *found_by_id(srv_node *n, const char *id)
{
    for (int f = 0; f < n->n_found; f++)
        if (strcmp(n->found[f].id, id) == 0)
            return &n->found[f];
    return NULL;
}

/* Whether job id's refusal was said within the hour (else it is noted as said now): it is
 * tried again at every discovery round, and said each time, 86,400 events a day at 1 s.  The
 * discovery thread alone calls it. */
#define REFUSED_SAID SRV_MAX_JOBS
static int refusal_said_lately(const char *id)
{
    static char ids[REFUSED_SAID][SRV_ID_MAX];
    static double at[REFUSED_SAID];
    double now = pfi_clock_mono();
    int oldest = 0;
    for (int k = 0; k < REFUSED_SAID; k++) {
        if (at[k] > 0 && !strcmp(ids[k], id) && now - at[k] < 3600)
            return 1;
        if (at[k] < at[oldest])
            oldest = k;
    }
    snprintf(ids[oldest], sizeof ids[oldest], "%s", id);
    at[oldest] = now;
    return 0;
}

static void register_job(srv_node *n, const round_job *r)
{
    json_t *gpus = json_array();
    for (int g = 0; g < r->n_gpus; g++)
        json_array_append_new(gpus, json_integer(r->gpus[g]));
    /* Cut at 128 bytes, then made printable: a cut inside a character (a long torchrun line
     * with an accented path), or a Latin-1 byte of its argv, made the name no UTF-8, the spec
     * was refused and the job never registered, its GPUs planned as idle while it trained. */
    char name[129];
    snprintf(name, sizeof name, "%s", r->pj.cmdline);
    pfi_text_make_printable(name);
    json_t *spec = json_pack("{s:s, s:o, s:s, s:s}", "id", r->pj.id, "gpus", gpus, "source",
                             "discovered", "name", name);
    if (r->pj.seq_len > 0) /* its log in samples/s then reads as tokens/s */
        json_object_set_new(spec, "seq_len", json_real(r->pj.seq_len));
    json_t *res = NULL;
    pfi_err e = {0};
    int rc = pfi_srv_job_add(n, spec, &res, &e);
    json_decref(spec);
    json_decref(res);
    if (rc != PFI_OK) {
        if (!refusal_said_lately(r->pj.id))
            pfi_srv_event_add(n, "discovery_error", "job %s (pid %ld) not registered: %s "
                              "(said once an hour while it runs)", r->pj.id, r->pj.pid, e.msg);
        return;
    }
    int unseen = !strcmp(r->pj.kind, "not in /proc");
    pfi_srv_event_add(n, "job_discovered", "job %s (%s, pid %ld) on %d GPU(s)%s%s%s%s%s%s", r->pj.id,
                  r->pj.kind, r->pj.pid, r->n_gpus, r->pj.log[0] ? ", log " : "", r->pj.log,
                  r->pj.err_log[0] ? " (stdout; stderr " : "", r->pj.err_log,
                  r->pj.err_log[0] ? " too: the one that shows throughput is followed)" : "",
                  unseen ? ": a GPU process the daemon cannot see (another PID namespace? "
                           "hidepid?), planned as a job of its own, with no log" : "");
}

/* stdout and stderr are two different files ("> out.log 2> err.log"): which one is followed
 * is logpick.c's rule, from what each file's new lines show.  A file is looked at in a round
 * in which its size changed (at the first, its last lines).  Only one file is followed at a
 * time: a switch starts follow.c's reader and meter afresh on the other, whose lines before
 * the switch are read for their facts only, so two streams' numbers are never one figure. */
static void pick_log(srv_node *n, srv_found *f, const pfi_proc_job *pj)
{
    const char *path[2] = {pj->log, pj->err_log}, *name[2] = {"stdout", "stderr"};
    int shows[2] = {0, 0};
    for (int s = 0; s < 2; s++) {
        struct stat sb;
        if (stat(path[s], &sb) != 0 || sb.st_size == f->pick_size[s])
            continue;
        f->pick_size[s] = sb.st_size;
        shows[s] = pfi_proc_log_rate_since(path[s], &f->pick_from[s]);
    }
    srv_logpick_change c =
        pfi_srv_logpick_step(&f->pick, shows, pfi_clock_mono(), n->cfg->log_switch_after_s);
    int w = f->pick.followed, o = 1 - w;
    snprintf(f->log, sizeof f->log, "%s", path[w]);
    if (c == SRV_LOGPICK_CHOSEN && w == 0)
        pfi_srv_event_add(n, "job_log", "job %s: following its stdout %s (it shows throughput)",
                          f->id, f->log);
    else if (c == SRV_LOGPICK_CHOSEN)
        pfi_srv_event_add(n, "job_log",
                          "job %s: following its stderr %s (its stdout %s shows no throughput)",
                          f->id, f->log, path[o]);
    else if (c == SRV_LOGPICK_SWITCHED)
        pfi_srv_event_add(n, "job_log",
                          "job %s: following its %s %s from now on: it shows throughput, and its "
                          "%s %s has shown none for %gs (the reading starts again there)",
                          f->id, name[w], f->log, name[o], path[o], n->cfg->log_switch_after_s);
}

static void gpu_list(const int *g, int n, char *out, size_t size)
{
    size_t at = 0;
    out[0] = '\0';
    for (int k = 0; k < n && at + 1 < size; k++) {
        int w = snprintf(out + at, size - at, "%s%d", k ? "," : "", g[k]);
        if (w < 0)
            break;
        at += (size_t)w;
    }
}

static int proc_alive(const char *proc_root, long pid)
{
    char path[PFI_SERVE_PATH_MAX + 32];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%ld", proc_root && proc_root[0] ? proc_root : "/proc", pid);
    return stat(path, &sb) == 0;
}

/* Times Slurm is asked for a job's output file, and the waits before the second and later
 * asks: one slurmctld timeout in a burst of job starts left the job unmeasured for its life. */
#define SLURM_ASKS 4
static const double slurm_wait_s[SLURM_ASKS - 1] = {10, 30, 60};

static void ask_slurm(srv_node *n, srv_found *f, const char *job_id)
{
    double now = pfi_clock_mono();
    if (f->slurm_asked >= SLURM_ASKS || now < f->slurm_next)
        return;
    f->slurm_asked++;
    pfi_err e = {0};
    if (pfi_srv_slurm_log(job_id, f->log, sizeof f->log, &e) == PFI_OK) {
        pfi_srv_event_add(n, "job_log", "job %s: following %s, its output as Slurm states it",
                          f->id, f->log);
        return;
    }
    f->log[0] = '\0';
    if (f->slurm_asked < SLURM_ASKS) {
        f->slurm_next = now + slurm_wait_s[f->slurm_asked - 1];
        pfi_srv_event_add(n, "job_log", "job %s: no log from Slurm: %s (asked again in %.0f s)",
                          f->id, e.msg, slurm_wait_s[f->slurm_asked - 1]);
    } else {
        pfi_srv_event_add(n, "job_log", "job %s: no log from Slurm: %s (asked %d times: no more)",
                          f->id, e.msg, SLURM_ASKS);
    }
}

static void remember(srv_node *n, const round_job *r, int ours, const char *matched,
                     int has_log, int differ)
{
    srv_found *f = found_by_id(n, r->pj.id);
    if (!f) {
        if (n->n_found == SRV_MAX_JOBS)
            return;
        f = &n->found[n->n_found++];
        memset(f, 0, sizeof *f);
        pfi_srv_logpick_init(&f->pick);
        f->pick_size[0] = f->pick_size[1] = -1; /* not looked at yet */
        snprintf(f->id, sizeof f->id, "%s", r->pj.id);
        f->registered_by_us = ours;
        snprintf(f->matched, sizeof f->matched, "%s", matched ? matched : "");
        if (!ours && !differ) /* else the event below says how it differs */
            pfi_srv_event_add(n, "job_matched", "job %s (pid %ld) is the registered job %s",
                          r->pj.id, r->pj.pid, matched);
    } else if (f->registered_by_us != ours) {
        /* Matched, then its registration deleted and discovery registered it (or the other
         * way): kept as first seen, the job was never retired when its processes ended, and
         * its GPUs stayed planned for a dead job. */
        f->registered_by_us = ours;
        snprintf(f->matched, sizeof f->matched, "%s", matched ? matched : "");
        if (!ours && !differ)
            pfi_srv_event_add(n, "job_matched", "job %s (pid %ld) is the registered job %s",
                              r->pj.id, r->pj.pid, matched);
    }
    if (f->pid && f->pid != r->pj.pid && !has_log && !proc_alive(n->cfg->proc_root, f->pid)) {
        /* Its process gone, another in its place (a Slurm job's next step): its output may be
         * another file; the old step's stayed followed. */
        f->log[0] = '\0';
        f->pipe_asked = f->slurm_asked = 0;
        f->slurm_next = 0;
        pfi_srv_logpick_init(&f->pick);
        f->pick_size[0] = f->pick_size[1] = -1;
    }
    if (!ours && differ && !f->gpus_differ) {
        /* Matched on a GPU they share, but the process runs on others too (or fewer): its
         * per-GPU rate was scaled by the registered job's GPU count and its extra GPUs were
         * capped as idle while the job ran on them. */
        char mine[160], theirs[160];
        gpu_list(r->gpus, r->n_gpus, mine, sizeof mine);
        pthread_mutex_lock(&n->mu);
        int j = pfi_srv_find_job(n->jobs, n->n_jobs, matched);
        if (j >= 0)
            gpu_list(n->jobs[j].gpus, n->jobs[j].n_gpus, theirs, sizeof theirs);
        else
            snprintf(theirs, sizeof theirs, "?");
        pthread_mutex_unlock(&n->mu);
        pfi_srv_event_add(n, "job_matched",
                          "job %s (pid %ld) runs on GPUs %s, the registered job %s holds %s: "
                          "its log is not read as %s's throughput, and GPUs outside %s are "
                          "planned as idle: register the job with all its GPUs",
                          r->pj.id, r->pj.pid, mine, matched, theirs, matched, matched);
    }
    f->gpus_differ = !ours && differ;
    f->seen = 1;
    f->pid = r->pj.pid;
    memcpy(f->gpus, r->gpus, sizeof f->gpus);
    f->n_gpus = r->n_gpus;
    if (r->pj.err_log[0] && !has_log)
        pick_log(n, f, &r->pj);
    if (!f->log[0])
        snprintf(f->log, sizeof f->log, "%s", r->pj.log);
    if (r->other_log[0] && !has_log && !f->logs_said) {
        /* Two trainings started from one script share a process group: one job, one log read
         * for both, its rate scaled by all their GPUs.  Not split: torchrun --log-dir gives one
         * job's ranks a file each too. */
        f->logs_said = 1;
        pfi_srv_event_add(n, "job_log", "job %s: its processes write different files (pid %ld "
                          "%s, pid %ld %s): only %s is followed; if they are one job's ranks "
                          "(torchrun --log-dir) and another rank prints its throughput, or two "
                          "jobs, register it or them with that file (pfi ctl job add ID --gpus L "
                          "--log FILE)", f->id, r->pj.pid,
                          r->pj.log, r->other_pid, r->other_log, f->log[0] ? f->log : r->pj.log);
    }
    if (!f->log[0] && !has_log && r->pj.fd_errno && !f->fd_said) {
        /* Silent, every user's job went unmeasured under a unit without the capability. */
        f->fd_said = 1;
        pfi_srv_event_add(n, "job_log", "job %s: its stdout and stderr cannot be looked at in "
                          "/proc/%ld/fd (%s%s)", f->id, r->pj.pid, strerror(r->pj.fd_errno),
                          r->pj.fd_errno == EACCES || r->pj.fd_errno == EPERM
                              ? ": another user's process; the daemon needs CAP_SYS_PTRACE to "
                                "see its open files"
                              : "");
    }
    /* Its output piped ("train.py 2>&1 | tee train.log"): the file the pipe's reader writes.
     * The look lists every process, so it is made once per job, not every round. */
    if (!f->log[0] && !has_log && !f->pipe_asked && r->pj.pipe_ino) {
        f->pipe_asked = 1;
        char via[256];
        if (pfi_proc_pipe_log(n->cfg->proc_root, &r->pj, f->log, sizeof f->log, via, sizeof via))
            pfi_srv_event_add(n, "job_log", "job %s: %s, which writes %s: that file is followed",
                              f->id, via, f->log);
        else
            pfi_srv_event_add(n, "job_log",
                              "job %s: its %s is a pipe, and no process reading it writes a "
                              "file: no log", f->id, r->pj.pipe_fd == 2 ? "stderr" : "stdout");
    }
    if (!f->log[0] && !has_log && n->cfg->slurm_log && !strcmp(r->pj.kind, "slurm") &&
        !strncmp(r->pj.id, "slurm-", 6))
        ask_slurm(n, f, r->pj.id + 6);
}

/* Whether any of found job f's GPUs could not be listed this round: then it may still run. */
static int unlisted(const srv_node *n, const srv_found *f)
{
    for (int g = 0; g < f->n_gpus; g++)
        if (n->list_failed[f->gpus[g]])
            return 1;
    return 0;
}

/* Jobs discovery registered whose processes are gone are removed; matched ones forgotten.  A
 * job on a GPU whose processes could not be listed is kept: one lost GPU kept every ended job
 * of the node at its caps. */
static void retire(srv_node *n)
{
    for (int f = 0; f < n->n_found;) {
        if (n->found[f].seen || unlisted(n, &n->found[f])) {
            f++;
            continue;
        }
        if (n->found[f].registered_by_us) {
            json_t *res = NULL;
            pfi_err e = {0};
            if (pfi_srv_job_remove(n, n->found[f].id, &res, &e) == PFI_OK)
                pfi_srv_event_add(n, "job_ended", "job %s: its processes are gone; removed",
                              n->found[f].id);
            json_decref(res);
        }
        memmove(&n->found[f], &n->found[f + 1], sizeof n->found[0] * (size_t)(n->n_found - f - 1));
        n->n_found--;
    }
}

/* Jobs discovery registered that a restart reloaded and no round has seen (their processes
 * ended while the daemon was down) are discovery's to retire: they stayed planned for good,
 * and the next job on their GPUs was taken for them. */
static void adopt_reloaded(srv_node *n)
{
    pthread_mutex_lock(&n->mu);
    for (int j = 0; j < n->n_jobs && n->n_found < SRV_MAX_JOBS; j++) {
        const srv_job *jb = &n->jobs[j];
        if (!jb->discovered || found_by_id(n, jb->id))
            continue;
        srv_found *f = &n->found[n->n_found++];
        memset(f, 0, sizeof *f);
        pfi_srv_logpick_init(&f->pick);
        f->pick_size[0] = f->pick_size[1] = -1;
        memcpy(f->id, jb->id, sizeof f->id); /* both SRV_ID_MAX, NUL-terminated */
        f->registered_by_us = 1;
        memcpy(f->gpus, jb->gpus, sizeof f->gpus);
        f->n_gpus = jb->n_gpus;
    }
    pthread_mutex_unlock(&n->mu);
}

/* Rounds a job discovery registered must run on fewer GPUs before they are given back: a worker
 * restarting, or one listing that missed it, is not the job shrinking. */
#define FEWER_ROUNDS 3

/* A job discovery registered runs on other GPUs than it holds.  Workers start over seconds:
 * one seen first on GPU 0 was registered there, its other GPUs planned as idle (380 W against
 * its 700 W) and its per-GPU rate scaled by 1.  GPUs it gains are added at once; GPUs it left
 * are given back after FEWER_ROUNDS rounds, unless they could not be listed. */
static void follow_gpus(srv_node *n, srv_found *f, round_job *r)
{
    int now[PFI_MAX_GPUS], nn = 0, grows = 0;
    pthread_mutex_lock(&n->mu);
    int j = pfi_srv_find_job(n->jobs, n->n_jobs, f->id);
    srv_job held = j >= 0 ? n->jobs[j] : (srv_job){0};
    pthread_mutex_unlock(&n->mu);
    if (j < 0)
        return;
    for (int g = 0; g < r->n_gpus; g++) {
        int in = 0;
        for (int q = 0; q < held.n_gpus; q++)
            in |= held.gpus[q] == r->gpus[g];
        grows |= !in;
    }
    if (grows) { /* what it holds and what it runs on */
        nn = held.n_gpus;
        memcpy(now, held.gpus, sizeof *now * (size_t)nn);
        for (int g = 0; g < r->n_gpus; g++) {
            int in = 0;
            for (int q = 0; q < held.n_gpus; q++)
                in |= held.gpus[q] == r->gpus[g];
            if (!in)
                now[nn++] = r->gpus[g];
        }
    } else {
        for (int q = 0; q < held.n_gpus; q++)
            if (n->list_failed[held.gpus[q]])
                return; /* a GPU it holds could not be listed: it may run there still */
        if (++f->fewer_rounds < FEWER_ROUNDS)
            return;
        nn = r->n_gpus;
        memcpy(now, r->gpus, sizeof *now * (size_t)nn);
    }
    f->fewer_rounds = 0;
    for (int a = 1; a < nn; a++) /* in index order, as a round lists them */
        for (int b = a; b > 0 && now[b] < now[b - 1]; b--) {
            int t = now[b];
            now[b] = now[b - 1];
            now[b - 1] = t;
        }
    char was[160], is[160];
    gpu_list(held.gpus, held.n_gpus, was, sizeof was);
    gpu_list(now, nn, is, sizeof is);
    pfi_err e = {0};
    if (pfi_srv_job_set_gpus(n, f->id, now, nn, &e) != PFI_OK) {
        if (!f->gpus_refused_said) /* every round else, a line a second for as long as it runs */
            pfi_srv_event_add(n, "discovery_error", "job %s runs on GPUs %s, holds %s: not "
                              "changed: %s", f->id, is, was, e.msg);
        f->gpus_refused_said = 1;
        return;
    }
    f->gpus_refused_said = 0;
    pfi_srv_event_add(n, "job_gpus_changed", "job %s (pid %ld) now on GPUs %s (was %s): what was "
                      "measured of it before is forgotten", f->id, r->pj.pid, is, was);
}

void pfi_srv_discover(srv_node *n)
{
    if (!n->cfg->discover || n->discover_off)
        return;
    static round_job rj[SRV_MAX_JOBS]; /* the control loop's alone */
    int nr = 0;
    n->n_unmapped[0] = 0;
    for (int i = 0; i < n->n_gpus; i++) {
        if (list_gpu(n, i, rj, &nr) < 0) {
            n->discover_off = 1;
            return;
        }
    }
    for (int f = 0; f < n->n_found; f++)
        n->found[f].seen = 0;
    for (int r = 0; r < nr; r++) {
        srv_found *known = found_by_id(n, rj[r].pj.id);
        pthread_mutex_lock(&n->mu);
        int j = registered_match(n, &rj[r]);
        char matched[SRV_ID_MAX] = "";
        int has_log = j >= 0 && n->jobs[j].log[0];
        int differ = j >= 0 && !pfi_srv_same_gpus(rj[r].gpus, rj[r].n_gpus, n->jobs[j].gpus,
                                                  n->jobs[j].n_gpus);
        int by_discovery = j >= 0 && n->jobs[j].discovered;
        if (j >= 0)
            snprintf(matched, sizeof matched, "%s", n->jobs[j].id);
        /* A job registered without a sequence length (the plugin's, the API's) takes the one its
         * processes' command line states, so its log in samples/s reads as tokens/s; not one
         * whose process runs on other GPUs too (its log is not read as the job's). */
        if (j >= 0 && !differ && !(n->jobs[j].seq_len > 0) && rj[r].pj.seq_len > 0)
            n->jobs[j].seq_len = rj[r].pj.seq_len;
        pthread_mutex_unlock(&n->mu);
        if (known && known->dismissed && j < 0) {
            known->seen = 1; /* removed through the API: not registered again while it runs */
            continue;
        }
        if (known && known->registered_by_us && j < 0) {
            known->dismissed = 1;
            known->registered_by_us = 0;
            known->seen = 1;
            pfi_srv_event_add(n, "discovery", "job %s was removed through the API: not "
                              "registered again while its processes run", known->id);
            continue;
        }
        /* Its own registration, or one a restart reloaded (source discovered): it was taken for
         * the plugin's, and never retired when its processes ended. */
        if ((!known || known->registered_by_us) && j >= 0 && by_discovery &&
            strcmp(matched, rj[r].pj.id) == 0) {
            remember(n, &rj[r], 1, NULL, has_log, 0);
            srv_found *f = found_by_id(n, rj[r].pj.id);
            if (f && differ)
                follow_gpus(n, f, &rj[r]);
            else if (f)
                f->fewer_rounds = 0;
        } else if (j >= 0) {
            remember(n, &rj[r], 0, matched, has_log, differ);
        } else {
            register_job(n, &rj[r]);
            pthread_mutex_lock(&n->mu);
            int now = pfi_srv_find_job(n->jobs, n->n_jobs, rj[r].pj.id) >= 0;
            pthread_mutex_unlock(&n->mu);
            if (now)
                remember(n, &rj[r], 1, NULL, 0, 0);
        }
    }
    adopt_reloaded(n);
    retire(n);
    memcpy(n->unmapped[1], n->unmapped[0], sizeof n->unmapped[0]);
    n->n_unmapped[1] = n->n_unmapped[0];
}

const char *pfi_srv_found_log(srv_node *n, const char *id)
{
    for (int f = 0; f < n->n_found; f++)
        if (!strcmp(n->found[f].id, id) ||
            (!strcmp(n->found[f].matched, id) && !n->found[f].gpus_differ))
            return n->found[f].log;
    return "";
}
