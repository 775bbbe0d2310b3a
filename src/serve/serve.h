/* SPDX-License-Identifier: Apache-2.0 */
/* serve.h: the node daemon (`pfi serve`).  Read this first if you touch src/serve/.
 *
 * One process per GPU node.  It owns the node's GPUs through a backend (hw/hw.h), keeps a list
 * of jobs (registered over the API, each with GPUs, an SLA, a weight and optionally a curve or a
 * PFI), and under a node power budget gives every job a per-GPU cap chosen by the allocator
 * (core/alloc.h) on the jobs' curves (core/curve.h).  Safety rules, each tested:
 *   - the sum of the GPUs' power limits never exceeds the budget, not even while caps change:
 *     every lowering is applied and read back before any raise (pfi_hw_apply, hw/apply.c);
 *   - the limits found at start are journaled (measure/journal.h) before the first change and
 *     restored on SIGTERM/SIGINT, and at the next start after a crash or SIGKILL;
 *   - a watchdog reverts to a configured safe budget when a cluster controller stops sending
 *     heartbeats;
 *   - a GPU that fails mid-change does not stop the others; enforced != requested is reported.
 *
 * Pieces (one concern per file):
 *   config.c   the config file (key = value) and its defaults
 *   auth.c     bearer token file (root-only) and constant-time check
 *   node.c     the controller state: GPUs, jobs, budget, allocation; all mutations
 *   plan.c     the allocation of the budget to jobs (core/alloc.h)
 *   curves.c   jobs' curves: registered (JSON), PFI30, predicted from telemetry (core/predict.h)
 *   probe.c    bounded probes a job's owner allowed, refining its curve (core/probe.h)
 *   view.c     the state as JSON for the API
 *   audit.c    SQLite: decisions, per-job predicted/observed tokens/s, events, saved jobs
 *   api.c      the HTTP routes (JSON in, JSON out)
 *   http.c     libmicrohttpd transport: TCP loopback or Unix socket, size limits, auth
 *   metrics.c  GET /metrics in Prometheus text format
 *   daemon.c   pfi_serve_run: start-up, journal, control loop, watchdog, shutdown
 *   grid.c     grid events on the node's budget (grid_api.c: their routes)
 *   ven.c      the OpenADR 3.0 client, shared with `pfi cluster serve` (ven.h; grid_ven.c
 *              gives it this node's events; ven_map.c reads an event's intervals) */
#ifndef PFI_SERVE_SERVE_H
#define PFI_SERVE_SERVE_H

#include <signal.h>
#include <stddef.h>

#include "core/err.h"
#include "hw/hw.h"
#include "serve/ven.h"
#include "util/token.h"

#define PFI_SERVE_PATH_MAX 512
#define PFI_SERVE_DEFAULT_PORT 9455

enum { PFI_SERVE_ON_STOP_AUTO = 0, PFI_SERVE_ON_STOP_RESTORE, PFI_SERVE_ON_STOP_HOLD };

typedef struct pfi_serve_config {
    /* Where to listen: "127.0.0.1:9455", "[::1]:9455", "unix:/run/pfi/serve.sock".  Port 0 picks
     * an ephemeral port (written to port_file when set). */
    char listen[PFI_SERVE_PATH_MAX];
    int allow_remote;            /* listen on a non-loopback address (off by default) */
    char port_file[PFI_SERVE_PATH_MAX];
    char token_file[PFI_SERVE_PATH_MAX]; /* bearer token for every mutating request */
    char db[PFI_SERVE_PATH_MAX];         /* SQLite state and audit log */
    char journal[PFI_SERVE_PATH_MAX];    /* original limits (measure/journal) */
    char backend[32];            /* sim | nvml */
    char backend_arg[PFI_SERVE_PATH_MAX]; /* sim preset/config, or the NVML library */
    int read_only;               /* observe only: never change a limit */
    double sample_interval_s;    /* telemetry period of the control loop */
    double reoptimize_interval_s;/* how often curves are re-estimated and caps re-planned */
    double min_change_interval_s;/* rate limit on re-planned (not requested) cap changes */
    double hysteresis_w;         /* a re-plan moving no cap by more than this is not applied */
    char budget[32];             /* initial budget: "" none, "5600W", "80%" */
    double default_sla;          /* max slowdown for jobs that give none; NAN: no SLA */
    double watchdog_timeout_s;   /* 0: off.  Armed by the first heartbeat */
    char safe_budget[32];        /* what the watchdog applies: "70%", "4000W", "min" */
    size_t max_body;             /* request body limit, bytes */
    int threads;                 /* HTTP worker threads */
    /* A second listener that serves the same API to the cluster controller alone (a Unix
     * socket only it may open, or an address only it reaches): clients of `listen` cannot use
     * up its connections.  "" none. */
    char control_listen[PFI_SERVE_PATH_MAX];
    int max_conns;               /* connections `listen` holds at once */
    int max_client_conns;        /* connections one client address may hold on `listen` */
    double client_timeout_s;     /* a connection on `listen` idle this long is closed */
    int read_auth;               /* 1: every GET but /healthz needs the token too */
    int resume;                  /* re-apply the last budget saved in the DB at start */
    /* At SIGTERM/SIGINT/SIGHUP with a budget or caps in force: restore the original limits, or
     * hold the limits as they are (the journal stays: `pfi restore` puts the originals back).
     * AUTO holds when a cluster controller is in command (caps, its watchdog armed or fired)
     * and restores otherwise. */
    int on_stop;                 /* PFI_SERVE_ON_STOP_* */
    char model[PFI_SERVE_PATH_MAX]; /* predictor (`pfi model train --out`); "" none */
    /* Measured curves of other jobs a probe is read through (core/probe.h's shape estimate):
     * a store, or "public" for $PFI_DATA_DIR's sweeps; "" none (a probe then fits a power
     * law through the baseline and the probe) */
    char probe_library[PFI_SERVE_PATH_MAX];
    /* Job discovery: every sample interval the GPUs' compute processes are listed through the
     * backend and mapped to jobs (pfi_proc_job_of); new ones are registered, ended ones
     * retired.  discover = 0 turns it off; proc_root is where /proc is read (tests). */
    int discover;
    char proc_root[PFI_SERVE_PATH_MAX];
    /* A discovered Slurm job with no log of its own (registered, or a stdout that is a regular
     * file) takes the output file Slurm states for it (slurmlog.c).  0: never ask Slurm. */
    int slurm_log;
    double log_switch_after_s; /* a job's other output file is followed once its own has shown
                                * no throughput this long and the other does (discover.c) */
    /* The OpenADR 3.0 client (serve/ven.h), the openadr_* settings; off while vtn_url is "". */
    pfi_ven_config openadr;
} pfi_serve_config;

void pfi_serve_config_defaults(pfi_serve_config *c);
/* Reads "key = value" lines ('#' comments).  Unknown keys and bad values are errors naming the
 * file and line. */
int pfi_serve_config_load(pfi_serve_config *c, const char *path, pfi_err *err);
/* One setting by name (the keys of docs/serve.md), as the file and the CLI flags use. */
int pfi_serve_config_set(pfi_serve_config *c, const char *key, const char *value, pfi_err *err);
/* Every setting pfi_serve_config_set accepts, in the order a reader meets them: the one list the
 * manual page pfi-serve.conf(5) is written from (pfi help --man serve.conf).  A key missing here
 * is refused by pfi_serve_config_set. */
typedef struct pfi_serve_key {
    const char *name;    /* "sample_interval" */
    const char *value;   /* what it takes: "DURATION", "yes|no", ... */
    const char *dflt;    /* the default, for a person */
    const char *example; /* a valid value (tests set every key to it) */
    const char *help;    /* one sentence or two */
} pfi_serve_key;
const pfi_serve_key *pfi_serve_config_keys(int *n);
/* Checks cross-field rules (e.g. non-loopback listen without allow_remote). */
int pfi_serve_config_check(const pfi_serve_config *c, pfi_err *err);

/* The job a process belongs to (procjob.c). */
typedef struct pfi_proc_job {
    long pid;
    char id[64];     /* "slurm-123", "k8s-<pod uid>", or "pg-<process group>" */
    char kind[16];   /* "slurm", "kubernetes", "process" */
    char cmdline[256];
    /* Tokens per sample its command line states (--seq-length N as Megatron and NeMo take it,
     * --max_seq_length, --block_size as Hugging Face's examples and nanoGPT, ...; the whole
     * argv, not the 256 bytes above); 0 when none: a log in samples/s is then not tokens/s. */
    double seq_len;
    char log[PFI_SERVE_PATH_MAX]; /* its stdout when that is a regular file, else its stderr
                                   * when that is one; "" else */
    char err_log[PFI_SERVE_PATH_MAX]; /* its stderr when stdout and stderr are two different
                                       * regular files (log is then stdout); "" else */
    /* No log and its stdout (else its stderr) a pipe ("train.py 2>&1 | tee train.log"): that
     * pipe's inode and the fd (1 or 2); 0 and 0 else.  pfi_proc_pipe_log follows it. */
    unsigned long long pipe_ino;
    int pipe_fd;
    /* Why its stdout or stderr could not be looked at (EACCES: another user's process, and the
     * daemon without CAP_SYS_PTRACE); 0 when both were. */
    int fd_errno;
    long uid;     /* its real user (/proc/PID/status); -1 unknown */
    int from_env; /* 1: id from its environment's SLURM_JOB_ID, which its user sets at will */
} pfi_proc_job;
/* Two processes of one Slurm job id (have: listed first) run as two users: the one whose id is its
 * own word (from_env; else the later one) gets "-uid<U>" after its id, and 1 is returned: they
 * are not one job (merged, one user's GPUs, log and tokens/s became another's).  0: one job. */
int pfi_proc_job_apart(pfi_proc_job *have, pfi_proc_job *add);
/* Reads proc_root/PID/{cgroup,environ,stat,cmdline,fd/1,fd/2} (proc_root NULL or "": /proc).
 * PFI_ENOENT when the process is gone. */
int pfi_proc_job_of(const char *proc_root, long pid, pfi_proc_job *out, pfi_err *err);
/* A job whose stdout (else stderr) is a pipe (pj->pipe_ino): the file a process reading that
 * pipe (its fd 0) has open for writing, as tee's output files: its first one (lowest fd from 3
 * on, else its stdout); a reader writing none whose own stdout is a pipe is followed one pipe
 * further ("| tee a.log | grep", "| grep step | tee a.log"), no more.  Scans proc_root's
 * processes once per pipe followed: for discovery to do once per job.  1 found: log set, via
 * the way to it ("its stdout is a pipe to tee (pid 812)"); 0 not. */
int pfi_proc_pipe_log(const char *proc_root, const pfi_proc_job *pj, char *log, size_t log_cap,
                      char *via, size_t via_cap);
/* 1 when a line of the last PFI_PROC_LOG_TAIL bytes of the regular file path reports
 * throughput in a format the log parsers detect (measure/parse.h); 0 else (unreadable too).
 * Which of a job's stdout and stderr files is its log (discover.c). */
#define PFI_PROC_LOG_TAIL (64 * 1024)
int pfi_proc_log_shows_rate(const char *path);
/* The same for what path holds from byte *from on (its last PFI_PROC_LOG_TAIL bytes when there
 * is more; a first line begun before *from is not read): what was appended since a previous
 * look, *from then moved past the last whole line read (a line still being written is read at
 * the next look).  A file now shorter than *from (truncated, written anew) is read from its
 * start. */
int pfi_proc_log_rate_since(const char *path, long long *from);

/* A Slurm job's output file (slurmlog.c), from `scontrol show job [-o] ID` (StdOut=, its
 * patterns expanded by Slurm): 1 found, 0 not.  From `squeue --json` (job job_id's
 * "standard_output" expanded as Slurm does: default slurm-%j.out or slurm-%A_%a.out in the
 * working directory; %j %x %u %A %a %% and zero padding): PFI_OK, PFI_ENOENT without that
 * job, PFI_ENOTSUP for a pattern it does not read (%N %n %t %s). */
int pfi_slurm_stdout_scontrol(const char *text, char *out, size_t cap);
int pfi_slurm_stdout_squeue(const char *json, const char *job_id, char *out, size_t cap,
                            pfi_err *err);

struct pfi_model;
/* Runs the daemon on an opened backend until *stop becomes non-zero (set it from a signal
 * handler), then restores the original limits.  model (may be NULL): the runtime predictor
 * (core/predict.h) that gives jobs registered without a curve one from their baseline
 * telemetry.  Returns PFI_OK after a clean shutdown. */
int pfi_serve_run(const pfi_serve_config *c, pfi_backend *b, const struct pfi_model *model,
                  volatile sig_atomic_t *stop, pfi_err *err);

#endif
