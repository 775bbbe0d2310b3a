/* SPDX-License-Identifier: Apache-2.0 */
/* procjob.c: which job a GPU process belongs to, from what Linux says about it (serve.h).
 *
 *   Slurm       a cgroup path with job_NNN under Slurm's hierarchy (cgroup v1
 *               ".../slurm/uid_U/job_NNN/step_S", v2 ".../slurmstepd.scope/job_NNN/step_S/..."),
 *               else SLURM_JOB_ID=NNN in its environment (from_env: one user's word, so never
 *               merged with another user's processes, discover.c)
 *   Kubernetes  a cgroup path through kubepods with pod<uid> (cgroupfs "pod1234-...", systemd
 *               "kubepods-burstable-pod1234_....slice", underscores as dashes)
 *   else        its process group, with its command line
 * The process's stdout is its log when it is a regular file (a batch job's output), else its
 * stderr when that is one; when both are (different) regular files, both are named.  When
 * neither is and its stdout (else stderr) is a pipe, the file the pipe's reader writes is
 * (pfi_proc_pipe_log: "train.py 2>&1 | tee train.log", the common interactive launch). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "measure/parse.h"
#include "serve/serve.h"

/* Reads proc_root/pid/name (at most cap-1 bytes, NUL-terminated); the length, or -1. */
static long read_proc(const char *root, long pid, const char *name, char *buf, size_t cap)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%ld/%s", root, pid, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (long)n;
}

/* "pipe:[N]", a pipe's fd link: N; 0 else. */
static unsigned long long pipe_ino_of(const char *link)
{
    if (strncmp(link, "pipe:[", 6) != 0 || !isdigit((unsigned char)link[6]))
        return 0;
    char *end;
    unsigned long long ino = strtoull(link + 6, &end, 10);
    return end[0] == ']' && end[1] == '\0' ? ino : 0;
}

/* 1 when "what" occurs in [from, to). */
static int has_between(const char *from, const char *to, const char *what)
{
    size_t n = strlen(what);
    for (const char *q = from; q + n <= to; q++)
        if (!memcmp(q, what, n))
            return 1;
    return 0;
}

/* "job_" followed by digits, at the start of a path component, under Slurm's own hierarchy
 * (".../slurm/uid_U/" in v1, "slurmstepd.scope/" in v2: a name with "slurm" above it, which
 * root made) and not in a user's delegated systemd tree ("user@UID.service"), where any user
 * may make a cgroup named job_4242 and have their process taken for another user's job. */
static int slurm_from_cgroup(const char *cg, char *id, size_t cap)
{
    for (const char *p = strstr(cg, "job_"); p; p = strstr(p + 1, "job_")) {
        if (p != cg && p[-1] != '/')
            continue;
        const char *line = p;
        while (line > cg && line[-1] != '\n')
            line--;
        if (!has_between(line, p, "slurm") || has_between(line, p, "user@"))
            continue;
        const char *d = p + 4;
        size_t k = 0;
        while (isdigit((unsigned char)d[k]))
            k++;
        if (k == 0 || k > 18 || (d[k] && d[k] != '/' && d[k] != '\n'))
            continue;
        snprintf(id, cap, "slurm-%.*s", (int)k, d);
        return 1;
    }
    return 0;
}

static int k8s_from_cgroup(const char *cg, char *id, size_t cap)
{
    const char *kp = strstr(cg, "kubepods");
    if (!kp)
        return 0;
    for (const char *p = strstr(kp, "pod"); p; p = strstr(p + 3, "pod")) {
        const char *u = p + 3;
        char uid[40];
        size_t k = 0;
        while (k < 36 && (isxdigit((unsigned char)u[k]) || u[k] == '-' || u[k] == '_')) {
            uid[k] = u[k] == '_' ? '-' : u[k];
            k++;
        }
        if (k != 36 || uid[8] != '-' || uid[13] != '-' || uid[18] != '-' || uid[23] != '-')
            continue;
        uid[k] = '\0';
        snprintf(id, cap, "k8s-%s", uid);
        return 1;
    }
    return 0;
}

/* SLURM_JOB_ID=NNN among the NUL-separated variables. */
static int slurm_from_environ(const char *env, long n, char *id, size_t cap)
{
    for (long i = 0; i < n; i += (long)strlen(env + i) + 1) {
        const char *v = env + i;
        if (strncmp(v, "SLURM_JOB_ID=", 13) != 0)
            continue;
        v += 13;
        size_t k = 0;
        while (isdigit((unsigned char)v[k]))
            k++;
        if (k == 0 || k > 18 || v[k])
            return 0;
        snprintf(id, cap, "slurm-%s", v);
        return 1;
    }
    return 0;
}

/* The process group from /proc/PID/stat: "pid (comm) state ppid pgrp session ...", comm may
 * hold spaces and parentheses, so fields are counted after the last ')'. */
static long pgrp_of(const char *root, long pid)
{
    char st[1024];
    if (read_proc(root, pid, "stat", st, sizeof st) <= 0)
        return -1;
    const char *p = strrchr(st, ')');
    char state;
    long ppid, pgrp;
    if (!p || sscanf(p + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3)
        return -1;
    return pgrp;
}

/* The sequence length an argv (NUL-separated, n bytes) states: "--FLAG N" or "--FLAG=N" for
 * the flags training scripts take it by; the last one given wins, as argparse's does.  A value
 * that is not a whole number in [1, 2^24] is no sequence length (a shell variable left
 * unexpanded, "auto"). */
static double seq_len_of_argv(const char *a, long n)
{
    static const char *const flags[] = {
        "seq-length",     "seq_length",     "seq-len",        "seq_len",
        "max-seq-length", "max_seq_length", "max-seq-len",    "max_seq_len",
        "encoder-seq-length", "block_size", "block-size",     "model_max_length",
        "sequence_length", "sequence-length", "training.seq_len", NULL};
    double found = 0;
    for (long i = 0; i < n;) {
        const char *arg = a + i, *next = NULL;
        long len = (long)strnlen(arg, (size_t)(n - i));
        if (i + len + 1 < n)
            next = a + i + len + 1;
        i += len + 1;
        if (strncmp(arg, "--", 2) != 0)
            continue;
        for (int f = 0; flags[f]; f++) {
            size_t fl = strlen(flags[f]);
            const char *v = NULL;
            if (!strncmp(arg + 2, flags[f], fl) && arg[2 + fl] == '=')
                v = arg + 3 + fl;
            else if (!strcmp(arg + 2, flags[f]))
                v = next;
            char *end;
            long long x = v ? strtoll(v, &end, 10) : 0;
            if (v && end != v && *end == '\0' && x >= 1 && x <= (1LL << 24))
                found = (double)x;
        }
    }
    return found;
}

int pfi_proc_job_apart(pfi_proc_job *have, pfi_proc_job *add)
{
    /* A Slurm job runs as its one user; a pod's containers may run as several, and a process
     * group is the kernel's. */
    if (strcmp(have->kind, "slurm") != 0 || strcmp(add->kind, "slurm") != 0 || have->uid < 0 ||
        add->uid < 0 || have->uid == add->uid)
        return 0;
    pfi_proc_job *odd = add->from_env || !have->from_env ? add : have;
    size_t l = strlen(odd->id);
    snprintf(odd->id + l, sizeof odd->id - l, "-uid%ld", odd->uid);
    return 1;
}

int pfi_proc_job_of(const char *proc_root, long pid, pfi_proc_job *out, pfi_err *err)
{
    memset(out, 0, sizeof *out);
    out->pid = pid;
    if (!proc_root || !*proc_root)
        proc_root = "/proc";
    char *buf = malloc(65536);
    if (!buf)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    long n = read_proc(proc_root, pid, "cmdline", buf, 65536);
    if (n < 0) {
        free(buf);
        return pfi_err_set(err, PFI_ENOENT, "no process %ld in %s", pid, proc_root);
    }
    out->seq_len = seq_len_of_argv(buf, n);
    for (long i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    while (n > 0 && buf[n - 1] == ' ')
        buf[--n] = '\0';
    snprintf(out->cmdline, sizeof out->cmdline, "%s", buf);
    if (read_proc(proc_root, pid, "cgroup", buf, 65536) > 0) {
        if (slurm_from_cgroup(buf, out->id, sizeof out->id))
            snprintf(out->kind, sizeof out->kind, "slurm");
        else if (k8s_from_cgroup(buf, out->id, sizeof out->id))
            snprintf(out->kind, sizeof out->kind, "kubernetes");
    }
    if (!out->id[0] && (n = read_proc(proc_root, pid, "environ", buf, 65536)) > 0 &&
        slurm_from_environ(buf, n, out->id, sizeof out->id)) {
        snprintf(out->kind, sizeof out->kind, "slurm");
        out->from_env = 1;
    }
    out->uid = -1;
    if (read_proc(proc_root, pid, "status", buf, 65536) > 0) {
        const char *u = strstr(buf, "\nUid:");
        char *end;
        long v = u ? strtol(u + 5, &end, 10) : -1;
        if (u && end != u + 5 && v >= 0)
            out->uid = v;
    }
    if (!out->id[0]) {
        long pg = pgrp_of(proc_root, pid);
        snprintf(out->id, sizeof out->id, "pg-%ld", pg > 0 ? pg : pid);
        snprintf(out->kind, sizeof out->kind, "process");
    }
    /* Its stdout, when that is a regular file, is the job's log; else its stderr, when that
     * is one: "python train.py 2>train.log | tee ..." or "> /dev/null 2>train.log" (progress
     * bars and Python's logging, torchtitan's metrics among them, go to stderr).  When both
     * are regular files and not the same one ("> out.log 2> err.log"), stderr is kept aside
     * (err_log): which of the two is followed is decided by the caller (discover.c, logpick.c). */
    struct stat sb1 = {0};
    unsigned long long pipe_ino[3] = {0, 0, 0};
    for (int fd = 1; fd <= 2; fd++) {
        char link[PATH_MAX];
        snprintf(link, sizeof link, "%s/%ld/fd/%d", proc_root, pid, fd);
        ssize_t k = readlink(link, buf, PATH_MAX - 1);
        struct stat sb;
        if (k < 0 && errno != ENOENT && !out->fd_errno)
            out->fd_errno = errno;
        if (k <= 0)
            continue;
        buf[k] = '\0';
        pipe_ino[fd] = pipe_ino_of(buf);
        if (buf[0] != '/' || stat(buf, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (!out->log[0]) {
            snprintf(out->log, sizeof out->log, "%s", buf);
            sb1 = sb;
        } else if (sb.st_dev != sb1.st_dev || sb.st_ino != sb1.st_ino) {
            snprintf(out->err_log, sizeof out->err_log, "%s", buf);
        }
    }
    for (int fd = 1; fd <= 2 && !out->log[0] && !out->pipe_ino; fd++)
        if (pipe_ino[fd]) {
            out->pipe_ino = pipe_ino[fd];
            out->pipe_fd = fd;
        }
    free(buf);
    return PFI_OK;
}

/* Bounds of the look for a pipe's reader: processes listed, fds looked at in one, pipes
 * followed from the job's own. */
#define PIPE_MAX_PROCS 65536
#define PIPE_MAX_FDS 1024
#define PIPE_MAX_HOPS 2

/* fd N of pid, when it is a regular file opened for writing (its fdinfo's flags: O_WRONLY or
 * O_RDWR; a file tee or a logger only reads is no output): 1, its path in path. */
static int writes_file(const char *root, long pid, long fd, char *path, size_t cap)
{
    char p[PATH_MAX], info[512];
    snprintf(p, sizeof p, "%s/%ld/fd/%ld", root, pid, fd);
    ssize_t k = readlink(p, path, cap - 1);
    struct stat sb;
    if (k <= 0)
        return 0;
    path[k] = '\0';
    if (path[0] != '/' || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return 0;
    snprintf(p, sizeof p, "fdinfo/%ld", fd);
    if (read_proc(root, pid, p, info, sizeof info) <= 0)
        return 0;
    const char *f = strstr(info, "flags:");
    if (!f || (f != info && f[-1] != '\n'))
        return 0;
    char *end;
    unsigned long flags = strtoul(f + 6, &end, 8);
    if (end == f + 6)
        return 0;
    return (flags & O_ACCMODE) == O_WRONLY || (flags & O_ACCMODE) == O_RDWR;
}

/* The file pid writes: its lowest fd from 3 on (tee's first output file), else its stdout. */
static int written_file(const char *root, long pid, char *log, size_t cap)
{
    char p[PATH_MAX], path[PATH_MAX];
    snprintf(p, sizeof p, "%s/%ld/fd", root, pid);
    DIR *d = opendir(p);
    if (!d)
        return 0;
    long best = -1;
    struct dirent *e;
    for (int n = 0; n < PIPE_MAX_FDS && (e = readdir(d)); n++) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end || fd < 3 || (best >= 0 && fd >= best))
            continue;
        if (writes_file(root, pid, fd, path, sizeof path)) {
            best = fd;
            snprintf(log, cap, "%s", path);
        }
    }
    closedir(d);
    if (best < 0 && writes_file(root, pid, 1, path, sizeof path)) {
        best = 1;
        snprintf(log, cap, "%s", path);
    }
    return best >= 0;
}

/* The command name of pid (comm, else the one in stat). */
static void comm_of(const char *root, long pid, char *out, size_t cap)
{
    char b[1024];
    if (read_proc(root, pid, "comm", b, sizeof b) > 0) {
        b[strcspn(b, "\n")] = '\0';
    } else if (read_proc(root, pid, "stat", b, sizeof b) > 0 && strchr(b, '(') &&
               strrchr(b, ')') > strchr(b, '(')) {
        *strrchr(b, ')') = '\0';
        memmove(b, strchr(b, '(') + 1, strlen(strchr(b, '(') + 1) + 1);
    } else {
        b[0] = '\0';
    }
    snprintf(out, cap, "%s", b[0] ? b : "a process");
}

/* One pipe: the processes reading ino (fd 0) other than self; the first writing a file names
 * it, else one whose stdout is a pipe is followed, hops permitting.  whose: "its stdout" for
 * the job's own pipe, "whose stdout" further on; via grows by a clause per pipe. */
static int reader_log(const char *root, unsigned long long ino, long self, const char *whose,
                      int hops, char *log, size_t log_cap, char *via, size_t via_cap)
{
    DIR *d = opendir(root);
    if (!d)
        return 0;
    long next_pid = -1;
    unsigned long long next_ino = 0;
    int found = 0;
    struct dirent *e;
    char p[PATH_MAX], link[64];
    for (int n = 0; !found && n < PIPE_MAX_PROCS && (e = readdir(d)); n++) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end || pid <= 0 || pid == self)
            continue;
        snprintf(p, sizeof p, "%s/%ld/fd/0", root, pid);
        ssize_t k = readlink(p, link, sizeof link - 1);
        if (k <= 0)
            continue;
        link[k] = '\0';
        if (pipe_ino_of(link) != ino)
            continue;
        if (written_file(root, pid, log, log_cap)) {
            found = 1;
            next_pid = pid;
        } else if (!next_ino && hops > 1) {
            snprintf(p, sizeof p, "%s/%ld/fd/1", root, pid);
            k = readlink(p, link, sizeof link - 1);
            link[k > 0 ? k : 0] = '\0';
            if ((next_ino = pipe_ino_of(link)) != 0)
                next_pid = pid;
        }
    }
    closedir(d);
    if (next_pid < 0)
        return 0;
    char comm[64];
    comm_of(root, next_pid, comm, sizeof comm);
    size_t at = strlen(via);
    snprintf(via + at, via_cap - at, "%s%s is a pipe to %s (pid %ld)", at ? ", " : "", whose,
             comm, next_pid);
    if (found)
        return 1;
    if (reader_log(root, next_ino, next_pid, "whose stdout", hops - 1, log, log_cap, via, via_cap))
        return 1;
    via[at] = '\0';
    return 0;
}

int pfi_proc_pipe_log(const char *proc_root, const pfi_proc_job *pj, char *log, size_t log_cap,
                      char *via, size_t via_cap)
{
    if (!proc_root || !*proc_root)
        proc_root = "/proc";
    via[0] = '\0';
    if (!pj->pipe_ino)
        return 0;
    return reader_log(proc_root, pj->pipe_ino, pj->pid,
                      pj->pipe_fd == 2 ? "its stderr" : "its stdout", PIPE_MAX_HOPS, log,
                      log_cap, via, via_cap);
}

static void count_line(void *ctx, const char *line)
{
    pfi_obs o;
    pfi_parser_feed(ctx, line, &o);
}

/* The bytes of path from *from on (their last PFI_PROC_LOG_TAIL when there are more) through a
 * parser detecting the format, as follow.c reads a log: a first line that began before them
 * (the byte before them is no line end) and a last unterminated one (still being written) are
 * not read. */
int pfi_proc_log_rate_since(const char *path, long long *from)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return 0;
    struct stat sb;
    char *buf = NULL;
    pfi_parser *p = NULL;
    pfi_parse_cfg pc = {0};
    pfi_err e = {0};
    long lines = 0, matched = 0;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        goto out;
    if (*from > sb.st_size || *from < 0)
        *from = 0; /* truncated, or written anew: from its start */
    off_t off = sb.st_size - *from > PFI_PROC_LOG_TAIL ? sb.st_size - PFI_PROC_LOG_TAIL : *from;
    if (off == sb.st_size || !(buf = malloc(PFI_PROC_LOG_TAIL + 1)) ||
        pfi_parser_new(&pc, &p, &e) != PFI_OK)
        goto out;
    /* One byte before the window too: whether the window starts at a line's start. */
    off_t at = off > 0 ? off - 1 : 0;
    ssize_t k = pread(fd, buf, (size_t)(sb.st_size - at), at);
    if (k <= 0)
        goto out;
    size_t start = 0;
    if (off > 0) {
        if (buf[0] == '\n' || buf[0] == '\r') {
            start = 1;
        } else { /* the window's first line is a tail of one */
            while (start < (size_t)k && buf[start] != '\n' && buf[start] != '\r')
                start++;
            start++;
        }
    }
    size_t end = (size_t)k; /* past the last line end: an unterminated last line waits */
    while (end > start && buf[end - 1] != '\n' && buf[end - 1] != '\r')
        end--;
    if (end > start) {
        pfi_linebuf *lb = calloc(1, sizeof *lb);
        if (lb) {
            pfi_linebuf_push(lb, buf + start, end - start, count_line, p);
            free(lb);
        }
        *from = (long long)at + (long long)end;
    }
    pfi_parser_stats(p, &lines, &matched);
out:
    pfi_parser_free(p);
    free(buf);
    close(fd);
    return matched > 0;
}

int pfi_proc_log_shows_rate(const char *path)
{
    long long from = 0;
    return pfi_proc_log_rate_since(path, &from);
}
