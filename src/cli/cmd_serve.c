/* SPDX-License-Identifier: Apache-2.0 */
/* pfi serve: the node power controller daemon (src/serve/serve.h, docs/serve.md). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "study/model_io.h"
#include "serve/serve.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

/* Each --set KEY=VALUE into *cfg: -1 to go on, else an exit status (the message printed). */
static int apply_sets(pfi_serve_config *cfg, const pfi_strlist *sets)
{
    pfi_err err = {0};
    for (int i = 0; i < sets->n; i++) {
        char key[64];
        const char *eq = strchr(sets->v[i], '=');
        if (!eq || eq == sets->v[i] || (size_t)(eq - sets->v[i]) >= sizeof key) {
            fprintf(stderr, "pfi serve: --set expects KEY=VALUE, got '%s'\n", sets->v[i]);
            return PFI_EXIT_USAGE;
        }
        memcpy(key, sets->v[i], (size_t)(eq - sets->v[i]));
        key[eq - sets->v[i]] = '\0';
        if (pfi_serve_config_set(cfg, key, eq + 1, &err) != PFI_OK)
            return pfi_cli_fail("serve", &err);
    }
    return -1;
}

int pfi_cmd_serve(int argc, char **argv)
{
    pfi_cli_hw hw = {0};
    const char *config = NULL, *listen = NULL, *token = NULL, *db = NULL, *journal = NULL,
               *budget = NULL, *port_file = NULL, *sample = NULL, *watchdog = NULL,
               *safe = NULL, *sla = NULL, *model = NULL;
    pfi_strlist sets = {0};
    const pfi_opt opts[] = {
        PFI_CLI_HW_OPTS(hw),
        {"config", PFI_OPT_STR, &config, "FILE", "settings file, pfi-serve.conf(5)"},
        {"listen", PFI_OPT_STR, &listen, "ADDR",
         "127.0.0.1:9455 (default), [::1]:PORT, unix:/run/pfi/serve.sock; port 0 = any free"},
        {"token-file", PFI_OPT_STR, &token, "FILE",
         "bearer token for changes, and for reads with read_auth = token (chmod 600; without it "
         "the API is read-only)"},
        {"db", PFI_OPT_STR, &db, "FILE", "state and audit log (SQLite; default pfi-serve.db)"},
        {"journal", PFI_OPT_STR, &journal, "FILE",
         "original limits journal (default $PFI_JOURNAL, else /var/lib/pfi/journal as root, "
         "~/.local/state/pfi/journal otherwise; a simulated node's: $PFI_SIM_STATE.journal, "
         "journal-sim in that folder without one)"},
        {"budget", PFI_OPT_STR, &budget, "BUDGET",
         "budget to apply at start: 4000W, 80% of the GPUs' default limits, cut=20% (pfi help "
         "budget)"},
        {"port-file", PFI_OPT_STR, &port_file, "FILE", "write the address listened on here"},
        {"sample-interval", PFI_OPT_STR, &sample, "DURATION", "telemetry period (default 1s)"},
        {"watchdog-timeout", PFI_OPT_STR, &watchdog, "DURATION",
         "default heartbeat timeout in cluster mode (default off)"},
        {"safe-budget", PFI_OPT_STR, &safe, "BUDGET|min",
         "what the watchdog applies (default min)"},
        {"default-sla", PFI_OPT_STR, &sla, "SLOWDOWN", "SLA of jobs that give none (e.g. 0.1)"},
        {"model", PFI_OPT_STR, &model, "FILE",
         "runtime predictor from `pfi model train --out FILE` (curves of jobs from telemetry)"},
        {"set", PFI_OPT_MULTI, &sets, "KEY=VALUE", "any setting of pfi-serve.conf(5)"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi serve [--config FILE] [--listen ADDR] [--token-file FILE] [--backend auto|nvml|sim] ...",
        "Run the node power controller: an HTTP API to register jobs and set a power budget, "
        "PFI-aware caps applied safely (lower first, read back, then raise), Prometheus metrics "
        "at /metrics, an audit log in SQLite.  Original limits are journaled and restored on "
        "SIGTERM/SIGINT, or at the next start after a crash.",
        opts,
        "pfi serve --config /etc/pfi/serve.conf\n"
        "pfi serve --backend nvml --listen unix:/run/pfi/serve.sock --token-file /etc/pfi/token\n"
        "pfi serve --backend sim --budget 80%                # try it without GPUs"};
    int rc = pfi_cli_args_none(&spec, argc, argv, "serve");
    if (rc >= 0)
        return rc;
    pfi_err err = {0};
    static pfi_serve_config cfg;
    pfi_serve_config_defaults(&cfg);
    if (config && pfi_serve_config_load(&cfg, config, &err) != PFI_OK)
        return pfi_cli_fail("serve", &err);
    struct {
        const char *key, *val;
    } flags[] = {{"listen", listen},           {"token_file", token},
                 {"db", db},                   {"journal", journal},
                 {"budget", budget},           {"port_file", port_file},
                 {"sample_interval", sample},  {"watchdog_timeout", watchdog},
                 {"safe_budget", safe},        {"default_sla", sla},
                 {"model", model},
                 {"backend", hw.backend},      {"sim", hw.sim},
                 {"backend_arg", hw.sim ? NULL : hw.nvml_lib}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (flags[i].val && pfi_serve_config_set(&cfg, flags[i].key, flags[i].val, &err) != PFI_OK)
            return pfi_cli_fail("serve", &err);
    if ((rc = apply_sets(&cfg, &sets)) >= 0)
        return rc;
    if (hw.read_only)
        cfg.read_only = 1;
    /* Settings refused together (a network listen without allow_remote) are bad input as an
     * unknown setting is: exit status 2, which the systemd unit does not restart for ever. */
    if (pfi_serve_config_check(&cfg, &err) != PFI_OK) {
        pfi_cli_fail("serve", &err);
        return PFI_EXIT_USAGE;
    }

    pfi_cli_hw open = {cfg.backend[0] ? cfg.backend : NULL, NULL, NULL, cfg.read_only};
    if (strcmp(pfi_cli_backend_name(&open), "sim") == 0)
        open.sim = cfg.backend_arg[0] ? cfg.backend_arg : NULL;
    else
        open.nvml_lib = cfg.backend_arg[0] ? cfg.backend_arg : NULL;
    static pfi_model m;
    if (cfg.model[0] && pfi_model_load(cfg.model, &m, &err) != PFI_OK)
        return pfi_cli_fail("serve", &err);
    pfi_backend *b;
    if (pfi_cli_open_hw(&open, &b, &err) != PFI_OK)
        return pfi_cli_fail("serve", &err);
    if (pfi_backend_read_only(b)) /* PFI_READ_ONLY=1 in the environment forces it too */
        cfg.read_only = 1;

    pfi_cli_catch_stop_signals(on_signal); /* a closed terminal, a USR1: never without its restore */
    rc = pfi_serve_run(&cfg, b, cfg.model[0] ? &m : NULL, &stop_flag, &err);
    pfi_hw_close(b);
    if (rc != PFI_OK)
        return pfi_cli_fail("serve", &err);
    return PFI_EXIT_OK;
}
