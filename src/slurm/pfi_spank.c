/* SPDX-License-Identifier: Apache-2.0 */
/* pfi_spank.c: the SPANK plugin that tells each node's `pfi serve` which GPUs a Slurm job holds.
 *
 * Users add `--power-sla=<max slowdown>`, `--power-weight=<w>` and `--power-log=<path>` to
 * sbatch/salloc, or to an srun that creates the job (a step's are ignored, with a warning).
 * On every node of the job, slurmd's job prolog registers the job (POST
 * /v1/jobs: id, GPUs, SLA, weight, log) with the local node daemon, and the job epilog
 * deregisters it (DELETE /v1/jobs/{id}), so the daemon restores those GPUs.  The log is the
 * file the job writes its training log to, which the daemon follows for its throughput; %j in
 * it stands for the job id, %% for a %, and no other pattern is taken.
 *
 * Why the job prolog/epilog hooks (S_CTX_JOB_SCRIPT) and not user_init or task_init_privileged:
 *   - they run once per job per node, not once per step or per task, so a batch script with
 *     many srun steps registers once and a step ending does not release the job's GPUs;
 *   - they run as root in slurmd, so the daemon's token file can stay readable by root only;
 *   - with PrologFlags=Alloc they run when the job is allocated, before the user's code starts.
 * The GPUs come from the prolog's environment (SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES): the
 * job's GRES on this node, as slurmd computed it.
 *
 * plugstack.conf arguments (all optional):
 *   url=URL        node daemon, "unix:/run/pfi/serve.sock" (default: the packaged daemon's
 *                  listen) or "http://127.0.0.1:9455";
 *                  "%n" is replaced by the node name (several slurmd on one host in tests)
 *   token=PATH     file holding the bearer token ("%n" as above); none: no Authorization header
 *   default_sla=S  SLA given to jobs that ask for none (default: none, the daemon's own default)
 *   required=0|1   1: ask Slurm to fail the prolog (it drains the node and requeues the job;
 *                  Slurm does so only when the plugstack line starts with `required`) when the
 *                  daemon cannot be told (no answer, 5xx, token refused); 0 (default): log why
 *                  and let the job run.  A 4xx answer to the job's own request (a bad option, a
 *                  GPU still held) never fails the prolog: the job runs unmanaged and the log
 *                  says why
 *   timeout=SEC    per request (default 3), and for all the spooled retries of one prolog or epilog
 *   spool=DIR      where a deregistration that failed waits to be retried ("%n" as above;
 *                  default /var/lib/pfi/spank, made 0700 if missing)
 *
 * Depends on libcurl only (not on libpfi): slurmd loads it, so it must stay small and must never
 * crash or block a job for long. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <slurm/spank.h>

SPANK_PLUGIN(pfi, 1);

#define URL_MAX 512
#define BODY_MAX 4096
#define GPU_MAX 256
#define LOG_MAX 511 /* the node daemon's longest log path */
#define JOBID_MAX 10 /* digits of the largest job id, UINT32_MAX */

/* Options as the user gave them; parsed again where used, since the callbacks run in srun or
 * sbatch (to reject bad values before submission) and values reach the prolog as strings. */
static int opt_cb(int val, const char *optarg, int remote);

static struct spank_option pfi_options[] = {
    {"power-sla", "SLOWDOWN",
     "pfi: largest slowdown this job accepts under a power cut, in [0, 1) (e.g. 0.1 = 10%)", 1, 1,
     opt_cb},
    {"power-weight", "W",
     "pfi: weight of this job's throughput when power is shared (0.000001 to 1000000)", 1, 2,
     opt_cb},
    {"power-log", "PATH",
     "pfi: the job's training log (absolute path; %j: the job id, %%: a %, no other pattern), "
     "read for its throughput",
     1, 3, opt_cb},
    SPANK_OPTIONS_TABLE_END};

typedef struct conf {
    char url[URL_MAX];
    char token_path[URL_MAX];
    char spool[URL_MAX];
    double default_sla; /* < 0: none */
    int required;
    long timeout_ms; /* per request */
} conf;

static int parse_num(const char *s, double lo, double hi, double *out)
{
    /* Decimal only: strtod also reads hex floats (0x1p-3) and inf/nan, which no one means. */
    for (const char *p = s; *p; p++)
        if (!strchr("0123456789.eE+-", *p))
            return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

/* An SLA as the node daemon takes it (serve/jobs.c): a max slowdown in [0, 1), as the prolog
 * script does too; 0.9 here refused what the other two take.  A slowdown has no sign: "-0"
 * was read as 0, where the user may have meant another number. */
#define SLA_RANGE "a max slowdown in [0, 1) (0.1 = at most 10% slower)"
static int parse_sla(const char *s, double *out)
{
    double v;
    if (s[0] == '-' || parse_num(s, 0.0, 1.0, &v) != 0 || !(v < 1.0))
        return -1;
    *out = v;
    return 0;
}

/* v as the shortest decimal that reads back as v, checked again as the daemon will check it
 * (sla: parse_sla; weight: the weight's range): what passed at submission is what goes out.
 * %.6g sent 0.9999999, which is < 1, as 1, which the daemon refuses.  -1 when no text does. */
static int num_text(double v, int sla, char *out, size_t cap)
{
    for (int prec = 15; prec <= 17; prec++) {
        double back;
        snprintf(out, cap, "%.*g", prec, v);
        int ok = sla ? parse_sla(out, &back) : parse_num(out, 1e-6, 1e6, &back);
        if (ok == 0 && back == v)
            return 0;
    }
    return -1;
}

/* The length of s once each %j is replaced by a job id of JOBID_MAX digits and %% by %. */
static size_t log_len_max(const char *s)
{
    size_t n = 0;
    for (const char *p = s; *p; p++, n++) {
        if (p[0] == '%' && p[1] == 'j') {
            n += JOBID_MAX - 1;
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            p++;
        }
    }
    return n;
}

/* The first '%' of s that is not %j or %%, or NULL.  Only those two are expanded: Slurm's other
 * output patterns (%A_%a, %x, %u, ...) stayed in the path as they were, so every task of an
 * array was given the same file, one that never exists. */
static const char *log_bad_pattern(const char *s)
{
    for (const char *p = s; *p; p++) {
        if (p[0] != '%')
            continue;
        if (p[1] != 'j' && p[1] != '%')
            return p;
        p++;
    }
    return NULL;
}

/* Whether s is UTF-8 as a JSON parser takes it (the daemon's, jansson): no overlong form, no
 * surrogate, nothing past U+10FFFF.  The plugin links no libpfi (util/text.c has the same
 * rule for the daemon). */
static int utf8_ok(const unsigned char *p)
{
    while (*p) {
        int n = *p < 0x80 ? 0 : (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2
                          : (*p & 0xf8) == 0xf0 ? 3 : -1;
        if (n < 0)
            return 0;
        unsigned long cp = n == 0 ? *p : (unsigned long)(*p & (0x3f >> n));
        for (int k = 1; k <= n; k++) {
            if ((p[k] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (p[k] & 0x3f);
        }
        static const unsigned long least[] = {0, 0x80, 0x800, 0x10000};
        if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        p += n + 1;
    }
    return 1;
}

/* An absolute path in UTF-8 without control characters or patterns other than %j and %% that
 * fits the daemon's limit with every %j expanded to the longest job id.  (A path with bytes
 * that are not UTF-8 passed here and the daemon refused the registration: the job ran
 * unmanaged, said in slurmd's log alone.) */
static int log_ok(const char *s)
{
    if (s[0] != '/' || log_bad_pattern(s) || log_len_max(s) > LOG_MAX ||
        !utf8_ok((const unsigned char *)s))
        return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

/* A step's options (an srun inside an sbatch script or a salloc shell) reach no prolog: the job
 * was registered when it was allocated, with the options given then, and a step's were dropped
 * without a word.  srun inherits SLURM_JOB_ID only inside an allocation: one that creates its
 * own job has none yet when it reads its options.  Inside, srun also reads the job's own
 * options from the job's environment (Slurm's name for them below): those are in effect, so
 * only a value that differs is said to be ignored. */
static void warn_step(int val, const char *optarg)
{
    const char *job = getenv("SLURM_JOB_ID");
    if (spank_context() != S_CTX_LOCAL || !job || !*job)
        return;
    const char *name = pfi_options[val - 1].name;
    char env[96];
    snprintf(env, sizeof env, "SLURM_SPANK__SLURM_SPANK_OPTION_pfi_%s", name);
    for (char *p = env; *p; p++)
        if (*p == '-')
            *p = '_';
    const char *had = getenv(env);
    if (had && !strcmp(had, optarg))
        return;
    slurm_spank_log("pfi: warning: --%s=%s is ignored on a step of job %s (%s%s%s%s): pfi takes "
                    "it when the job is submitted (sbatch, salloc, or an srun that creates the "
                    "job)",
                    name, optarg, job,
                    had ? "the job keeps --" : "the job was submitted without it",
                    had ? name : "", had ? "=" : "", had ? had : "");
}

static int opt_cb(int val, const char *optarg, int remote)
{
    double v;
    const char *bad;
    if (!optarg)
        return -1;
    if (val == 3 && (bad = log_bad_pattern(optarg))) {
        slurm_error("pfi: --power-log=%s: '%.2s' is not expanded: only %%j (the job id; each "
                    "array task has its own) and %%%% (a %%) are",
                    optarg, bad);
        return -1;
    }
    if (val == 3 && !log_ok(optarg)) {
        slurm_error("pfi: --power-log=%s: expected an absolute path in UTF-8 without control "
                    "characters, at most %d bytes once each %%j is replaced by a %d-digit job id",
                    optarg, LOG_MAX, JOBID_MAX);
        return -1;
    }
    if (val == 1 && parse_sla(optarg, &v) != 0) {
        slurm_error("pfi: --power-sla=%s: expected %s", optarg, SLA_RANGE);
        return -1;
    }
    if (val == 2 && (parse_num(optarg, 1e-6, 1e6, &v) != 0)) {
        slurm_error("pfi: --power-weight=%s: expected a decimal number from 0.000001 to "
                    "1000000", optarg);
        return -1;
    }
    if (!remote)
        warn_step(val, optarg);
    return 0;
}

/* Appends piece to out (cap bytes, *o used, room kept for the NUL); -1 when it does not fit. */
static int append(char *out, size_t cap, size_t *o, const char *piece)
{
    size_t l = strlen(piece);
    if (*o + l >= cap)
        return -1;
    memcpy(out + *o, piece, l);
    *o += l;
    return 0;
}

/* Replaces each "%n" of in by node (other '%' sequences are kept as they are). */
static int expand(const char *in, const char *node, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *p = in; *p; p++) {
        const char *piece = NULL;
        char one[2] = {*p, 0};
        if (p[0] == '%' && p[1] == 'n') {
            piece = node;
            p++;
        } else {
            piece = one;
        }
        if (append(out, cap, &o, piece) != 0)
            return -1;
    }
    out[o] = '\0';
    return 0;
}

static int parse_conf(int ac, char **av, conf *c)
{
    snprintf(c->url, sizeof c->url, "unix:/run/pfi/serve.sock");
    c->token_path[0] = '\0';
    snprintf(c->spool, sizeof c->spool, "/var/lib/pfi/spank");
    c->default_sla = -1;
    c->required = 0;
    c->timeout_ms = 3000;
    for (int i = 0; i < ac; i++) {
        const char *a = av[i];
        double v;
        if (!strncmp(a, "url=", 4) && strlen(a + 4) < sizeof c->url) {
            snprintf(c->url, sizeof c->url, "%s", a + 4);
        } else if (!strncmp(a, "token=", 6) && strlen(a + 6) < sizeof c->token_path) {
            snprintf(c->token_path, sizeof c->token_path, "%s", a + 6);
        } else if (!strncmp(a, "spool=", 6) && a[6] == '/' && strlen(a + 6) < sizeof c->spool) {
            snprintf(c->spool, sizeof c->spool, "%s", a + 6);
        } else if (!strncmp(a, "default_sla=", 12) && parse_sla(a + 12, &v) == 0) {
            c->default_sla = v;
        } else if (!strcmp(a, "required=0") || !strcmp(a, "required=1")) {
            c->required = a[9] == '1';
        } else if (!strncmp(a, "timeout=", 8) && parse_num(a + 8, 0.1, 60, &v) == 0) {
            c->timeout_ms = (long)(v * 1000 + 0.5);
        } else {
            slurm_error("pfi: plugstack.conf: unknown or malformed argument '%s' (expected "
                        "url=, token=, default_sla=, required=0|1, timeout=, spool=/DIR)",
                        a);
            return -1;
        }
    }
    return 0;
}

/* "0,1,3" or "0-3,6" (SLURM_JOB_GPUS / CUDA_VISIBLE_DEVICES) -> indices.  UUID-style lists
 * ("GPU-...") are not indices: -1 so the caller says so. */
static int parse_gpus(const char *s, int *out, int max)
{
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        if (!isdigit((unsigned char)*p))
            return -1;
        long a = strtol(p, &end, 10), b = a;
        p = end;
        if (*p == '-') {
            if (!isdigit((unsigned char)p[1]))
                return -1;
            b = strtol(p + 1, &end, 10);
            p = end;
        }
        if (b < a || b > 4095)
            return -1;
        for (long g = a; g <= b; g++) {
            if (n >= max)
                return -1;
            out[n++] = (int)g;
        }
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    return n;
}

static int read_token(const char *path, char *tok, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(tok, 1, cap - 1, f);
    fclose(f);
    tok[n] = '\0';
    while (n > 0 && isspace((unsigned char)tok[n - 1]))
        tok[--n] = '\0';
    return n > 0 ? 0 : -1;
}

static size_t sink(char *ptr, size_t size, size_t nmemb, void *ud)
{
    char *buf = ud;
    size_t have = strlen(buf), add = size * nmemb;
    if (have + 1 < 512) {
        size_t k = add < 511 - have ? add : 511 - have;
        memcpy(buf + have, ptr, k);
        buf[have + k] = '\0';
    }
    return size * nmemb;
}

/* One request to the node daemon.  Returns the HTTP status, or -1 with why in errbuf; took_ms
 * (when not NULL) gets the time it took, as curl measured it. */
static long request(const conf *c, const char *node, const char *method, const char *path,
                    const char *body, char *errbuf, size_t errcap, long *took_ms)
{
    char base[URL_MAX], url[URL_MAX + 128], tokpath[URL_MAX], hdr[600];
    char reply[512] = "";
    char cerr[CURL_ERROR_SIZE] = "";
    if (expand(c->url, node, base, sizeof base) != 0 ||
        expand(c->token_path, node, tokpath, sizeof tokpath) != 0) {
        snprintf(errbuf, errcap, "url or token path too long");
        return -1;
    }
    const char *sock = NULL;
    if (!strncmp(base, "unix:", 5)) {
        sock = base + 5;
        snprintf(url, sizeof url, "http://localhost%s", path);
    } else {
        size_t l = strlen(base);
        while (l > 0 && base[l - 1] == '/')
            base[--l] = '\0';
        snprintf(url, sizeof url, "%s%s", base, path);
    }
    struct curl_slist *h = NULL;
    if (tokpath[0]) {
        char tok[400];
        if (read_token(tokpath, tok, sizeof tok) != 0) {
            snprintf(errbuf, errcap, "cannot read the token file %s: %s", tokpath,
                     errno ? strerror(errno) : "empty");
            return -1;
        }
        snprintf(hdr, sizeof hdr, "Authorization: Bearer %s", tok);
        h = curl_slist_append(h, hdr);
    }
    h = curl_slist_append(h, "Content-Type: application/json");
    CURL *cu = curl_easy_init();
    if (!cu) {
        curl_slist_free_all(h);
        snprintf(errbuf, errcap, "curl_easy_init failed");
        return -1;
    }
    curl_easy_setopt(cu, CURLOPT_URL, url);
    if (sock)
        curl_easy_setopt(cu, CURLOPT_UNIX_SOCKET_PATH, sock);
    curl_easy_setopt(cu, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(cu, CURLOPT_HTTPHEADER, h);
    if (body)
        curl_easy_setopt(cu, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(cu, CURLOPT_TIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt(cu, CURLOPT_CONNECTTIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt(cu, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(cu, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(cu, CURLOPT_WRITEDATA, reply);
    CURLcode rc = curl_easy_perform(cu);
    curl_off_t us = 0;
    if (took_ms && curl_easy_getinfo(cu, CURLINFO_TOTAL_TIME_T, &us) == CURLE_OK)
        *took_ms = (long)(us / 1000);
    long status = -1;
    if (rc == CURLE_OK) {
        curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 300 && sock)
            snprintf(errbuf, errcap, "%s %s at unix:%s: HTTP %ld: %.300s", method, path, sock,
                     status, reply);
        else if (status >= 300)
            snprintf(errbuf, errcap, "%s %s: HTTP %ld: %.300s", method, url, status, reply);
    } else if (sock) {
        /* curl's own text names "localhost port 80", the URL's stand-in: the socket is what
         * could not be reached, and the system's reason says why (no such file, refused). */
        long oserr = 0;
        curl_easy_getinfo(cu, CURLINFO_OS_ERRNO, &oserr);
        snprintf(errbuf, errcap, "%s %s at unix:%s: %s%s%s%s", method, path, sock,
                 curl_easy_strerror(rc), oserr ? " (" : "", oserr ? strerror((int)oserr) : "",
                 oserr ? ")" : "");
    } else {
        snprintf(errbuf, errcap, "%s %s: %s", method, url, cerr[0] ? cerr : curl_easy_strerror(rc));
    }
    curl_easy_cleanup(cu);
    curl_slist_free_all(h);
    return status;
}

static const char *node_name(void)
{
    const char *n = getenv("SLURMD_NODENAME");
    return n && *n ? n : "localhost";
}

/* s as the inside of a JSON string (quotes, backslashes and control characters escaped); -1
 * when it does not fit.  The node's name went into the body as it was: one with a quote made
 * the body malformed and the job ran unmanaged. */
static int json_text(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char piece[8];
        if (*p == '"' || *p == '\\')
            snprintf(piece, sizeof piece, "\\%c", *p);
        else if (*p < 0x20)
            snprintf(piece, sizeof piece, "\\u%04x", *p);
        else
            snprintf(piece, sizeof piece, "%c", *p);
        if (append(out, cap, &o, piece) != 0)
            return -1;
    }
    out[o] = '\0';
    return 0;
}

static int job_id(spank_t sp, uint32_t *id)
{
    if (spank_get_item(sp, S_JOB_ID, id) == ESPANK_SUCCESS)
        return 0;
    const char *s = getenv("SLURM_JOB_ID");
    if (!s)
        return -1;
    *id = (uint32_t)strtoul(s, NULL, 10);
    return *id ? 0 : -1;
}

/* The value of one of our options for this job, or NULL when the user did not give it. */
static const char *opt_value(spank_t sp, int which)
{
    char *v = NULL;
    if (spank_option_getopt(sp, &pfi_options[which], &v) == ESPANK_SUCCESS && v)
        return v;
    return NULL;
}

/* The log path as a JSON string body (quotes and backslashes escaped), %j replaced by the job
 * id and %% by %.  -1 when it does not fit. */
static int log_json(const char *path, uint32_t id, char *out, size_t cap)
{
    size_t o = 0;
    char num[16];
    snprintf(num, sizeof num, "%u", id);
    for (const char *p = path; *p; p++) {
        char one[3] = {*p, 0, 0};
        const char *piece = one;
        if (p[0] == '%' && p[1] == 'j') {
            piece = num;
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            p++;
        } else if (*p == '"' || *p == '\\') {
            one[0] = '\\';
            one[1] = *p;
        }
        if (append(out, cap, &o, piece) != 0)
            return -1;
    }
    out[o] = '\0';
    return 0;
}

/* Deregistrations that failed (the daemon down or restarting when the job ended).  The daemon
 * keeps a job the plugin registered until it is told the job ended: it reloads it from its
 * database after a restart, its GPUs keep the job's caps, and the next job given those GPUs is
 * refused (409, "GPU 0 already belongs to job N") and runs unmanaged.  So the epilog leaves the
 * job id in the spool and the next prolog or epilog on the node sends the DELETE again. */
static int spool_dir(const conf *c, char *dir, size_t cap)
{
    if (expand(c->spool, node_name(), dir, cap) != 0)
        return -1;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

/* 0 once the job's deregistration waits in the spool. */
static int spool_add(const conf *c, uint32_t id)
{
    char dir[URL_MAX], path[URL_MAX + 16];
    FILE *f = NULL;
    if (spool_dir(c, dir, sizeof dir) == 0) {
        snprintf(path, sizeof path, "%s/%u", dir, id);
        f = fopen(path, "w");
    }
    if (!f) {
        slurm_error("pfi: job %u: cannot spool its deregistration in %s: %s; remove the job "
                    "from the daemon by hand (pfi ctl job rm %u)",
                    id, c->spool, strerror(errno), id);
        return -1;
    }
    fclose(f);
    slurm_info("pfi: job %u: deregistration spooled in %s, sent again at the next job on %s", id,
               dir, node_name());
    return 0;
}

/* After a request that failed with status st (-1: no answer): 1 when the daemon could not be
 * told (no answer, 5xx, our token refused), 0 when it answered no to this request (another
 * 4xx), which neither a retry nor draining the node would change. */
static int untold(long st)
{
    return st < 400 || st >= 500 || st == 401 || st == 403;
}

/* Sends the spooled deregistrations (at most 64 a call) within one timeout in all, the last
 * request cut to what is left: they run before the job's own request, and a slow daemon that
 * answered each just in time held the job's start up to 64 timeouts.  Stops too at the first
 * the daemon does not answer, so a daemon that is down costs one timeout.  What is left waits
 * in the spool for the next prolog or epilog on the node. */
static void spool_retry(const conf *c)
{
    char dir[URL_MAX];
    if (expand(c->spool, node_name(), dir, sizeof dir) != 0)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    conf r = *c;
    long spent_ms = 0;
    for (int n = 0; n < 64 && (e = readdir(d));) {
        const char *name = e->d_name;
        if (!*name || strspn(name, "0123456789") != strlen(name) || strlen(name) > 10)
            continue;
        unsigned long long id = strtoull(name, NULL, 10);
        if (id == 0 || id > UINT32_MAX)
            continue;
        r.timeout_ms = c->timeout_ms - spent_ms;
        if (r.timeout_ms <= 0)
            break;
        n++;
        char path[64], file[URL_MAX + 16], why[700] = "";
        snprintf(path, sizeof path, "/v1/jobs/%llu", id);
        long took_ms = r.timeout_ms;
        long st = request(&r, node_name(), "DELETE", path, NULL, why, sizeof why, &took_ms);
        spent_ms += took_ms > 0 ? took_ms : 1;
        int done = st == 404 || (st >= 200 && st < 300);
        if (!done && untold(st))
            break;
        snprintf(file, sizeof file, "%s/%llu", dir, id);
        unlink(file);
        if (done)
            slurm_info("pfi: job %llu deregistered on %s (spooled)", id, node_name());
        else
            slurm_error("pfi: job %llu: spooled deregistration refused, dropped: %s", id, why);
    }
    closedir(d);
}

#define UNMANAGED "the job runs without power management"

/* What the plugin returns when the daemon could not be told: the job runs unless required=1.
 * then: what follows for the job, said in the log ("the job runs without power management" at a
 * prolog; at an epilog, the job has ended: its GPUs keep its caps). */
static int outcome(const conf *c, uint32_t id, const char *what, const char *then,
                   const char *why)
{
    if (c->required) {
        /* Slurm honours the error only for a plugin loaded with the `required` keyword (an
         * `optional` plugin's errors are ignored), which the plugin cannot see: ask, do not
         * claim. */
        slurm_error("pfi: job %u: %s failed (required=1: asking Slurm to fail the %s, which "
                    "it does only when plugstack.conf's line starts with 'required'): %s",
                    id, what, strcmp(what, "deregistration") ? "prolog" : "epilog", why);
        return -1;
    }
    slurm_error("pfi: job %u: %s failed, %s: %s", id, what, then, why);
    return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    /* The arguments are checked here too, so a typo in plugstack.conf shows up in srun and
     * sbatch, not only in slurmd's log. */
    conf c;
    if (parse_conf(ac, av, &c) != 0)
        return -1;
    /* Options are registered here rather than through an exported spank_options table:
     * Slurm 22.05 ignores that table for sbatch/salloc, and in the prolog a table entry
     * hides the value the job carries in its environment (spank_option_getopt finds the
     * unset cached entry first).  So: register everywhere but in the prolog/epilog. */
    if (spank_context() == S_CTX_JOB_SCRIPT)
        return 0;
    for (int i = 0; pfi_options[i].name; i++) {
        spank_err_t rc = spank_option_register(sp, &pfi_options[i]);
        if (rc != ESPANK_SUCCESS) {
            slurm_error("pfi: cannot register --%s: %s", pfi_options[i].name,
                        spank_strerror(rc));
            return -1;
        }
    }
    return 0;
}

/* The job's GPUs on this node as slurmd gives them to a prolog; NULL when it holds none. */
static const char *job_gpus(void)
{
    const char *gl = getenv("SLURM_JOB_GPUS");
    if (!gl || !*gl)
        gl = getenv("CUDA_VISIBLE_DEVICES");
    return gl && *gl ? gl : NULL;
}

/* What the prolog and the epilog both start from: the plugstack arguments, the job id and the
 * job's GPUs on this node.  0 when all are there; else the callback returns *ret: -1 for bad
 * arguments, and for a job without an id in the prolog under required=1; 0 otherwise. */
static int job_context(spank_t sp, int ac, char **av, int prolog, conf *c, uint32_t *id,
                       const char **gl, int *ret)
{
    const char *what = prolog ? "registered" : "deregistered";
    *id = 0;
    *ret = 0;
    if (parse_conf(ac, av, c) != 0) {
        *ret = -1;
        return -1;
    }
    spool_retry(c);
    if (job_id(sp, id) != 0) {
        slurm_error("pfi: job %s without a job id, nothing %s", prolog ? "prolog" : "epilog",
                    what);
        *ret = prolog && c->required ? -1 : 0;
        return -1;
    }
    /* The epilog needs only the job id: Slurm 22.05 runs the epilog of a job that ends just
     * after a slurmctld restart without SLURM_JOB_GPUS or CUDA_VISIBLE_DEVICES, and a job
     * skipped for that stayed registered for good (every later job on its GPUs refused, 409).
     * A job that held no GPU here was never registered: its DELETE is a 404. */
    if (!(*gl = job_gpus()) && prolog) {
        slurm_debug("pfi: job %u holds no GPU on %s, nothing %s", *id, node_name(), what);
        return -1;
    }
    return 0;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
    conf c;
    uint32_t id;
    const char *gl;
    int ret;
    if (job_context(sp, ac, av, 1, &c, &id, &gl, &ret) != 0)
        return ret;
    int gpus[GPU_MAX];
    int ng = parse_gpus(gl, gpus, GPU_MAX);
    if (ng <= 0)
        return outcome(&c, id, "registration", UNMANAGED, "GPU list is not a list of indices");

    const char *sla_s = opt_value(sp, 0), *w_s = opt_value(sp, 1), *log_s = opt_value(sp, 2);
    double sla = c.default_sla, w = 1.0, v;
    if (sla_s && parse_sla(sla_s, &v) == 0)
        sla = v;
    if (w_s && parse_num(w_s, 1e-6, 1e6, &v) == 0)
        w = v;

    char sla_t[32], w_t[32];
    if ((sla >= 0 && num_text(sla, 1, sla_t, sizeof sla_t) != 0) ||
        num_text(w, 0, w_t, sizeof w_t) != 0)
        return outcome(&c, id, "registration", UNMANAGED, "SLA or weight cannot be sent as is");
    char body[BODY_MAX];
    int o = snprintf(body, sizeof body, "{\"id\":\"%u\",\"gpus\":[", id);
    for (int i = 0; i < ng && o < (int)sizeof body; i++)
        o += snprintf(body + o, sizeof body - o, "%s%d", i ? "," : "", gpus[i]);
    if (o < (int)sizeof body && sla >= 0)
        o += snprintf(body + o, sizeof body - o, "],\"sla\":%s", sla_t);
    else if (o < (int)sizeof body)
        o += snprintf(body + o, sizeof body - o, "]");
    /* A log path the user gave that does not fit (checked at submission, so only from a job
     * submitted without the plugin): the job is registered without it, not left unmanaged. */
    char log[2 * LOG_MAX + 2] = "";
    if (log_s && (!log_ok(log_s) || log_json(log_s, id, log, sizeof log) != 0)) {
        slurm_error("pfi: job %u: --power-log=%s is not a usable path (absolute, no pattern but "
                    "%%j and %%%%, at most %d bytes with %%j expanded): registered without it",
                    id, log_s, LOG_MAX);
        log[0] = '\0';
    }
    if (o < (int)sizeof body && log[0])
        o += snprintf(body + o, sizeof body - o, ",\"log\":\"%s\"", log);
    char node[256];
    if (json_text(node_name(), node, sizeof node) != 0)
        return outcome(&c, id, "registration", UNMANAGED, "node name too long");
    if (o < (int)sizeof body)
        o += snprintf(body + o, sizeof body - o,
                      ",\"weight\":%s,\"source\":\"slurm\",\"node\":\"%s\"}", w_t, node);
    if (o >= (int)sizeof body)
        return outcome(&c, id, "registration", UNMANAGED, "request too large");

    char why[700] = "";
    long st = request(&c, node_name(), "POST", "/v1/jobs", body, why, sizeof why, NULL);
    if ((st < 200 || st >= 300) && !untold(st)) {
        /* The daemon heard the job and refused it (a value it does not accept, a GPU still
         * held): draining the node would not help, so required=1 does not apply. */
        slurm_error("pfi: job %u: registration refused, the job runs without power management "
                    "(not a node failure: required=1 does not apply): %s",
                    id, why);
        return 0;
    }
    if (st < 200 || st >= 300)
        return outcome(&c, id, "registration", UNMANAGED, why);
    slurm_info("pfi: job %u registered on %s: GPUs %s, sla %s, weight %s", id, node_name(), gl,
               sla >= 0 ? (sla_s ? sla_s : "site default") : "none", w_t);
    return 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
    conf c;
    uint32_t id;
    const char *gl;
    int ret;
    if (job_context(sp, ac, av, 0, &c, &id, &gl, &ret) != 0)
        return ret;
    char path[64], why[700] = "";
    snprintf(path, sizeof path, "/v1/jobs/%u", id);
    long st = request(&c, node_name(), "DELETE", path, NULL, why, sizeof why, NULL);
    /* 404: the daemon never knew the job (no GPU here, or it was down at the prolog). */
    if (st == 404) {
        slurm_debug("pfi: job %u was not registered on %s: nothing to deregister", id,
                    node_name());
        return 0;
    }
    if (st >= 200 && st < 300) {
        slurm_info("pfi: job %u deregistered on %s", id, node_name());
        return 0;
    }
    if (!untold(st)) {
        slurm_error("pfi: job %u: deregistration refused: %s", id, why);
        return 0;
    }
    /* No GPU listed (a CPU-only job, or Slurm after a slurmctld restart): the DELETE was a
     * best effort.  Not spooled and never a failure: on a node without a daemon every CPU job
     * spooled its id for ever, and under required=1 drained the node. */
    if (!gl) {
        slurm_info("pfi: job %u: no GPU listed in the epilog's environment and no answer from "
                   "the daemon (%s): nothing spooled",
                   id, why);
        return 0;
    }
    /* An epilog failure drains the node, so only required=1 sites want that; the spool has the
     * next prolog or epilog on this node send the DELETE again. */
    return outcome(&c, id, "deregistration",
                   /* "may": the epilog cannot know whether the prolog registered it */
                   spool_add(&c, id) == 0
                       ? "spooled: if the daemon holds the job, its GPUs keep the job's caps "
                         "until the daemon takes it"
                       : "not spooled: if the daemon holds the job, its GPUs keep the job's caps "
                         "until it is removed by hand (pfi ctl job rm)",
                   why);
}
