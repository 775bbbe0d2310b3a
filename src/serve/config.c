/* SPDX-License-Identifier: Apache-2.0 */
/* config.c: the daemon's settings, from defaults, a "key = value" file and CLI flags. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "serve/serve.h"
#include "serve/serve_int.h"
#include "util/budget.h"
#include "util/fs.h"
#include "util/num.h"
#include "util/text.h"
#include "util/units.h"

void pfi_serve_config_defaults(pfi_serve_config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->listen, sizeof c->listen, "127.0.0.1:%d", PFI_SERVE_DEFAULT_PORT);
    snprintf(c->db, sizeof c->db, "pfi-serve.db");
    c->backend[0] = '\0'; /* unset: $PFI_BACKEND, else sim with a sim=, else auto */
    c->sample_interval_s = 1.0;
    c->reoptimize_interval_s = 30.0;
    c->min_change_interval_s = 10.0;
    c->hysteresis_w = 5.0;
    c->default_sla = NAN;
    c->watchdog_timeout_s = 0;
    snprintf(c->safe_budget, sizeof c->safe_budget, "min");
    c->max_body = 64 * 1024;
    c->threads = 4;
    c->max_conns = 1024;
    c->max_client_conns = 32;
    c->client_timeout_s = 10;
    c->discover = 1;
    snprintf(c->proc_root, sizeof c->proc_root, "/proc");
    c->slurm_log = 1;
    c->log_switch_after_s = 30.0;
    pfi_ven_config_defaults(&c->openadr, "node");
}

static int set_str(char *dst, size_t size, const char *key, const char *v, pfi_err *err)
{
    if (strlen(v) >= size)
        return pfi_err_set(err, PFI_EINVAL, "%s: value too long (at most %zu characters)", key,
                           size - 1);
    memcpy(dst, v, strlen(v) + 1);
    return PFI_OK;
}

static int set_bool(int *dst, const char *key, const char *v, pfi_err *err)
{
    if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "on"))
        *dst = 1;
    else if (!strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcmp(v, "0") ||
             !strcasecmp(v, "off"))
        *dst = 0;
    else
        return pfi_err_set(err, PFI_EINVAL, "%s: expected yes or no, got '%s'", key, v);
    return PFI_OK;
}

static int set_duration(double *dst, const char *key, const char *v, pfi_err *err)
{
    int rc = pfi_parse_duration(v, dst, err);
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "%s: ", key);
    return PFI_OK;
}

static int set_watts(double *dst, const char *key, const char *v, pfi_err *err)
{
    char *end;
    errno = 0;
    double w = strtod(v, &end);
    if (errno || end == v || (*end && strcasecmp(end, "W") != 0) || !isfinite(w) || w < 0)
        return pfi_err_set(err, PFI_EINVAL, "%s: expected watts >= 0 (e.g. 5W), got '%s'", key, v);
    *dst = w;
    return PFI_OK;
}

/* A budget is "none" (stored as ""), "min", or what pfi_budget_parse accepts.  Empty text is
 * refused as every command refuses it ("budget '': expected ..."), not taken as none: a
 * `--budget "$B"` with B unset started the daemon with no budget, without a word. */
static int set_budget(char *dst, size_t size, const char *key, const char *v, int allow_none,
                      int allow_min, pfi_err *err)
{
    if (allow_none && !strcasecmp(v, "none"))
        v = "";
    else if (!(allow_min && !strcasecmp(v, "min"))) {
        pfi_budget b;
        if (pfi_budget_parse(v, &b, err) != PFI_OK)
            return pfi_err_prefix(err, "%s: ", key);
    }
    return set_str(dst, size, key, v, err);
}

static const pfi_serve_key keys[] = {
    {"listen", "HOST:PORT|[ADDR]:PORT|unix:PATH", "127.0.0.1:9455", "127.0.0.1:0",
     "Where the API listens.  Port 0 takes any free port (see port_file).  A Unix socket is "
     "created with mode 0660.  A non-loopback address needs allow_remote."},
    {"allow_remote", "yes|no", "no", "no", "Allow a listen address other than loopback."},
    {"control_listen", "unix:PATH|HOST:PORT", "none", "unix:/run/pfi/control.sock",
     "A second listener for the cluster controller alone (a Unix socket, or an address under "
     "the same loopback rule): the same API, with its own 64 connections."},
    {"max_connections", "N", "1024", "1024", "Connections listen holds at once (1 to 4096)."},
    {"max_client_connections", "N", "32", "32",
     "Connections one client address may hold on listen (1 to 4096)."},
    {"client_timeout", "DURATION", "10s", "10s",
     "A connection on listen idle this long is closed (1s to 1h)."},
    {"read_auth", "none|token", "none", "none",
     "token: every GET but /healthz needs the bearer token too (needs token_file)."},
    {"token_file", "PATH", "none", "/etc/pfi/token",
     "Bearer token every change must carry, and every read with read_auth = token (a file "
     "only root can read, mode 0600).  Without it the API answers reads only."},
    {"db", "PATH", "pfi-serve.db", "/var/lib/pfi/serve.db", "SQLite state and audit log."},
    {"journal", "PATH",
     "$PFI_JOURNAL, else /var/lib/pfi/journal as root, ~/.local/state/pfi/journal otherwise; a "
     "simulated node's: $PFI_SIM_STATE.journal",
     "/var/lib/pfi/journal",
     "Journal of the GPUs' original power limits, restored on exit and after a crash (shared "
     "with pfi sweep and read by pfi restore)."},
    {"backend", "auto|nvml|sim", "auto",
     "sim", "auto: NVML when it lists a GPU, else the daemon refuses to start; nvml insists on "
     "NVML; sim is the embedded simulator."},
    {"nvml_lib", "PATH", "libnvidia-ml.so.1", "libnvidia-ml.so.1", "The NVML library to load."},
    {"sim", "PRESET|FILE", "h200x8-dense", "h200x8-dense",
     "The simulated node (a preset of pfi sim presets, or a file of pfi sim config); implies "
     "backend = sim unless a backend is set."},
    {"backend_arg", "STRING", "none", "h200x8-dense", "The backend's argument: sim or nvml_lib."},
    {"read_only", "yes|no", "no", "no", "Observe only: never change a power limit."},
    {"model", "PATH", "none", "/etc/pfi/model.json",
     "Runtime predictor (pfi model train --out FILE): the curves of jobs registered without one, "
     "from their telemetry."},
    {"probe_library", "PATH|public", "none", "public",
     "Measured curves a job's probe is read through: a store of sweeps, or public for the "
     "public sweeps in $PFI_DATA_DIR.  Without one a probe fits a power law."},
    {"discover", "yes|no", "yes", "yes",
     "Find jobs from the GPUs' processes (Slurm's cgroup, Kubernetes' pod, else the process "
     "group) and register and retire them."},
    {"proc_root", "PATH", "/proc", "/proc", "Where processes are read."},
    {"slurm_log", "yes|no", "yes", "yes",
     "A discovered Slurm job with no log of its own is followed through the output file Slurm "
     "states for it (scontrol show job, else squeue --json)."},
    {"log_switch_after", "DURATION", "30s", "30s",
     "A discovered job whose stdout and stderr are two files is followed through the other one "
     "once the followed one has shown no throughput this long and the other shows some."},
    {"budget", "BUDGET|none", "none", "80%",
     "Budget applied at start (pfi(1) BUDGETS): watts (4000W, 4kW), a share of the sum of the "
     "GPUs' default limits (80%), or a cut (cut=20%, the same as 80%).  none: nothing is "
     "changed until a budget is set through the API."},
    {"resume", "yes|no", "no", "no",
     "Re-apply the last budget set through the API (kept in db); limits held from before a "
     "restart take precedence.  no: a start says which saved budget it leaves out."},
    {"on_stop", "auto|restore|hold", "auto", "hold",
     "At a stop with a budget or caps in force: restore the original limits, or hold the limits "
     "(the journal is kept for pfi restore); auto holds under a cluster controller and while a "
     "grid event's limit applies (its ramp, window or restore), and restores otherwise.  A "
     "file named as the journal plus .hold-next-stop (written by a package upgrade before its "
     "restart) makes the next stop hold, whatever this says, and is removed by it (and by a "
     "start)."},
    {"default_sla", "SLOWDOWN|none", "none", "10%",
     "Largest slowdown (0.1 or 10%) of jobs that register no SLA of their own."},
    {"sample_interval", "DURATION", "1s", "500ms",
     "Telemetry period, 10ms to 60s (also the step of a ramp)."},
    {"reoptimize_interval", "DURATION", "30s", "30s",
     "How often the jobs' curves are re-estimated and the caps re-planned."},
    {"min_change_interval", "DURATION", "10s", "10s",
     "At most one re-planned change (not one asked for) per this interval."},
    {"hysteresis", "WATTS", "5W", "5W",
     "A re-plan that moves no cap by more than this is not applied."},
    {"watchdog_timeout", "DURATION", "0 (off)", "30s",
     "Heartbeat timeout when a cluster controller's heartbeat gives none; armed by the first "
     "heartbeat."},
    {"safe_budget", "min|BUDGET", "min", "60%",
     "What the watchdog applies when the heartbeats stop: min (every GPU at its minimum), or "
     "a budget as for budget."},
    {"max_body", "BYTES", "65536", "65536", "Largest request body accepted (1 to 16 MiB)."},
    {"threads", "N", "4", "4", "HTTP worker threads (1 to 64)."},
    {"port_file", "PATH", "none", "/run/pfi/port",
     "Write the address listened on here (useful with port 0)."},
    {"openadr_vtn_url", "URL", "none (no OpenADR client)", "https://vtn.example/openadr3",
     "The OpenADR 3.0 VTN's API base: the node then polls it for its program's events and "
     "takes them as grid events (needs openadr_client_id, openadr_secret_file, "
     "openadr_program)."},
    {"openadr_token_url", "URL", "VTN_URL/auth/token", "https://vtn.example/oauth/token",
     "The OAuth 2.0 token endpoint (client credentials)."},
    {"openadr_client_id", "STRING", "none", "pfi-node-7", "The OAuth 2.0 client id."},
    {"openadr_secret_file", "PATH", "none", "/etc/pfi/openadr.secret",
     "The client secret: the file's first line (mode 0600)."},
    {"openadr_program", "STRING", "none", "site-dr", "The programName whose events are taken."},
    {"openadr_resource", "STRING", "node", "node",
     "The resourceName of the reports posted and of the VEN's registration."},
    {"openadr_callback_url", "URL", "none (polling alone)", "http://10.0.0.7:9455",
     "This daemon's address as the VTN reaches it: the node subscribes to its program's events "
     "and polls at once when notified (it still polls every openadr_poll)."},
    {"openadr_ven_name", "STRING", "the client id", "gpu-node-7",
     "The venName the node registers as with the VTN (POST /vens) when the VTN offers it."},
    {"openadr_poll", "DURATION", "10s", "10s", "How often the VTN is polled for events."},
    {"openadr_timeout", "DURATION", "5s", "5s", "Each request to the VTN gives up after this."},
    {"openadr_ramp", "DURATION", "5m", "5m",
     "Ramp down before and restore after each event from the VTN."},
    {"openadr_max_skew", "DURATION", "30s", "30s",
     "The node's clock and the VTN's (its answers' Date) may disagree by this much; beyond it "
     "the error is counted and each event's window is widened by the skew on both sides."},
    {"openadr_simple_cut_1", "PERCENT", "10%", "10%",
     "The cut of the node's baseline a SIMPLE level 1 event asks for."},
    {"openadr_simple_cut_2", "PERCENT", "20%", "20%", "The same for SIMPLE level 2."},
    {"openadr_simple_cut_3", "PERCENT", "30%", "30%", "The same for SIMPLE level 3."},
    {"openadr_randomize_seed", "N", "0", "7",
     "With the venName and the event id, how late a SIMPLE event with a randomizeStart starts "
     "(the same at every poll and restart); another seed draws other offsets."},
    {"openadr_non_gpu_power", "WATTS", "0", "2kW",
     "What the node draws besides its GPUs (CPUs, fans, network): taken off each import limit "
     "of the VTN for the GPUs' budget (pfi caps only the GPUs) and added to the DEMAND and "
     "USAGE reported."},
    {"openadr_sla", "keep|yield", "keep", "yield",
     "An event of the VTN the jobs' SLAs cannot meet is taken all the same: keep holds the least "
     "the node can with the SLAs kept (the shortfall shows in its report), yield lets the SLAs "
     "give way to the VTN's events."},
};

const pfi_serve_key *pfi_serve_config_keys(int *n)
{
    *n = (int)(sizeof keys / sizeof keys[0]);
    return keys;
}

int pfi_serve_config_set(pfi_serve_config *c, const char *key, const char *v, pfi_err *err)
{
    const pfi_serve_key *k = NULL;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && !k; i++)
        if (!strcmp(key, keys[i].name))
            k = &keys[i];
    if (!k)
        return pfi_err_set(err, PFI_EINVAL, "unknown setting '%s' (see pfi-serve.conf(5))", key);
    /* `model =` from a template whose variable was unset would otherwise run without a
     * predictor, `journal =` at the default path, without a word.  default_sla has taken an
     * empty value as none since it was added, and keeps it; the budgets say what they take. */
    if (!*v && strcmp(key, "default_sla") && strcmp(key, "budget") && strcmp(key, "safe_budget"))
        return pfi_err_set(err, PFI_EINVAL,
                           "%s: empty value (leave the setting out for its default: %s)", key,
                           k->dflt);
    if (!strncmp(key, "openadr_", 8)) {
        int rc = pfi_ven_config_set(&c->openadr, key + 8, v, err);
        return rc == PFI_OK ? rc : pfi_err_prefix(err, "%s: ", key);
    }
    if (!strcmp(key, "listen"))
        return set_str(c->listen, sizeof c->listen, key, v, err);
    if (!strcmp(key, "control_listen"))
        return set_str(c->control_listen, sizeof c->control_listen, key, v, err);
    if (!strcmp(key, "read_auth")) {
        if (strcmp(v, "none") && strcmp(v, "token"))
            return pfi_err_set(err, PFI_EINVAL, "read_auth: expected none or token, got '%s'", v);
        c->read_auth = !strcmp(v, "token");
        return PFI_OK;
    }
    if (!strcmp(key, "client_timeout")) {
        int rc = set_duration(&c->client_timeout_s, key, v, err);
        if (rc == PFI_OK && !(c->client_timeout_s >= 1 && c->client_timeout_s <= 3600))
            return pfi_err_set(err, PFI_ERANGE, "client_timeout: must be 1s..1h");
        return rc;
    }
    if (!strcmp(key, "allow_remote"))
        return set_bool(&c->allow_remote, key, v, err);
    if (!strcmp(key, "port_file"))
        return set_str(c->port_file, sizeof c->port_file, key, v, err);
    if (!strcmp(key, "token_file"))
        return set_str(c->token_file, sizeof c->token_file, key, v, err);
    if (!strcmp(key, "db"))
        return set_str(c->db, sizeof c->db, key, v, err);
    if (!strcmp(key, "model"))
        return set_str(c->model, sizeof c->model, key, v, err);
    if (!strcmp(key, "probe_library"))
        return set_str(c->probe_library, sizeof c->probe_library, key, v, err);
    if (!strcmp(key, "journal"))
        return set_str(c->journal, sizeof c->journal, key, v, err);
    if (!strcmp(key, "discover"))
        return set_bool(&c->discover, key, v, err);
    if (!strcmp(key, "proc_root"))
        return set_str(c->proc_root, sizeof c->proc_root, key, v, err);
    if (!strcmp(key, "slurm_log"))
        return set_bool(&c->slurm_log, key, v, err);
    if (!strcmp(key, "log_switch_after"))
        return set_duration(&c->log_switch_after_s, key, v, err);
    if (!strcmp(key, "backend")) {
        if (strcmp(v, "auto") && strcmp(v, "sim") && strcmp(v, "nvml"))
            return pfi_err_set(err, PFI_EINVAL, "backend: expected auto, nvml or sim, got '%s'",
                               v);
        return set_str(c->backend, sizeof c->backend, key, v, err);
    }
    if (!strcmp(key, "sim") && !c->backend[0]) /* a simulated node asks for the simulator */
        snprintf(c->backend, sizeof c->backend, "sim");
    if (!strcmp(key, "sim") || !strcmp(key, "nvml_lib") || !strcmp(key, "backend_arg"))
        return set_str(c->backend_arg, sizeof c->backend_arg, key, v, err);
    if (!strcmp(key, "read_only"))
        return set_bool(&c->read_only, key, v, err);
    if (!strcmp(key, "resume"))
        return set_bool(&c->resume, key, v, err);
    if (!strcmp(key, "on_stop")) {
        if (!strcmp(v, "auto"))
            c->on_stop = PFI_SERVE_ON_STOP_AUTO;
        else if (!strcmp(v, "restore"))
            c->on_stop = PFI_SERVE_ON_STOP_RESTORE;
        else if (!strcmp(v, "hold"))
            c->on_stop = PFI_SERVE_ON_STOP_HOLD;
        else
            return pfi_err_set(err, PFI_EINVAL, "on_stop: expected auto, restore or hold, got '%s'",
                               v);
        return PFI_OK;
    }
    if (!strcmp(key, "sample_interval")) {
        int rc = set_duration(&c->sample_interval_s, key, v, err);
        if (rc == PFI_OK && (c->sample_interval_s < 0.01 || c->sample_interval_s > 60))
            return pfi_err_set(err, PFI_ERANGE, "sample_interval: must be 10ms..60s");
        return rc;
    }
    if (!strcmp(key, "reoptimize_interval"))
        return set_duration(&c->reoptimize_interval_s, key, v, err);
    if (!strcmp(key, "min_change_interval"))
        return set_duration(&c->min_change_interval_s, key, v, err);
    if (!strcmp(key, "watchdog_timeout"))
        return set_duration(&c->watchdog_timeout_s, key, v, err);
    if (!strcmp(key, "hysteresis"))
        return set_watts(&c->hysteresis_w, key, v, err);
    if (!strcmp(key, "budget"))
        return set_budget(c->budget, sizeof c->budget, key, v, 1, 0, err);
    if (!strcmp(key, "safe_budget"))
        return set_budget(c->safe_budget, sizeof c->safe_budget, key, v, 0, 1, err);
    if (!strcmp(key, "default_sla")) {
        if (!*v || !strcasecmp(v, "none")) {
            c->default_sla = NAN;
            return PFI_OK;
        }
        double s;
        if (pfi_parse_slowdown(v, &s, NULL) != PFI_OK)
            return pfi_err_set(err, PFI_EINVAL,
                               "default_sla: expected a max slowdown like 0.1 or 10%%, got '%s'", v);
        c->default_sla = s;
        return PFI_OK;
    }
    if (!strcmp(key, "max_body") || !strcmp(key, "threads") ||
        !strcmp(key, "max_client_connections") || !strcmp(key, "max_connections")) {
        int thr = !strcmp(key, "threads"), per = !strcmp(key, "max_client_connections");
        int all = !strcmp(key, "max_connections");
        int n, rc = pfi_num_int(v, 1, thr ? 64 : per || all ? 4096 : 16 << 20, key, &n, err);
        if (rc != PFI_OK)
            return rc;
        if (thr)
            c->threads = n;
        else if (per)
            c->max_client_conns = n;
        else if (all)
            c->max_conns = n;
        else
            c->max_body = (size_t)n;
        return PFI_OK;
    }
    return pfi_err_set(err, PFI_EINTERNAL, "setting '%s' is listed but not handled", key);
}

static int serve_set(void *ctx, const char *key, const char *value, pfi_err *err)
{
    return pfi_serve_config_set(ctx, key, value, err);
}

int pfi_serve_config_load(pfi_serve_config *c, const char *path, pfi_err *err)
{
    if (pfi_input_not_dir(path, err) != PFI_OK)
        return pfi_err_prefix(err, "config: ");
    FILE *f = fopen(path, "r");
    if (!f)
        return pfi_err_set(err, PFI_ENOENT, "cannot open config file %s: %s", path,
                           strerror(errno));
    int rc = pfi_conf_read(f, path, serve_set, c, err);
    fclose(f);
    return rc;
}

/* 1 when listen is a Unix socket or a TCP address on the loopback: the host is parsed, never
 * matched as a prefix ("127.0.0.1.example.com:0" is a name that DNS resolves anywhere). */
static int is_loopback(const char *listen)
{
    if (!strncmp(listen, "unix:", 5))
        return 1;
    char host[256];
    if (pfi_srv_listen_split(listen, host, sizeof host, NULL) != PFI_OK)
        return 0;
    if (!strcmp(host, "localhost"))
        return 1;
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

static int check_listen(const char *key, const char *l, int allow_remote, pfi_err *err)
{
    if (!l[0])
        return pfi_err_set(err, PFI_EINVAL, "%s: must not be empty", key);
    if (!strncmp(l, "unix:", 5)) {
        if (!l[5])
            return pfi_err_set(err, PFI_EINVAL, "%s: unix: needs a socket path "
                                                "(unix:/run/pfi/serve.sock)",
                               key);
        return PFI_OK;
    }
    int rc = pfi_srv_listen_split(l, NULL, 0, err);
    if (rc != PFI_OK)
        return rc;
    if (!is_loopback(l) && !allow_remote)
        return pfi_err_set(err, PFI_EPERM,
                           "%s %s is not a loopback address or a Unix socket; set "
                           "allow_remote = yes to expose the API on the network",
                           key, l);
    return PFI_OK;
}

int pfi_serve_config_check(const pfi_serve_config *c, pfi_err *err)
{
    int rc = check_listen("listen", c->listen, c->allow_remote, err);
    if (rc == PFI_OK && c->control_listen[0])
        rc = check_listen("control_listen", c->control_listen, c->allow_remote, err);
    if (rc != PFI_OK)
        return rc;
    if (c->control_listen[0] && !strcmp(c->control_listen, c->listen))
        return pfi_err_set(err, PFI_EINVAL, "control_listen must differ from listen");
    if (c->read_auth && !c->token_file[0])
        return pfi_err_set(err, PFI_EINVAL, "read_auth = token needs a token_file");
    if (!c->db[0])
        return pfi_err_set(err, PFI_EINVAL, "db: must not be empty");
    if (c->reoptimize_interval_s < c->sample_interval_s)
        return pfi_err_set(err, PFI_EINVAL,
                           "reoptimize_interval (%gs) must be at least sample_interval (%gs)",
                           c->reoptimize_interval_s, c->sample_interval_s);
    return PFI_OK;
}
