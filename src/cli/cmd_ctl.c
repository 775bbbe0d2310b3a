/* SPDX-License-Identifier: Apache-2.0 */
/* pfi ctl: a client of a running `pfi serve` (docs/api.md), over TCP or its Unix socket.
 * Prints the daemon's JSON answer; an error answer goes to stderr with exit status 1 (2 for a
 * request the daemon found malformed). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "serve/serve.h"
#include "util/budget.h"
#include "util/http.h"
#include "util/units.h"

/* Where the packaged unit and the example serve.conf listen. */
#define CTL_PACKAGED_SOCKET "/run/pfi/serve.sock"

typedef struct ctl {
    const char *url, *socket, *token_file;
    int raw;
} ctl;

/* One request; prints the answer; returns the exit status. */
static int request(const ctl *c, const char *method, const char *path, json_t *body)
{
    char token[PFI_TOKEN_MAX + 1] = "";
    pfi_err err = {0};
    /* On reads too: a daemon with read_auth = token answers them 401 without it. */
    if (pfi_cli_daemon_token("ctl", c->token_file, strcmp(method, "GET") != 0, token,
                             sizeof token, &err) != PFI_OK) {
        json_decref(body);
        return pfi_cli_fail("ctl", &err);
    }
    char url[1024];
    pfi_http_url(c->socket ? "http://localhost" : c->url, path, url, sizeof url);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    /* What the daemon answers is shown whole, however long (an audit query can be). */
    pfi_http_req r = {.url = url, .unix_sock = c->socket, .method = method, .body = text,
                      .max_reply = SIZE_MAX};
    pfi_http_many(NULL, &r, 1, token[0] ? token : NULL, 60.0, 1);
    free(text);
    if (!r.started) {
        fprintf(stderr, "pfi ctl: libcurl failed to start\n");
        free(r.reply);
        return PFI_EXIT_FAIL;
    }
    if (r.status < 0) {
        /* A listener full of other clients' connections accepts and then says nothing: that
         * is not a daemon that is gone. */
        char hint[200];
        fprintf(stderr, "pfi ctl: %s %s%s%s: %s (%s)\n", method, c->socket ? path : url,
                c->socket ? " at unix:" : "", c->socket ? c->socket : "", r.err,
                pfi_cli_no_answer_hint(r.timed_out, 60, "pfi serve", hint, sizeof hint));
        free(r.reply);
        return PFI_EXIT_FAIL;
    }
    int rc = PFI_EXIT_OK;
    json_t *doc = r.reply ? json_loads(r.reply, 0, NULL) : NULL;
    if (r.status >= 400) {
        json_t *m = json_object_get(json_object_get(doc, "error"), "message");
        fprintf(stderr, "pfi ctl: %s %s: HTTP %ld: %s\n", method, path, r.status,
                json_is_string(m) ? json_string_value(m) : (r.reply ? r.reply : ""));
        pfi_cli_daemon_401("ctl", method, r.status, c->token_file, token[0] != '\0');
        rc = r.status == 400 ? PFI_EXIT_USAGE : PFI_EXIT_FAIL;
        json_decref(doc);
    } else if (doc && !c->raw) {
        rc = pfi_cli_print_json(doc);
    } else if (r.reply) {
        if (fputs(r.reply, stdout) == EOF)
            rc = PFI_EXIT_FAIL;
        json_decref(doc);
    }
    free(r.reply);
    return rc;
}

static int usage_error(const char *msg)
{
    fprintf(stderr, "pfi ctl: %s (pfi ctl --help)\n", msg);
    return PFI_EXIT_USAGE;
}


/* The options of the commands that change something. */
typedef struct ctl_args {
    const char *gpus, *ramp, *ttl, *controller, *log, *epoch;
    double sla, weight, pfi30, tps, seq_len, tokens_per_step;
    int no_sla, force;
    const char *sla_text; /* --sla as typed (a->sla once parsed) */
    int since, limit;     /* INT_MIN: not given */
} ctl_args;

static int cmd_budget(const ctl *c, const ctl_args *a, char **pos, int npos)
{
    /* Forced: even over a cluster controller holding the node's caps (docs/api.md). */
    const char *path = a->force ? "/v1/budget?force=1" : "/v1/budget";
    if (npos == 2 && !strcmp(pos[1], "clear"))
        return request(c, "DELETE", path, NULL);
    if (npos != 3 || strcmp(pos[1], "set"))
        return usage_error("budget set BUDGET [--ramp D] [--force] | budget clear [--force]");
    pfi_err err = {0};
    pfi_budget bt;
    if (pfi_budget_parse(pos[2], &bt, &err) != PFI_OK)
        return pfi_cli_fail("ctl", &err);
    /* A share goes as typed: the daemon knows what it is a share of. */
    json_t *b = bt.is_share ? json_pack("{s:s}", "budget", pos[2])
                            : json_pack("{s:f}", "watts", bt.value);
    if (a->ramp) {
        double sec;
        if (pfi_parse_duration(a->ramp, &sec, &err) != PFI_OK) {
            json_decref(b);
            return pfi_cli_fail("ctl", &err);
        }
        json_object_set_new(b, "ramp_s", json_real(sec));
    }
    return request(c, "PUT", path, b);
}

static int cmd_job(const ctl *c, const ctl_args *a, char **pos, int npos)
{
    if (npos < 3)
        return usage_error("job add|rm|throughput ID ...");
    const char *sub = pos[1], *id = pos[2];
    char path[256];
    if ((!strcmp(sub, "rm") || !strcmp(sub, "throughput")) &&
        !pfi_http_id_path(path, sizeof path, "/v1/jobs/", id,
                          !strcmp(sub, "rm") ? "" : "/throughput"))
        return usage_error("job id too long");
    if (!strcmp(sub, "rm") && npos == 3)
        return request(c, "DELETE", path, NULL);
    if (!strcmp(sub, "throughput") && npos == 4) {
        double t;
        /* A finite decimal: JSON has no NaN or infinity (json_pack sent no body at all). */
        if (pfi_parse_decimal(pos[3], &t, NULL) != 0)
            return usage_error("job throughput ID TOKENS_PER_S (a number)");
        return request(c, "POST", path, json_pack("{s:f}", "tokens_per_s", t));
    }
    if (!strcmp(sub, "add") && npos == 3) {
        if (!a->gpus)
            return usage_error("job add needs --gpus");
        json_t *b = json_pack("{s:s, s:s}", "id", id, "gpus", a->gpus);
        if (a->no_sla)
            json_object_set_new(b, "sla", json_null());
        else if (!isnan(a->sla))
            json_object_set_new(b, "sla", json_real(a->sla));
        if (!isnan(a->weight))
            json_object_set_new(b, "weight", json_real(a->weight));
        if (!isnan(a->pfi30))
            json_object_set_new(b, "pfi30", json_real(a->pfi30));
        if (!isnan(a->tps))
            json_object_set_new(b, "tokens_per_s", json_real(a->tps));
        if (a->log)
            json_object_set_new(b, "log", json_string(a->log));
        if (!isnan(a->seq_len))
            json_object_set_new(b, "seq_len", json_real(a->seq_len));
        if (!isnan(a->tokens_per_step))
            json_object_set_new(b, "tokens_per_step", json_real(a->tokens_per_step));
        return request(c, "POST", "/v1/jobs", b);
    }
    return usage_error("job add ID --gpus LIST | job rm ID | job throughput ID X");
}

static int cmd_heartbeat(const ctl *c, const ctl_args *a)
{
    json_t *b = json_object();
    if (a->controller)
        json_object_set_new(b, "controller", json_string(a->controller));
    if (a->ttl) {
        pfi_err err = {0};
        double sec;
        if (pfi_parse_duration(a->ttl, &sec, &err) != PFI_OK) {
            json_decref(b);
            return pfi_cli_fail("ctl", &err);
        }
        json_object_set_new(b, "ttl_s", json_real(sec));
    }
    return request(c, "POST", "/v1/heartbeat", b);
}

static int cmd_caps(const ctl *c, const ctl_args *a, char **pos, int npos)
{
    if (npos != 2)
        return usage_error("caps GPU=W[,GPU=W...]");
    char *list = strdup(pos[1]), *save = NULL;
    if (!list) {
        fprintf(stderr, "pfi ctl: out of memory\n");
        return PFI_EXIT_FAIL;
    }
    /* The epoch a controller sends is its wall clock in ms: more than an int holds. */
    long long epoch = 0;
    if (a->epoch) {
        char *end;
        errno = 0;
        epoch = strtoll(a->epoch, &end, 10);
        if (errno || end == a->epoch || *end || epoch < 1) {
            free(list);
            return usage_error("--epoch expects an integer >= 1");
        }
    }
    json_t *arr = json_array();
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        /* Digits on both sides: strtol takes "" as 0, so "=500" went out as GPU 0. */
        char *eq = strchr(t, '='), *e1 = t, *e2 = eq;
        long g = eq && isdigit((unsigned char)t[0]) ? strtol(t, &e1, 10) : -1;
        double w = eq && isdigit((unsigned char)eq[1]) ? strtod(eq + 1, &e2) : NAN;
        if (!eq || e1 != eq || !isfinite(w) || (*e2 && strcmp(e2, "W")) || g < 0) {
            free(list);
            json_decref(arr);
            return usage_error("caps expects GPU=WATTS pairs, e.g. 0=500,1=450");
        }
        json_array_append_new(arr, json_pack("{s:I, s:f}", "gpu", (json_int_t)g, "cap_w", w));
    }
    free(list);
    json_t *b = json_pack("{s:o}", "caps", arr);
    if (epoch > 0)
        json_object_set_new(b, "epoch", json_integer(epoch));
    return request(c, "PUT", "/v1/caps", b);
}

/* An option given to a command that does not take it is refused, naming it: `budget set 5000W
 * --gpus 0-3` set a node-wide budget and exited 0, and `decisions --since N` answered the
 * latest decisions. */
static int misplaced(const char *cmd, const char *sub, const ctl_args *a)
{
    int job_add = !strcmp(cmd, "job") && sub && !strcmp(sub, "add");
    const struct {
        int given, ok;
        const char *name;
    } o[] = {
        {a->gpus != NULL, job_add, "--gpus"},
        {a->sla_text != NULL, job_add, "--sla"},
        {a->no_sla, job_add, "--no-sla"},
        {!isnan(a->weight), job_add, "--weight"},
        {!isnan(a->pfi30), job_add, "--pfi30"},
        {!isnan(a->tps), job_add, "--tokens-per-s"},
        {a->log != NULL, job_add, "--log"},
        {!isnan(a->seq_len), job_add, "--seq-len"},
        {!isnan(a->tokens_per_step), job_add, "--tokens-per-step"},
        {a->ramp != NULL, !strcmp(cmd, "budget"), "--ramp"},
        {a->force, !strcmp(cmd, "budget"), "--force"},
        {a->since != INT_MIN, !strcmp(cmd, "events"), "--since"},
        {a->limit != INT_MIN, !strcmp(cmd, "events") || !strcmp(cmd, "decisions"), "--limit"},
        {a->ttl != NULL, !strcmp(cmd, "heartbeat"), "--ttl"},
        {a->controller != NULL, !strcmp(cmd, "heartbeat"), "--controller"},
        {a->epoch != NULL, !strcmp(cmd, "caps"), "--epoch"},
    };
    for (size_t i = 0; i < sizeof o / sizeof o[0]; i++)
        if (o[i].given && !o[i].ok) {
            char msg[128];
            snprintf(msg, sizeof msg, "%s is not an option of '%s%s%s'", o[i].name, cmd,
                     sub ? " " : "", sub ? sub : "");
            return usage_error(msg);
        }
    return -1;
}

/* The command in pos[0] with its arguments. */
static int dispatch(ctl *c, const ctl_args *a, char **pos, int npos)
{
    const char *cmd = pos[0];
    int rc = misplaced(cmd, npos > 1 && !strcmp(cmd, "job") ? pos[1] : NULL, a);
    if (rc >= 0)
        return rc;
    const char *reads[][2] = {{"health", "/healthz"},       {"gpus", "/v1/gpus"},
                              {"allocation", "/v1/allocation"}, {"metrics", "/metrics"},
                              {"decisions", NULL}, {"events", NULL}, {"heartbeat", NULL}};
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
        if (!strcmp(cmd, reads[i][0]) && npos != 1)
            return usage_error("this command takes no argument");
    for (size_t i = 0; i < 4; i++)
        if (!strcmp(cmd, reads[i][0])) {
            if (!strcmp(cmd, "metrics"))
                c->raw = 1;
            return request(c, "GET", reads[i][1], NULL);
        }
    char path[256];
    int limit = a->limit != INT_MIN ? a->limit : 100;
    if (!strcmp(cmd, "jobs")) {
        if (npos > 2)
            return usage_error("jobs takes at most a job id");
        if (npos == 2 && !pfi_http_id_path(path, sizeof path, "/v1/jobs/", pos[1], ""))
            return usage_error("job id too long");
        return request(c, "GET", npos == 2 ? path : "/v1/jobs", NULL);
    }
    if (!strcmp(cmd, "decisions")) {
        snprintf(path, sizeof path, "/v1/decisions?limit=%d", limit);
        return request(c, "GET", path, NULL);
    }
    if (!strcmp(cmd, "events")) {
        snprintf(path, sizeof path, "/v1/events?since=%d&limit=%d", a->since != INT_MIN ? a->since : 0,
                 limit);
        return request(c, "GET", path, NULL);
    }
    if (!strcmp(cmd, "budget"))
        return cmd_budget(c, a, pos, npos);
    if (!strcmp(cmd, "job"))
        return cmd_job(c, a, pos, npos);
    if (!strcmp(cmd, "heartbeat"))
        return cmd_heartbeat(c, a);
    if (!strcmp(cmd, "caps"))
        return cmd_caps(c, a, pos, npos);
    fprintf(stderr, "pfi ctl: unknown command '%s' (", cmd);
    pfi_cli_actions_list(stderr, pfi_cli_actions_ctl);
    fprintf(stderr, "; pfi ctl --help)\n");
    return PFI_EXIT_USAGE;
}

const char *const pfi_cli_actions_ctl[] = {"health",    "gpus",      "jobs",   "allocation",
                                           "events",    "decisions", "metrics", "budget",
                                           "job",       "heartbeat", "caps",   NULL};

/* The port of an http(s) URL, when it gives one, is 1 to 65535 (curl took 99999 for a
 * malformed URL and the message asked whether the daemon runs). */
static int url_port_ok(const char *url)
{
    const char *h = strstr(url, "://");
    if (!h || strncmp(url, "http", 4))
        return 1;
    h += 3;
    const char *end = h + strcspn(h, "/?#"), *colon = NULL;
    for (const char *p = h; p < end; p++)
        if (*p == '@') /* user:password@ comes before the host */
            h = p + 1, colon = NULL;
        else if (*p == ':')
            colon = p;
    if (!colon || (h[0] == '[' && colon < strchr(h, ']')))
        return 1; /* none given, or inside an IPv6 address */
    char *e;
    long port = strtol(colon + 1, &e, 10);
    return e == end && e > colon + 1 && port >= 1 && port <= 65535;
}

/* Where to ask: --url, --socket, $PFI_SERVE_URL, else the packaged daemon's socket when it
 * exists, else the daemon's own default listen. */
static void ctl_target(ctl *c)
{
    if (!c->url)
        c->url = getenv("PFI_SERVE_URL");
    struct stat sb;
    if (!c->url && !c->socket)
        c->url = stat(CTL_PACKAGED_SOCKET, &sb) == 0 && S_ISSOCK(sb.st_mode)
                     ? "unix:" CTL_PACKAGED_SOCKET
                     : "http://127.0.0.1:9455";
    if (!c->url)
        c->url = "http://127.0.0.1:9455";
    if (!c->socket && !strncmp(c->url, "unix:", 5)) /* serve.conf's listen, the Slurm side's url */
        c->socket = c->url + 5;
    if (!c->token_file)
        c->token_file = getenv("PFI_SERVE_TOKEN_FILE");
}

int pfi_cmd_ctl(int argc, char **argv)
{
    ctl c = {0};
    ctl_args a = {.sla = NAN, .weight = NAN, .pfi30 = NAN, .tps = NAN, .seq_len = NAN,
                  .tokens_per_step = NAN, .since = INT_MIN, .limit = INT_MIN};
    const pfi_opt opts[] = {
        {"url", PFI_OPT_STR, &c.url, "URL", "daemon address, http://HOST:PORT or unix:PATH "
                                            "(default $PFI_SERVE_URL, else unix:/run/pfi/serve.sock when that socket exists, else "
                                            "http://127.0.0.1:9455)"},
        {"socket", PFI_OPT_STR, &c.socket, "PATH", "talk over the daemon's Unix socket"},
        {"token-file", PFI_OPT_STR, &c.token_file, "FILE",
         "bearer token, sent on every request: needed for changes, and for reads where read auth "
         "is on (default $PFI_SERVE_TOKEN_FILE)"},
        {"raw", PFI_OPT_FLAG, &c.raw, NULL, "print the answer as received (e.g. for metrics)"},
        {"gpus", PFI_OPT_STR, &a.gpus, "LIST", "job add: the job's GPUs, e.g. 0-3"},
        {"sla", PFI_OPT_STR, &a.sla_text, "SLOWDOWN", "job add: max slowdown, e.g. 0.1 or 10%"},
        {"no-sla", PFI_OPT_FLAG, &a.no_sla, NULL,
         "job add: no SLA even if the daemon has a default"},
        {"weight", PFI_OPT_DOUBLE, &a.weight, "W", "job add: weight (default 1)"},
        {"pfi30", PFI_OPT_DOUBLE, &a.pfi30, "X", "job add: a known PFI30"},
        {"tokens-per-s", PFI_OPT_DOUBLE, &a.tps, "X", "job add: baseline tokens/s"},
        {"log", PFI_OPT_STR, &a.log, "FILE", "job add: the job's log, followed for tokens/s"},
        {"seq-len", PFI_OPT_DOUBLE, &a.seq_len, "N",
         "job add: tokens per sample, so that a log in samples/s (DeepSpeed) reads as tokens/s"},
        {"tokens-per-step", PFI_OPT_DOUBLE, &a.tokens_per_step, "N",
         "job add: tokens per iteration, so that a log in it/s (Hugging Face, Lightning) reads "
         "as tokens/s"},
        {"ramp", PFI_OPT_STR, &a.ramp, "DURATION", "budget set: reach it gradually"},
        {"force", PFI_OPT_FLAG, &a.force, NULL,
         "budget set/clear: even where a cluster controller holds the caps and the change "
         "raises them (the site may be over its budget until it sends caps again)"},
        {"since", PFI_OPT_INT, &a.since, "ID", "events: only those after this id"},
        {"limit", PFI_OPT_INT, &a.limit, "N", "events, decisions: at most N (default 100)"},
        {"ttl", PFI_OPT_STR, &a.ttl, "DURATION", "heartbeat: watchdog timeout"},
        {"controller", PFI_OPT_STR, &a.controller, "NAME", "heartbeat: who sends it"},
        {"epoch", PFI_OPT_STR, &a.epoch, "N", "caps: the cluster controller's epoch"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi ctl [--url URL|--socket PATH] [--token-file FILE] COMMAND [ARGS]",
        "Talk to a running pfi serve.  Commands: health, gpus, jobs [ID], allocation, events, "
        "decisions [--limit N] (the audit log: what each change cost), metrics; budget set "
        "BUDGET [--ramp 30s] [--force] (4000W, 70% of the GPUs' default limits, cut=30%: pfi help "
        "budget); budget clear [--force]; job add ID --gpus LIST "
        "[--sla S] [--weight W] [--pfi30 X] [--tokens-per-s X] [--log FILE] [--seq-len N] "
        "[--tokens-per-step N]; job rm ID; job throughput ID "
        "TOKENS_PER_S; heartbeat [--ttl 30s] [--controller NAME]; caps GPU=W[,GPU=W...] "
        "[--epoch N].",
        opts,
        "pfi ctl --socket /run/pfi/serve.sock allocation\n"
        "pfi ctl --token-file /etc/pfi/token job add 4242 --gpus 0-3 --sla 0.1\n"
        "pfi ctl --token-file /etc/pfi/token budget set 70% --ramp 30s"};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    pfi_err e = {0};
    if (a.sla_text && pfi_parse_slowdown(a.sla_text, &a.sla, &e) != PFI_OK)
        return usage_error(e.msg);
    ctl_target(&c);
    /* A malformed address is bad input, not a daemon that does not answer. */
    if ((!c.socket && strncmp(c.url, "http://", 7) && strncmp(c.url, "https://", 8)) ||
        (c.socket && !c.socket[0]) || !url_port_ok(c.url))
        return usage_error("--url expects http://HOST:PORT (a port of 1 to 65535), "
                           "https://HOST:PORT or unix:PATH");
    if (npos < 1)
        return usage_error("missing command");
    return dispatch(&c, &a, pos, npos);
}
