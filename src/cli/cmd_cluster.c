/* SPDX-License-Identifier: Apache-2.0 */
/* pfi cluster: the site power controller over Slurm and the node daemons (docs/cluster.md).
 *   pfi cluster serve   [options]          run the controller and its HTTP API until signalled
 *   pfi cluster status  [options] [--json] nodes, jobs and caps as the controller sees them
 *   pfi cluster budget BUDGET [--ramp T]   one-shot: apply a site budget and exit
 *   pfi cluster topology [--json]          what Slurm says: nodes, GPUs, running jobs */
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cluster/cluster.h"
#include "store/store.h"
#include "util/budget.h"
#include "util/fs.h"
#include "util/num.h"
#include "util/units.h"

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static int copy_opt(char *dst, size_t n, const char *v, const char *what)
{
    if (!v)
        return 0;
    if (strlen(v) >= n) {
        fprintf(stderr, "pfi cluster: --%s too long\n", what);
        return -1;
    }
    snprintf(dst, n, "%s", v);
    return 0;
}

static int print_table(pfi_cl *c)
{
    json_t *n = pfi_cl_json_nodes(c), *a = pfi_cl_json_allocation(c);
    json_t *arr = json_object_get(n, "nodes");
    printf("%-16s %-4s %5s %10s  %s\n", "NODE", "UP", "GPUS", "CAPS(W)", "WHY");
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        const char *why = json_string_value(json_object_get(o, "why"));
        int up = json_is_true(json_object_get(o, "up"));
        double caps = json_number_value(json_object_get(o, "cap_sum_w"));
        char cw[32];
        /* A node that never answered holds caps no one knows: not 0 W. */
        snprintf(cw, sizeof cw, !up && !(caps > 0) ? "-" : "%.0f", caps);
        printf("%-16s %-4s %5lld %10s  %s\n", json_string_value(json_object_get(o, "name")),
               up ? "yes" : "no", (long long)json_integer_value(json_object_get(o, "n_gpus")), cw,
               why ? why : "");
    }
    json_t *b = json_object_get(a, "budget_w");
    pfi_err e = {0};
    /* The one-shot's own view: a running controller's budget is that controller's to say. */
    const char *budget = json_is_number(b)               ? "set"
                         : pfi_cl_commanded(c, &e) ? "held by a running controller (ask it: GET "
                                                     "/v1/allocation)"
                                                   : "none";
    printf("site: %lld nodes (%lld up), %lld GPUs, %lld jobs, caps %.0f W of %.0f W default, "
           "budget %s\n",
           (long long)json_integer_value(json_object_get(a, "nodes")),
           (long long)json_integer_value(json_object_get(a, "nodes_up")),
           (long long)json_integer_value(json_object_get(a, "gpus")),
           (long long)json_integer_value(json_object_get(a, "jobs")),
           json_number_value(json_object_get(a, "cap_sum_w")),
           json_number_value(json_object_get(a, "site_default_w")), budget);
    json_decref(n);
    json_decref(a);
    return PFI_EXIT_OK;
}

/* What a share was of: "budget 70% of 5600 W (the sum of the site's GPUs' default limits)". */
static void print_reference(pfi_cl *c, const pfi_budget *b)
{
    json_t *a = pfi_cl_json_allocation(c);
    char d[160];
    printf("budget %s\n", pfi_budget_describe(b, json_number_value(json_object_get(
                                                      a, "site_default_w")),
                                              PFI_CL_BUDGET_REF, d, sizeof d));
    json_decref(a);
}

/* Slurm's view of the site: nodes with their GPUs, jobs with theirs on each node. */
/* What the controller would work from with these options: --topology's file when given, else
 * Slurm's. */
static int print_topology(const pfi_cl_config *cfg, int as_json)
{
    pfi_err err = {0};
    pfi_cl_topo t;
    if (pfi_cl_topo_load(cfg, &t, &err) != PFI_OK)
        return pfi_cli_fail("cluster", &err);
    int rc = PFI_EXIT_OK;
    if (as_json) {
        char *s = pfi_cl_topo_to_json(&t);
        if (!s || printf("%s\n", s) < 0)
            rc = PFI_EXIT_FAIL;
        free(s);
    } else {
        for (int i = 0; i < t.n_nodes; i++)
            printf("node %-16s %2d GPUs  %s\n", t.nodes[i].name, t.nodes[i].n_gpus,
                   t.nodes[i].state);
        for (int j = 0; j < t.n_jobs; j++) {
            printf("job  %-16s", t.jobs[j].id);
            for (int p = 0; p < t.jobs[j].n_parts; p++)
                printf(" %s:%d", t.nodes[t.jobs[j].parts[p].node].name,
                       t.jobs[j].parts[p].n_gpus);
            printf("\n");
        }
    }
    pfi_cl_topo_free(&t);
    return rc;
}

/* The API and the heartbeat loop until SIGTERM or SIGINT. */
/* Grid events in db; the OpenADR client when its config file is given. */
static int grid_setup(pfi_cl *c, const char *db, const char *openadr, pfi_ven **ven)
{
    pfi_err err = {0};
    pfi_ven_config vc;
    pfi_ven_config_defaults(&vc, "site");
    *ven = NULL;
    if (pfi_cl_grid_open(c, db ? db : pfi_store_default_path(), &err) != PFI_OK ||
        (openadr && (pfi_ven_config_load(&vc, openadr, &err) != PFI_OK ||
                     pfi_cl_ven_start(c, &vc, ven, &err) != PFI_OK)))
        return pfi_cli_fail("cluster", &err);
    pfi_cl_set_ven(c, *ven);
    return PFI_EXIT_OK;
}

/* pfi_cl_budget_resume, its message said on stderr (the operator's log). */
static int resume_budget(pfi_cl *c, int tries)
{
    char msg[PFI_ERR_MSG_MAX + 160];
    int pending = pfi_cl_budget_resume(c, tries == 0, msg, sizeof msg);
    if (msg[0])
        fprintf(stderr, "pfi cluster: %s\n", msg);
    return pending;
}

static int serve(pfi_cl *c, const char *listen, const char *token, const char *port_file,
                 const char *const grid[2], const char *bt, const char *ramp_to, double ramp_s)
{
    pfi_err err = {0};
    pfi_cl_server *srv;
    int port = 0;
    pfi_ven *ven;
    int grc = grid_setup(c, grid[0], grid[1], &ven);
    if (grc != PFI_EXIT_OK)
        return grc;
    int resume = 0, tries = 0;
    if (bt && !ramp_to)
        pfi_cl_budget_save(c); /* set before the store opened */
    else if (!bt)
        resume = resume_budget(c, tries++);
    if (pfi_cl_server_start(c, listen, token, &srv, &port, &err) != PFI_OK)
        return pfi_cli_fail("cluster", &err);
    if (port_file) {
        /* Whoever waits for the port file would wait for ever: fail instead. */
        char line[32];
        snprintf(line, sizeof line, "%d\n", port);
        if (pfi_write_new(port_file, line, &err) != PFI_OK) {
            pfi_cl_server_stop(srv);
            pfi_cl_set_ven(c, NULL);
            pfi_ven_stop(ven);
            return pfi_cli_fail("cluster", &err);
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (pfi_cl_start_loop(c, &err) != PFI_OK) {
        pfi_cl_server_stop(srv);
        pfi_cl_set_ven(c, NULL);
        pfi_ven_stop(ven);
        return pfi_cli_fail("cluster", &err);
    }
    fprintf(stderr, "pfi cluster: listening on port %d\n", port);
    /* A ramp at start is stepped by the loop: stepped here before it, nothing listened, no
     * heartbeat went out and no change could correct it for the whole ramp. */
    if (ramp_to && pfi_cl_set_budget_text(c, ramp_to, ramp_s, &err) != PFI_OK) {
        pfi_cl_server_stop(srv);
        pfi_cl_set_ven(c, NULL);
        pfi_ven_stop(ven);
        return pfi_cli_fail("cluster", &err);
    }
    for (int k = 1; !stop_flag; k++) {
        usleep(100000);
        if (resume && k % (PFI_CL_RESUME_EVERY_S * 10) == 0)
            resume = resume_budget(c, tries++);
    }
    pfi_cl_server_stop(srv);
    pfi_cl_set_ven(c, NULL);
    pfi_ven_stop(ven);
    return PFI_EXIT_OK;
}

/* The budget of `budget BUDGET` or --budget: -1 when it reads (or there is none), else the exit
 * code.  Bad text is refused before anything is asked of Slurm or the nodes. */
static int budget_arg(const char *what, char **pos, int npos, const char *opt, const char **bt,
                      pfi_budget *b)
{
    if (!strcmp(what, "budget") && npos != 2) {
        fprintf(stderr, "pfi cluster budget: give one budget: 5600W, 70%%, cut=30%% or none\n");
        return PFI_EXIT_USAGE;
    }
    *bt = !strcmp(what, "budget") ? pos[1] : opt;
    pfi_err err = {0};
    if (*bt && strcmp(*bt, "none") && pfi_budget_parse(*bt, b, &err) != PFI_OK)
        return pfi_cli_fail("cluster", &err);
    return -1;
}

/* The options as given; settings() turns them into the controller's config. */
typedef struct cl_opts {
    const char *listen, *token, *node_url, *node_map, *node_token, *topo, *hb, *ttl, *timeout,
        *ramp, *budget, *port_file, *grid[2], *client_timeout, *max_conns, *max_client_conns,
        *read_auth;
    int as_json;
} cl_opts;

/* path as an absolute one, whether it exists yet or not (its folder's real path and its name,
 * else the working folder and path): the name made of it is the same before the database is
 * created and after (a relative --db named a first start otherwise than its restart, and the
 * nodes refused the restarted controller).  Into buf (PATH_MAX), or path itself. */
static const char *absolute(const char *path, char *buf, size_t n)
{
    if (realpath(path, buf))
        return buf;
    char dir[PATH_MAX], parent[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : path;
    if (slash)
        *slash = '\0';
    if (realpath(slash ? (dir[0] ? dir : "/") : ".", parent) &&
        (size_t)snprintf(buf, n, "%s/%s", strcmp(parent, "/") ? parent : "", base) < n)
        return buf;
    return path;
}

/* The controller's name to the nodes (cluster.h: a node held by one refuses another): its
 * host, and a hash of its database and address, so the same controller restarted has the same
 * name and a second one beside it (a test instance, both halves of a failover) another. */
static void controller_name(const cl_opts *o, char *out, size_t n)
{
    char host[72] = "", real[PATH_MAX];
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "localhost");
    host[64] = '\0';
    for (char *p = host; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-", *p))
            *p = '_';
    const char *db = o->grid[0] ? o->grid[0] : getenv("PFI_DB");
    if (db)
        db = absolute(db, real, sizeof real);
    uint32_t h = 2166136261u;
    for (const char *parts[] = {db ? db : "", "|", o->listen ? o->listen : ""}, **q = parts;
         q < parts + 3; q++)
        for (const unsigned char *p = (const unsigned char *)*q; *p; p++)
            h = (h ^ *p) * 16777619u;
    snprintf(out, n, "pfi-cluster@%s#%08x", host, h);
}

/* cfg and ramp_s from the options: -1 when they are good, else the exit code (said why). */
static int settings(const cl_opts *o, pfi_cl_config *cfg, double *ramp_s)
{
    pfi_err err = {0};
    pfi_cl_config_defaults(cfg);
    controller_name(o, cfg->name, sizeof cfg->name);
    *ramp_s = 0;
    if (copy_opt(cfg->node_url, sizeof cfg->node_url, o->node_url, "node-url") ||
        copy_opt(cfg->node_map, sizeof cfg->node_map, o->node_map, "node-map") ||
        copy_opt(cfg->node_token_file, sizeof cfg->node_token_file, o->node_token, "node-token") ||
        copy_opt(cfg->topo_file, sizeof cfg->topo_file, o->topo, "topology"))
        return PFI_EXIT_USAGE;
    /* Refused here, before Slurm or a node is asked: a controller that would lock every reader
     * out (no token to give) or leave reads open where token was meant must not start. */
    if (o->read_auth && strcmp(o->read_auth, "none") && strcmp(o->read_auth, "token")) {
        fprintf(stderr, "pfi cluster: --read-auth: expected none or token, got '%s'\n",
                o->read_auth);
        return PFI_EXIT_USAGE;
    }
    cfg->read_auth = o->read_auth && !strcmp(o->read_auth, "token");
    if (cfg->read_auth && !o->token) {
        fprintf(stderr, "pfi cluster: --read-auth token needs --token-file (the bearer token "
                        "every read must then carry)\n");
        return PFI_EXIT_USAGE;
    }
    if ((o->hb && pfi_parse_duration(o->hb, &cfg->heartbeat_s, &err)) ||
        (o->ttl && pfi_parse_duration(o->ttl, &cfg->node_ttl_s, &err)) ||
        (o->timeout && pfi_parse_duration(o->timeout, &cfg->timeout_s, &err)) ||
        (o->ramp && pfi_parse_duration(o->ramp, ramp_s, &err)) ||
        (o->client_timeout &&
         pfi_parse_duration(o->client_timeout, &cfg->client_timeout_s, &err)) ||
        (o->max_conns &&
         pfi_num_int(o->max_conns, 1, 4096, "max-connections", &cfg->max_conns, &err)) ||
        (o->max_client_conns && pfi_num_int(o->max_client_conns, 1, 4096,
                                            "max-client-connections", &cfg->max_client_conns,
                                            &err)))
        return pfi_cli_fail("cluster", &err);
    /* The nodes refuse a ttl over a day (every heartbeat then failed, no watchdog armed, and
     * the nodes still showed up), and a heartbeat no shorter than the ttl lets every watchdog
     * trip between two beats (the site at its safe budget). */
    if (cfg->node_ttl_s > 86400) {
        fprintf(stderr, "pfi cluster: --node-ttl: at most 86400 s (a day), the longest a node "
                        "daemon's watchdog takes; got %s\n", o->ttl);
        return PFI_EXIT_USAGE;
    }
    if (cfg->node_ttl_s > 0 && cfg->heartbeat_s >= cfg->node_ttl_s) {
        fprintf(stderr, "pfi cluster: --heartbeat %g s must be shorter than --node-ttl %g s: "
                        "every node's watchdog would trip between two heartbeats\n",
                cfg->heartbeat_s, cfg->node_ttl_s);
        return PFI_EXIT_USAGE;
    }
    return -1;
}

/* What follows the refresh: the status, a one-shot budget, or the daemon. */
static int act(pfi_cl *c, const char *what, const cl_opts *o, const char *bt, const pfi_budget *b,
               double ramp_s)
{
    pfi_err err = {0};
    if (pfi_cl_refresh(c, &err) != PFI_OK)
        return pfi_cli_fail("cluster", &err);
    if (!strcmp(what, "status"))
        return o->as_json ? pfi_cli_print_json(json_pack("{s:o, s:o, s:o}", "allocation",
                                                         pfi_cl_json_allocation(c), "nodes",
                                                         pfi_cl_json_nodes(c), "jobs",
                                                         pfi_cl_json_jobs(c)))
                          : print_table(c);
    if (!strcmp(what, "budget") && pfi_cl_commanded(c, &err))
        return pfi_cli_fail("cluster", &err); /* exit 1: nothing changed */
    int later = !strcmp(what, "serve") && bt && ramp_s > 0; /* the loop steps it */
    if (bt && !later && pfi_cl_set_budget_text(c, bt, ramp_s, &err) != PFI_OK)
        return pfi_cli_fail("cluster", &err);
    if (!strcmp(what, "budget")) {
        int rc = o->as_json ? pfi_cli_print_json(pfi_cl_json_allocation(c)) : print_table(c);
        if (!o->as_json && b->is_share)
            print_reference(c, b);
        return rc;
    }
    return serve(c, o->listen, o->token, o->port_file, o->grid, bt, later ? bt : NULL, ramp_s);
}

const char *const pfi_cli_actions_cluster[] = {"serve", "status", "budget", "topology", NULL};

int pfi_cmd_cluster(int argc, char **argv)
{
    cl_opts o = {.listen = "127.0.0.1:9460"};
    const pfi_opt opts[] = {
        {"listen", PFI_OPT_STR, &o.listen, "ADDR:PORT",
         "serve: API address (default 127.0.0.1:9460)"},
        {"port-file", PFI_OPT_STR, &o.port_file, "FILE", "serve: write the port listened on"},
        {"token-file", PFI_OPT_STR, &o.token, "FILE",
         "serve: bearer token for PUT/POST/DELETE, and for reads with --read-auth token "
         "(chmod 600); without one every change is refused"},
        PFI_OPT_ALIAS("token", PFI_OPT_STR, &o.token, "token-file"),
        {"read-auth", PFI_OPT_STR, &o.read_auth, "none|token",
         "serve: token: every GET but /healthz needs the bearer token too (needs --token-file; "
         "default none)"},
        {"node-url", PFI_OPT_STR, &o.node_url, "URL",
         "node daemon URL, %n = node name, %a = address (default http://%a:9455)"},
        {"node-map", PFI_OPT_STR, &o.node_map, "FILE", "lines 'NODE URL' overriding --node-url"},
        {"node-token-file", PFI_OPT_STR, &o.node_token, "FILE",
         "bearer token of the node daemons, sent on every request: needed for changes, and "
         "for reads where the nodes have read_auth = token"},
        PFI_OPT_ALIAS("node-token", PFI_OPT_STR, &o.node_token, "node-token-file"),
        {"topology", PFI_OPT_STR, &o.topo, "FILE",
         "nodes and jobs from a JSON file instead of Slurm (simulations)"},
        {"heartbeat", PFI_OPT_STR, &o.hb, "DURATION", "serve: heartbeat/refresh period (5s)"},
        {"node-ttl", PFI_OPT_STR, &o.ttl, "DURATION",
         "node daemons revert to safe caps after this silence (30s)"},
        {"timeout", PFI_OPT_STR, &o.timeout, "DURATION", "per node request (2s)"},
        {"budget", PFI_OPT_STR, &o.budget, "BUDGET",
         "serve: initial site budget (4kW, 70% of the GPUs' default limits, cut=30%)"},
        {"ramp", PFI_OPT_STR, &o.ramp, "DURATION", "reach the budget over this time"},
        {"client-timeout", PFI_OPT_STR, &o.client_timeout, "DURATION",
         "serve: close an API connection idle this long (10s; 1s to 1h)"},
        {"max-connections", PFI_OPT_STR, &o.max_conns, "N",
         "serve: API connections held at once (1024; 1 to 4096)"},
        {"max-client-connections", PFI_OPT_STR, &o.max_client_conns, "N",
         "serve: API connections one client address may hold (32; 1 to 4096)"},
        {"json", PFI_OPT_FLAG, &o.as_json, NULL, "one JSON document on stdout"},
        {"db", PFI_OPT_STR, &o.grid[0], "FILE", "serve: grid events, site power (default $PFI_DB)"},
        {"openadr", PFI_OPT_STR, &o.grid[1], "FILE", "serve: OpenADR 3.0 client settings"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi cluster serve|status|budget BUDGET|topology [options]",
        "The site power controller: learns nodes and jobs from Slurm (sinfo/squeue --json), "
        "jobs' curves from each node's pfi serve, allocates a site budget (\"5600W\", \"70%\" of "
        "the sum of every GPU's default limit, or \"cut=30%\": pfi help budget) across all jobs, and hands each "
        "node its caps, lowering everywhere before raising anywhere.",
        opts,
        "pfi cluster topology                               # nodes, GPUs and jobs as Slurm reports them\n"
        "pfi cluster serve --node-token-file /etc/pfi/token --token-file /etc/pfi/cluster-token --heartbeat 5s\n"
        "pfi cluster budget cut=30% --node-token-file /etc/pfi/token   # one shot, without the daemon"};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    if (npos < 1) {
        pfi_args_usage(&spec, stderr);
        return PFI_EXIT_USAGE;
    }
    const char *what = pos[0];
    pfi_cl_config cfg;
    double ramp_s;
    if ((rc = settings(&o, &cfg, &ramp_s)) >= 0)
        return rc;

    if (!pfi_cli_is_action(pfi_cli_actions_cluster, what)) {
        fprintf(stderr, "pfi cluster: unknown action '%s' (", what);
        pfi_cli_actions_list(stderr, pfi_cli_actions_cluster);
        fprintf(stderr, ")\n");
        return PFI_EXIT_USAGE;
    }
    /* A stray word or a --budget where it means nothing is refused: ignored, `pfi cluster
     * status 70%` would look as if it had set something. */
    if (strcmp(what, "budget") && npos > 1) {
        fprintf(stderr, "pfi cluster %s: unexpected argument '%s' (see --help)\n", what, pos[1]);
        return PFI_EXIT_USAGE;
    }
    if (strcmp(what, "serve") && o.budget) {
        fprintf(stderr, "pfi cluster %s: --budget is the initial budget of serve; %s\n", what,
                strcmp(what, "budget") ? "this action changes nothing"
                                       : "give the budget once: pfi cluster budget 5600W");
        return PFI_EXIT_USAGE;
    }
    if (!strcmp(what, "topology"))
        return print_topology(&cfg, o.as_json);
    const char *bt;
    pfi_budget b = {0};
    if ((rc = budget_arg(what, pos, npos, o.budget, &bt, &b)) >= 0)
        return rc;
    pfi_err err = {0};
    if (strcmp(what, "serve"))
        cfg.heartbeat_s = 0;
    pfi_cl *c;
    if (pfi_cl_open(&cfg, &c, &err) != PFI_OK)
        return pfi_cli_fail("cluster", &err);
    rc = act(c, what, &o, bt, &b, ramp_s);
    pfi_cl_close(c);
    return rc;
}
