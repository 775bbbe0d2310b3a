/* SPDX-License-Identifier: Apache-2.0 */
/* journal.c: durable original limits (see journal.h). */
#include "measure/journal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/fs.h"
#include "util/num.h"

/* The per-user folder of journals: $XDG_STATE_HOME/pfi, else ~/.local/state/pfi, the home
 * being the account's when $HOME is unset (it was /tmp: root's pfi restore, run with no HOME,
 * took a journal any user could plant there). */
static void user_dir(char *buf, size_t n)
{
    const char *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    if (!home || !*home) {
        const struct passwd *pw = getpwuid(geteuid());
        home = pw && pw->pw_dir && *pw->pw_dir ? pw->pw_dir : "/nonexistent";
    }
    if (xdg && *xdg)
        snprintf(buf, n, "%s/pfi", xdg);
    else
        snprintf(buf, n, "%s/.local/state/pfi", home);
}

const char *pfi_journal_default_path(char *buf, size_t n, int simulated)
{
    const char *env = getenv("PFI_JOURNAL");
    const char *ss = getenv("PFI_SIM_STATE");
    const char *file = simulated ? "journal-sim" : "journal";
    if (env && *env) {
        snprintf(buf, n, "%s", env);
    } else if (simulated && ss && *ss) {
        snprintf(buf, n, "%s.journal", ss); /* one per simulated node, beside its state */
    } else if (geteuid() == 0) {
        snprintf(buf, n, "/var/lib/pfi/%s", file);
    } else {
        char dir[PFI_JOURNAL_PATH_MAX];
        user_dir(dir, sizeof dir);
        snprintf(buf, n, "%s/%s", dir, file);
    }
    return buf;
}

int pfi_journal_default_paths(char paths[][PFI_JOURNAL_PATH_MAX], int max)
{
    const char *env = getenv("PFI_JOURNAL");
    const char *ss = getenv("PFI_SIM_STATE");
    char dir[PFI_JOURNAL_PATH_MAX], cand[PFI_JOURNAL_DEFAULTS][PFI_JOURNAL_PATH_MAX];
    int nc = 0;
    if (env && *env) {
        snprintf(cand[nc++], sizeof cand[0], "%s", env);
    } else {
        /* Every default a writer may have used, whoever it ran as (a `sudo pfi sweep` writes
         * under /var/lib/pfi, a plain one under the user's folder) and whatever its backend
         * (a simulated node's beside its state). */
        if (ss && *ss)
            snprintf(cand[nc++], sizeof cand[0], "%s.journal", ss);
        user_dir(dir, sizeof dir);
        snprintf(cand[nc++], sizeof cand[0], "%s/journal", dir);
        snprintf(cand[nc++], sizeof cand[0], "%s/journal-sim", dir);
        snprintf(cand[nc++], sizeof cand[0], "/var/lib/pfi/journal");
        snprintf(cand[nc++], sizeof cand[0], "/var/lib/pfi/journal-sim");
    }
    int n = 0;
    for (int i = 0; i < nc && n < max; i++) {
        int seen = 0;
        for (int k = 0; k < n && !seen; k++)
            seen = strcmp(paths[k], cand[i]) == 0;
        if (!seen)
            snprintf(paths[n++], PFI_JOURNAL_PATH_MAX, "%s", cand[i]);
    }
    return n;
}

static int mkdirs_for(const char *path, pfi_err *err)
{
    char dir[PFI_JOURNAL_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return PFI_OK;
    *slash = '\0';
    return pfi_mkdir_p(dir, err);
}

static int fsync_dir_of(const char *path)
{
    char dir[PFI_JOURNAL_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static int write_file(pfi_journal *j, pfi_err *err)
{
    char tmp[PFI_JOURNAL_PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", j->path, (long)getpid());
    unlink(tmp); /* made anew: never written through a link or a file someone left there */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return pfi_err_set(err, PFI_EIO, "cannot write journal %s: %s", tmp, strerror(errno));
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
        return pfi_err_set(err, PFI_EIO, "cannot write journal %s", tmp);
    }
    fprintf(f, "pfi-journal 1\npid %ld\nbackend %s\nsim_state %s\n", j->pid, j->backend,
            j->sim_state[0] ? j->sim_state : "-");
    if (j->run_id > 0)
        fprintf(f, "run %lld %s\n", j->run_id, j->run_db);
    for (int i = 0; i < j->n; i++)
        fprintf(f, "gpu %d uuid %s limit_w %.3f\n", j->e[i].gpu,
                j->e[i].uuid[0] ? j->e[i].uuid : "-", j->e[i].limit_w);
    int bad = fflush(f) != 0 || fsync(fd) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, j->path) != 0) {
        int e = errno;
        unlink(tmp);
        return pfi_err_set(err, PFI_EIO, "cannot write journal %s: %s", j->path, strerror(e));
    }
    if (fsync_dir_of(j->path) != 0)
        return pfi_err_set(err, PFI_EIO, "cannot sync the directory of journal %s: %s", j->path,
                           strerror(errno));
    return PFI_OK;
}

/* Holds an flock on the file at path (re-taken after each rename: it is a new inode). */
static int take_lock(pfi_journal *j, pfi_err *err)
{
    int fd = open(j->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return pfi_err_set(err, PFI_EIO, "cannot open journal %s: %s", j->path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        pfi_journal other;
        char who[320] = "another process";
        long pid = 0;
        if (pfi_journal_load(&other, j->path, 1, NULL) == PFI_OK) {
            pid = other.pid;
            pfi_journal_close(&other);
        }
        pid = pfi_lock_holder_pid(fd, pid);
        close(fd);
        if (pid > 0)
            pfi_lock_holder(pid, who, sizeof who);
        return pfi_err_set(err, PFI_EBUSY, "journal %s is held by %s", j->path, who);
    }
    if (j->lock_fd >= 0)
        close(j->lock_fd);
    j->lock_fd = fd;
    return PFI_OK;
}

static int read_entry(pfi_backend *b, int gpu, pfi_journal_entry *e, pfi_err *err)
{
    pfi_device d;
    int rc = pfi_hw_info(b, gpu, &d, err);
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "GPU %d: ", gpu);
    if (!isfinite(d.limit_w) || d.limit_w <= 0)
        return pfi_err_set(err, PFI_EIO, "GPU %d: cannot read its power limit", gpu);
    e->gpu = gpu;
    snprintf(e->uuid, sizeof e->uuid, "%s", d.uuid[0] ? d.uuid : "-");
    for (char *c = e->uuid; *c; c++)
        if (*c == ' ' || *c == '\n')
            *c = '_';
    e->limit_w = d.limit_w;
    return PFI_OK;
}

int pfi_journal_check_writable(const char *path, pfi_err *err)
{
    int rc = mkdirs_for(path, err);
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "journal %s: ", path);
    /* The name write_file uses, so the check and the write meet the same rules. */
    char tmp[PFI_JOURNAL_PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return pfi_err_set(err, PFI_EIO, "cannot write journal %s: %s", path, strerror(errno));
    close(fd);
    unlink(tmp);
    return PFI_OK;
}

int pfi_journal_check_free(const char *path, pfi_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return PFI_OK;
    pfi_journal old;
    pfi_err why = {0};
    int rc = pfi_journal_load(&old, path, 0, &why);
    if (rc == PFI_EBUSY) {
        *err = why;
        return rc;
    }
    pfi_journal_close(&old);
    if (rc == PFI_OK)
        return pfi_err_set(err, PFI_EBUSY,
                           "journal %s from an earlier run (pid %ld) holds limits that were "
                           "never restored: run `pfi restore --journal %s` first",
                           path, old.pid, path);
    /* One that cannot be read cannot be restored either: say so, and the way out, rather than
     * send the user to a restore that fails every time. */
    return pfi_err_set(err, PFI_EBUSY,
                       "journal %s is there but cannot be used (%s): check the GPUs' limits "
                       "(nvidia-smi -q -d POWER) and set them back by hand if needed, then "
                       "remove %s",
                       path, why.msg, path);
}

static int backend_simulated(pfi_backend *b)
{
    return strcmp(pfi_backend_name(b), "sim") == 0 || pfi_hw_simulated(b);
}

/* The writer, its node and each GPU's limit now, into j. */
static int read_entries(pfi_journal *j, pfi_backend *b, const int *gpus, int n, pfi_err *err)
{
    j->pid = (long)getpid();
    snprintf(j->backend, sizeof j->backend, "%s", pfi_backend_name(b));
    /* The simulated node written to, the fake NVML's too (it reads the same variable): its
     * restore must go to that node, not to whichever the environment names then. */
    const char *ss = getenv("PFI_SIM_STATE");
    if (ss && *ss && backend_simulated(b))
        snprintf(j->sim_state, sizeof j->sim_state, "%s", ss);
    for (int i = 0; i < n; i++) {
        int rc = read_entry(b, gpus[i], &j->e[j->n], err);
        if (rc != PFI_OK)
            return rc;
        j->n++;
    }
    return PFI_OK;
}

/* Whether the journal at path (another's, left behind) lists GPU e: then its limit now is
 * that journal's cap, not the original, until that journal is restored. */
static int left_lists(const char *path, const pfi_journal_entry *e)
{
    FILE *f = fopen(path, "r");
    pfi_journal *o = f ? calloc(1, sizeof *o) : NULL;
    int found = 0;
    if (o && pfi_journal_parse(o, f, path, NULL) == PFI_OK)
        for (int i = 0; i < o->n && !found; i++)
            found = strcmp(e->uuid, "-") != 0 ? !strcmp(o->e[i].uuid, e->uuid)
                                              : o->e[i].gpu == e->gpu;
    free(o);
    if (f)
        fclose(f);
    return found;
}

/* GPU e's lock, added to j's; refused while a journal another run left lists the GPU. */
static int lock_gpu(pfi_journal *j, const char *dir, const pfi_journal_entry *e, pfi_err *err)
{
    pfi_gpu_left left;
    int rc = pfi_gpu_lock(&j->gpu_locks, dir, e->gpu, e->uuid, j->path, &left, err);
    if (rc != PFI_OK)
        return rc;
    if (!left.journal[0] || !left_lists(left.journal, e)) {
        if (j->path[0]) /* a writer, not pfi_journal_check_gpus_free's look */
            pfi_gpu_lock_claim(&j->gpu_locks, j->path);
        return PFI_OK;
    }
    close(j->gpu_locks.fd[--j->gpu_locks.n]);
    return pfi_err_set(err, PFI_EBUSY, "GPU %d's limit was changed by an earlier run (pid %ld) "
                       "whose journal %s is still there: its limit now is not the original; run "
                       "`pfi restore --journal %s` first",
                       e->gpu, left.pid, left.journal, left.journal);
}

/* Every journaled GPU's lock, or none (released) with why. */
static int lock_gpus(pfi_journal *j, int simulated, pfi_err *err)
{
    char dir[PFI_JOURNAL_PATH_MAX + 16];
    if (!pfi_gpu_lock_dir(j->sim_state, simulated, dir, sizeof dir))
        return PFI_OK;
    for (int i = 0; i < j->n; i++) {
        int rc = lock_gpu(j, dir, &j->e[i], err);
        if (rc != PFI_OK) {
            pfi_gpu_locks_release(&j->gpu_locks);
            return rc;
        }
    }
    return PFI_OK;
}

int pfi_journal_check_gpus_free(pfi_backend *b, const int *gpus, int n, pfi_err *err)
{
    pfi_journal j;
    memset(&j, 0, sizeof j);
    j.lock_fd = -1;
    int rc = read_entries(&j, b, gpus, n, err);
    if (rc == PFI_OK)
        rc = lock_gpus(&j, backend_simulated(b), err);
    pfi_gpu_locks_release(&j.gpu_locks);
    return rc;
}

#define JOURNAL_LOCK_WAIT_S 10 /* PATH.lock: a begin takes milliseconds */

/* pfi_journal_begin under the lock of PATH.lock: the check that no journal is there, its
 * writing and its lock. */
static int begin_locked(pfi_journal *j, const char *path, pfi_backend *b, const int *gpus, int n,
                        pfi_err *err)
{
    int rc = pfi_journal_check_free(path, err);
    if (rc != PFI_OK)
        return rc;
    if ((rc = read_entries(j, b, gpus, n, err)) != PFI_OK)
        return rc;
    if ((rc = lock_gpus(j, backend_simulated(b), err)) != PFI_OK)
        return rc;
    rc = write_file(j, err);
    if (rc == PFI_OK)
        rc = take_lock(j, err);
    if (rc != PFI_OK)
        pfi_gpu_locks_release(&j->gpu_locks);
    return rc;
}

int pfi_journal_begin(pfi_journal *j, const char *path, pfi_backend *b, const int *gpus, int n,
                      pfi_err *err)
{
    memset(j, 0, sizeof *j);
    j->lock_fd = -1;
    snprintf(j->path, sizeof j->path, "%s", path);
    int rc = mkdirs_for(path, err);
    if (rc != PFI_OK)
        return rc;
    /* Two starts on one journal path (two sweeps, a sweep and pfi serve) each found no journal,
     * wrote theirs and locked it: both ran, and the first to end deleted the journal of the
     * other, whose crash then left its GPUs capped with nothing to restore.  The check, the
     * write and the lock are one step under PATH.lock (left in place, empty: removing it would
     * let a third start lock a file no one else sees). */
    char lk[PFI_JOURNAL_PATH_MAX + 8];
    snprintf(lk, sizeof lk, "%s.lock", path);
    int lfd = open(lk, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lfd < 0)
        return pfi_err_set(err, PFI_EIO, "cannot open %s: %s", lk, strerror(errno));
    /* Bounded: a start stopped (SIGSTOP, a debugger) while it holds the lock would hang every
     * other start on this node for good; a begin takes milliseconds. */
    double give_up = pfi_clock_mono() + JOURNAL_LOCK_WAIT_S;
    while (flock(lfd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if ((e != EWOULDBLOCK && e != EINTR) || pfi_clock_mono() > give_up) {
            if (e == EWOULDBLOCK) {
                char who[320] = "another start";
                long pid = pfi_lock_holder_pid(lfd, pfi_lock_file_pid(lfd));
                if (pid > 0)
                    pfi_lock_holder(pid, who, sizeof who);
                close(lfd);
                return pfi_err_set(err, PFI_EBUSY, "%s is held by %s for over %d s (a stopped "
                                   "process?)", lk, who, JOURNAL_LOCK_WAIT_S);
            }
            close(lfd);
            return pfi_err_set(err, PFI_EIO, "cannot lock %s: %s", lk, strerror(e));
        }
        usleep(10000);
    }
    /* Who holds it, for the message of a start that waits in vain (best effort). */
    char me[32];
    int len = snprintf(me, sizeof me, "%ld\n", (long)getpid());
    if (ftruncate(lfd, 0) == 0 && pwrite(lfd, me, (size_t)len, 0) != len) {
        /* best effort: the message then names no pid; the lock itself holds */
    }
    rc = begin_locked(j, path, b, gpus, n, err);
    close(lfd); /* the journal's own lock is held from here */
    return rc;
}

int pfi_journal_add(pfi_journal *j, pfi_backend *b, int gpu, pfi_err *err)
{
    for (int i = 0; i < j->n; i++)
        if (j->e[i].gpu == gpu)
            return PFI_OK;
    if (j->n >= PFI_MAX_GPUS)
        return pfi_err_set(err, PFI_ENOTSUP, "journal full (%d GPUs)", PFI_MAX_GPUS);
    int rc = read_entry(b, gpu, &j->e[j->n], err);
    if (rc != PFI_OK)
        return rc;
    char dir[PFI_JOURNAL_PATH_MAX + 16];
    if (pfi_gpu_lock_dir(j->sim_state, backend_simulated(b), dir, sizeof dir) &&
        (rc = lock_gpu(j, dir, &j->e[j->n], err)) != PFI_OK)
        return rc;
    j->n++;
    rc = write_file(j, err);
    if (rc != PFI_OK) {
        j->n--;
        return rc; /* the GPU's lock stays with the others until close: it was not changed */
    }
    return take_lock(j, err);
}

int pfi_journal_set_run(pfi_journal *j, const char *db, long long run_id, pfi_err *err)
{
    if (strlen(db) >= sizeof j->run_db || strchr(db, '\n'))
        return pfi_err_set(err, PFI_EINVAL, "store path '%s' cannot go in a journal", db);
    long long old_id = j->run_id;
    char old_db[PFI_JOURNAL_PATH_MAX];
    snprintf(old_db, sizeof old_db, "%s", j->run_db);
    j->run_id = run_id;
    snprintf(j->run_db, sizeof j->run_db, "%s", db);
    int rc = write_file(j, err);
    if (rc != PFI_OK) {
        j->run_id = old_id;
        snprintf(j->run_db, sizeof j->run_db, "%s", old_db);
        return rc;
    }
    return take_lock(j, err);
}

/* "WORD N" with N a whole decimal integer in [lo, hi] (the rest of the line ignored). */
static int field_ll(const char *line, long long lo, long long hi, long long *out)
{
    const char *p = line;
    while (*p && !isspace((unsigned char)*p))
        p++;
    while (*p == ' ' || *p == '\t')
        p++;
    char num[32];
    size_t k = 0;
    while (p[k] && !isspace((unsigned char)p[k]) && k < sizeof num - 1) {
        num[k] = p[k];
        k++;
    }
    num[k] = '\0';
    if (p[k] && !isspace((unsigned char)p[k]))
        return -1;
    return pfi_num_ll(num, lo, hi, "journal", out, NULL) == PFI_OK ? 0 : -1;
}

#define JOURNAL_MAX_LIMIT_W 1e5 /* one GPU's limit: above any GPU made */

/* "gpu IDX uuid UUID limit_w W" */
static int parse_gpu(const char *line, pfi_journal_entry *e)
{
    char idx[32], w[64], tail[2];
    long long g;
    if (sscanf(line, "gpu %31s uuid %95s limit_w %63s %1s", idx, e->uuid, w, tail) != 3 ||
        pfi_num_ll(idx, 0, INT_MAX, "gpu", &g, NULL) != PFI_OK)
        return -1;
    char *end;
    errno = 0;
    e->gpu = (int)g;
    /* Written as "%.3f": a hex form ("0x2BC") or a limit beyond any GPU (1e308, once printed
     * back as a 309-digit number) is damage, not a limit to try. */
    if (!isdigit((unsigned char)w[0]) || strpbrk(w, "xX"))
        return -1;
    e->limit_w = strtod(w, &end);
    return *end || errno || !(e->limit_w > 0 && e->limit_w <= JOURNAL_MAX_LIMIT_W) ? -1 : 0;
}

static int damaged(const char *name, int lineno, const char *line, pfi_err *err)
{
    size_t n = strcspn(line, "\n"); /* the line, not its newline: messages are one line */
    return pfi_err_set(err, PFI_EINVAL, "journal %s line %d is damaged: %.*s", name, lineno,
                       (int)(n < 200 ? n : 200), line);
}

int pfi_journal_parse(pfi_journal *j, FILE *f, const char *name, pfi_err *err)
{
    char line[PFI_JOURNAL_PATH_MAX + 64];
    int lineno = 0;
    long long version = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        /* Every line written ends in a newline: one without it was cut short (a limit of
         * "700.000" cut to "70" would read as 70 W) or is longer than any line written. */
        size_t len = strlen(line);
        if (len == 0 || line[len - 1] != '\n')
            return pfi_err_set(err, PFI_EINVAL,
                               "journal %s line %d is damaged: cut short or too long: %.200s",
                               name, lineno, line);
        char word[32], arg[PFI_JOURNAL_PATH_MAX];
        if (sscanf(line, "%31s", word) != 1)
            continue;
        if (lineno == 1) {
            if (strcmp(word, "pfi-journal") != 0 || field_ll(line, 0, 1000, &version) != 0)
                break;
            continue;
        }
        long long v;
        if (strcmp(word, "pid") == 0) {
            if (field_ll(line, 0, LONG_MAX, &v) != 0)
                return damaged(name, lineno, line, err);
            j->pid = (long)v;
        } else if (strcmp(word, "backend") == 0 && sscanf(line, "%*s %15s", j->backend) == 1) {
        } else if (strcmp(word, "sim_state") == 0 &&
                   sscanf(line, "sim_state %1023[^\n]", arg) == 1) {
            /* The rest of the line, as written: a path with a space ("/tmp/pfi sim/state")
             * was read as its first word, and pfi restore set that other node's limits. */
            if (strcmp(arg, "-") != 0)
                snprintf(j->sim_state, sizeof j->sim_state, "%s", arg);
        } else if (strcmp(word, "run") == 0) {
            /* The store path is the rest of the line: it may hold spaces. */
            char id[32];
            if (sscanf(line, "run %31s %1023[^\n]", id, j->run_db) != 2 ||
                pfi_num_ll(id, 1, LLONG_MAX, "run", &j->run_id, NULL) != PFI_OK)
                return damaged(name, lineno, line, err);
        } else if (strcmp(word, "gpu") == 0) {
            /* A GPU line the restore would skip or try twice (one past the most a journal
             * holds, a GPU given twice) is damage: restoring the rest and deleting the file
             * would leave that GPU at whatever limit it had. */
            if (j->n >= PFI_MAX_GPUS)
                return damaged(name, lineno, line, err);
            pfi_journal_entry *e = &j->e[j->n];
            if (parse_gpu(line, e) != 0)
                return damaged(name, lineno, line, err);
            if (strcmp(e->uuid, "-") == 0)
                e->uuid[0] = '\0';
            for (int i = 0; i < j->n; i++)
                if (j->e[i].gpu == e->gpu || (e->uuid[0] && strcmp(j->e[i].uuid, e->uuid) == 0))
                    return damaged(name, lineno, line, err);
            j->n++;
        } else {
            /* Every line written is one of the above: any other (a "gpu" line with a flipped
             * byte, a "backend" cut to its word) is damage, never a line to skip. */
            return damaged(name, lineno, line, err);
        }
    }
    if (version != 1)
        return pfi_err_set(err, PFI_EINVAL, "%s is not a pfi journal (version 1)", name);
    return PFI_OK;
}

/* The text of the journal at path into *j (zeroed first), no lock looked at. */
static int read_text(pfi_journal *j, const char *path, pfi_err *err)
{
    memset(j, 0, sizeof *j);
    j->lock_fd = -1;
    snprintf(j->path, sizeof j->path, "%s", path);
    if (pfi_input_not_dir(path, err) != PFI_OK)
        return pfi_err_prefix(err, "journal: ");
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            return pfi_err_set(err, PFI_ENOENT, "no journal at %s: nothing to restore", path);
        return pfi_err_set(err, PFI_EIO, "cannot read journal %s: %s", path, strerror(errno));
    }
    /* Its lines set any GPU's limit and name a store to open: only what this user (or root)
     * wrote, and no one else could write, is taken. */
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && ((st.st_uid != geteuid() && st.st_uid != 0) ||
                                       (st.st_mode & 022))) {
        fclose(f);
        return pfi_err_set(err, PFI_EPERM, "journal %s is %s: not trusted (its lines set GPU "
                           "power limits); if it is yours to restore, chown and chmod 600 it",
                           path, st.st_mode & 022 ? "writable by others" : "another user's");
    }
    int rc = pfi_journal_parse(j, f, path, err);
    fclose(f);
    return rc;
}

int pfi_journal_load(pfi_journal *j, const char *path, int force, pfi_err *err)
{
    int rc = read_text(j, path, err);
    if (rc != PFI_OK)
        return rc;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        j->held = flock(fd, LOCK_EX | LOCK_NB) == 0;
        if (!j->held && !force) {
            long pid = pfi_lock_holder_pid(fd, j->pid);
            close(fd);
            char who[320];
            pfi_lock_holder(pid, who, sizeof who);
            if (pid != j->pid) /* a restore of it, not its writer */
                return pfi_err_set(err, PFI_EBUSY, "journal %s is held by %s (its writer was "
                                   "pid %ld): wait for it to end", path, who, j->pid);
            return pfi_err_set(err, PFI_EBUSY,
                               "journal %s belongs to a running process (%s), which restores "
                               "the limits itself when it ends",
                               path, who);
        }
        j->writer_runs = !j->held;
        j->lock_fd = fd;
    }
    return PFI_OK;
}

int pfi_journal_peek(pfi_journal *j, const char *path, pfi_err *err)
{
    int rc = read_text(j, path, err);
    int fd = rc == PFI_OK ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        int held = pfi_lock_is_held(fd);
        /* no /proc/locks: a shared lock tried, and let go at once, tells instead */
        if (held < 0)
            held = flock(fd, LOCK_SH | LOCK_NB) != 0;
        j->writer_runs = held;
        close(fd);
    }
    return rc;
}

int pfi_journal_adopt(pfi_journal *j, const char *path, pfi_err *err)
{
    int rc = pfi_journal_load(j, path, 0, err);
    if (rc != PFI_OK)
        return rc;
    if ((rc = lock_gpus(j, strcmp(j->backend, "sim") == 0, err)) != PFI_OK) {
        pfi_journal_close(j);
        return rc;
    }
    /* The old file's lock is kept until the new one (a new inode) is locked. */
    int old_fd = j->lock_fd;
    j->lock_fd = -1;
    j->pid = (long)getpid();
    rc = write_file(j, err);
    if (rc == PFI_OK)
        rc = take_lock(j, err);
    if (old_fd >= 0)
        close(old_fd);
    return rc;
}

/* The device index of the GPU with this UUID now (a reboot may renumber).  A GPU that cannot
 * be read (lost: off the bus) is not a GPU gone from the node: its error is said, not "not on
 * this node". */
static int find_gpu(pfi_backend *b, const pfi_journal_entry *e, pfi_err *err)
{
    pfi_device d;
    if (!e->uuid[0])
        return e->gpu;
    pfi_err first = {0};
    int blank = -1; /* a GPU whose UUID the driver did not give: it may be this one */
    if (pfi_hw_info(b, e->gpu, &d, &first) == PFI_OK) {
        if (strcmp(d.uuid, e->uuid) == 0)
            return e->gpu;
        if (!d.uuid[0])
            blank = e->gpu;
    } else {
        pfi_err_prefix(&first, "GPU %d: ", e->gpu);
    }
    int n = 0;
    if (pfi_hw_count(b, &n, err) != PFI_OK)
        return -1;
    for (int i = 0; i < n; i++) {
        pfi_err ei = {0};
        if (pfi_hw_info(b, i, &d, &ei) == PFI_OK) {
            if (strcmp(d.uuid, e->uuid) == 0)
                return i;
            if (!d.uuid[0] && blank < 0)
                blank = i;
        } else if (first.code == PFI_OK) {
            first = ei;
            pfi_err_prefix(&first, "GPU %d: ", i);
        }
    }
    if (first.code != PFI_OK)
        pfi_err_set(err, first.code,
                    "GPU %s (index %d when journaled) could not be looked up: %s", e->uuid,
                    e->gpu, first.msg);
    else if (blank >= 0) /* "not on this node" and its advice to remove the journal left it capped */
        pfi_err_set(err, PFI_EIO,
                    "GPU %s (index %d when journaled) could not be looked up: GPU %d's UUID "
                    "could not be read, and it may be that GPU; keep the journal and run pfi "
                    "restore again, or check GPU %d's limit by hand (nvidia-smi -i %d -q -d POWER)",
                    e->uuid, e->gpu, blank, blank, blank);
    else
        pfi_err_set(err, PFI_ENOENT, "GPU %s (index %d when journaled) is not on this node "
                    "(the journal of another machine, or a GPU replaced: once the others are "
                    "restored, remove the journal)",
                    e->uuid, e->gpu);
    return -1;
}

/* Puts one journaled limit back.  An error the driver calls transient (NVML UNKNOWN,
 * TIMEOUT, IN_USE, NOT_READY...) is tried twice more, 0.1 s then 0.3 s later: given up at
 * once, it left the GPU at the swept cap until someone ran pfi restore.  The waits are for the
 * driver, which does not run faster on a scaled clock (util/clock.h), so they are real seconds:
 * times pfi_clock_scale() on pfi's clock. */
static int restore_one(pfi_backend *b, int idx, double limit_w, pfi_err *e1)
{
    static const double wait_s[] = {0.1, 0.3};
    /* A GPU already at its journaled limit is restored without a set.  Set again, a GPU that
     * was never changed (the sweep stopped at its first lowering: not root, a driver error)
     * failed the same way: the journal could never be restored, and every later sweep was
     * refused until it was deleted by hand.  Compared in whole milliwatts, as NVML reports a
     * limit and the journal holds it. */
    pfi_device d;
    if (pfi_hw_info(b, idx, &d, NULL) == PFI_OK && isfinite(d.limit_w) &&
        llround(d.limit_w * 1000.0) == llround(limit_w * 1000.0))
        return PFI_OK;
    int rc = pfi_hw_set_limit(b, idx, limit_w, NULL, e1);
    for (size_t k = 0; k < sizeof wait_s / sizeof wait_s[0] &&
                       (rc == PFI_EIO || rc == PFI_ETIMEOUT || rc == PFI_EBUSY);
         k++) {
        pfi_clock_sleep(wait_s[k] * pfi_clock_scale());
        rc = pfi_hw_set_limit(b, idx, limit_w, NULL, e1);
    }
    return rc;
}

int pfi_journal_restore(pfi_journal *j, pfi_backend *b, int *restored, pfi_err *err)
{
    int first = PFI_OK, done = 0;
    for (int i = 0; i < j->n; i++) {
        pfi_err e1 = {0};
        int idx = find_gpu(b, &j->e[i], &e1);
        j->e[i].gpu_now = idx;
        int rc = idx < 0 ? e1.code : restore_one(b, idx, j->e[i].limit_w, &e1);
        j->e[i].restore_rc = rc;
        snprintf(j->e[i].why, sizeof j->e[i].why, "%s", rc == PFI_OK ? "" : e1.msg);
        if (rc == PFI_OK) {
            done++;
        } else if (first == PFI_OK) {
            first = rc;
            pfi_err_set(err, rc, "GPU %d: cannot restore %.7g W: %s", idx >= 0 ? idx : j->e[i].gpu,
                        j->e[i].limit_w, e1.msg);
        }
    }
    if (restored)
        *restored = done;
    if (first != PFI_OK)
        return first;
    /* Forced while its writer runs: the writer still owns the journal and changes limits
     * after this; removed, a crash of the writer left the GPUs capped with nothing to restore. */
    if (j->writer_runs)
        return PFI_OK;
    if (unlink(j->path) != 0 && errno != ENOENT)
        return pfi_err_set(err, PFI_EIO, "limits restored, but journal %s could not be removed: %s",
                           j->path, strerror(errno));
    fsync_dir_of(j->path);
    return PFI_OK;
}

void pfi_journal_close(pfi_journal *j)
{
    if (j->lock_fd >= 0)
        close(j->lock_fd);
    j->lock_fd = -1;
    pfi_gpu_locks_release(&j->gpu_locks);
}
