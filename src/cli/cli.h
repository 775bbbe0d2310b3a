/* SPDX-License-Identifier: Apache-2.0 */
/* cli.h: what every subcommand shares: the command table, backend selection flags, error
 * printing and JSON output.  A subcommand is `int pfi_cmd_NAME(int argc, char **argv)` that
 * returns the process exit status. */
#ifndef PFI_CLI_CLI_H
#define PFI_CLI_CLI_H

#include <jansson.h>
#include <stdio.h>

#include "core/err.h"
#include "hw/hw.h"
#include "util/args.h"
#include "util/json_write.h"

#define PFI_COMMAND(name, fn, summary) int fn(int argc, char **argv);
#include "cli/commands.def"
#undef PFI_COMMAND
/* Subcommands that live in files of their own: pfi sim job (cmd_simjob.c), pfi sim demo
 * (cmd_demo.c), pfi runs show (cmd_show.c), pfi runs export (cmd_export.c). */
int pfi_cmd_sim_job(int argc, char **argv);
int pfi_cmd_sim_demo(int argc, char **argv);
int pfi_cmd_runs_show(int argc, char **argv);
int pfi_cmd_runs_export(int argc, char **argv);
/* A former command name kept for one release ("simjob" -> "sim job"): the function to call
 * and the name to use instead, or NULL. */
typedef struct pfi_cli_alias {
    const char *old, *now;
    int (*fn)(int argc, char **argv);
} pfi_cli_alias;
const pfi_cli_alias *pfi_cli_find_alias(const char *name);

/* Exit statuses: 0 ok, 1 runtime failure, 2 bad input: an unknown option, a malformed value,
 * one out of range or an empty one (PFI_EINVAL, PFI_ERANGE), as most Unix tools. */
#define PFI_EXIT_OK 0
#define PFI_EXIT_FAIL 1
#define PFI_EXIT_USAGE 2

/* Installs handler h (no SA_RESTART: a signal cuts a wait short) for every signal whose
 * default action ends the process without a core (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
 * SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGPWR), and ignores SIGPIPE: a
 * command that changed GPU limits restores them whichever one comes (Slurm's --signal=USR1@90
 * killed a sweep with its GPUs capped). */
void pfi_cli_catch_stop_signals(void (*h)(int));
/* Prints "pfi CMD: message" to stderr and returns the exit status for that error code
 * (PFI_EXIT_USAGE for PFI_EINVAL and PFI_ERANGE, PFI_EXIT_FAIL otherwise). */
int pfi_cli_fail(const char *cmd, const pfi_err *err);
/* Handles the result of pfi_args_parse: returns -1 to continue, or an exit status. */
int pfi_cli_args(const pfi_cmd_spec *spec, int argc, char **argv, char ***pos, int *npos,
                 int *dashdash);
/* The same for a command that takes options only: a positional argument is refused, naming
 * it ("pfi CMD: unexpected argument 'x'"). */
int pfi_cli_args_none(const pfi_cmd_spec *spec, int argc, char **argv, const char *cmd);

/* A command made of subcommands (pfi sim run, pfi model train, ...): each is a function like a
 * command's, called with argv[0] = its name.  pfi_cli_family dispatches to one, or prints the
 * family's help (its subcommands, then its examples; in a manual page every subcommand's own
 * options as well), or an error naming the unknown subcommand (exit 2). */
typedef struct pfi_cli_sub {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} pfi_cli_sub;
typedef struct pfi_cli_family_spec {
    const char *name;     /* "sim" */
    const char *summary;  /* one paragraph */
    const char *examples; /* as in pfi_cmd_spec */
    const pfi_cli_sub *subs;
    int n;
} pfi_cli_family_spec;
int pfi_cli_family(const pfi_cli_family_spec *fam, int argc, char **argv);
/* Options before a subcommand ("pfi model --fleet small eval"): says the subcommand comes
 * first, with the command put in order, and returns PFI_EXIT_USAGE; -1 when argv[1] is not an
 * option or no later word (before "--") names a subcommand.  Nothing is reordered: an option's
 * value may be such a word. */
int pfi_cli_family_late_sub(const pfi_cli_family_spec *fam, int argc, char **argv);
/* --seed wherever a command draws a simulated fleet (pfi sim fleet, evaluate, index, model, study):
 * the fleet's seed, one meaning everywhere.  seed: as parsed, INT_MIN when not given; fleet: 1
 * when this run draws the fleet (not when its runs come from --db or --public).  Refused (exit
 * 2, saying why, with hint if not NULL) when negative or when there is no fleet to seed; else
 * -1, *out the seed (default 1). */
int pfi_cli_fleet_seed(const char *cmd, int seed, int fleet, const char *hint,
                       unsigned long long *out);
/* The commands made of subcommands, each in its cmd_<name>.c; pfi_cli_family_of finds one by
 * name (NULL: a command of its own), so that pfi help knows which second word it can show. */
extern const pfi_cli_family_spec pfi_cli_family_bench, pfi_cli_family_model, pfi_cli_family_runs,
    pfi_cli_family_sim;
const pfi_cli_family_spec *pfi_cli_family_of(const char *name);
/* The actions of a command that takes one as its first word under a single table of options
 * (pfi cluster serve, pfi ctl job, pfi event add), each in its cmd_<name>.c, NULL-terminated:
 * the command dispatches on them and names them when given another word, and pfi help shows
 * `pfi help ctl job` (the same as pfi ctl job --help).  pfi_cli_actions_of finds a command's
 * (NULL: it has none). */
extern const char *const pfi_cli_actions_cluster[], *const pfi_cli_actions_ctl[],
    *const pfi_cli_actions_event[];
const char *const *pfi_cli_actions_of(const char *name);
/* 1 when word is one of actions. */
int pfi_cli_is_action(const char *const *actions, const char *word);
/* Writes the actions to f as "serve, status, budget, topology". */
void pfi_cli_actions_list(FILE *f, const char *const *actions);
/* Every command of pfi (commands.def), in that order. */
const pfi_cli_sub *pfi_cli_commands(int *n);

/* The backend flags every hardware-facing command accepts. */
typedef struct pfi_cli_hw {
    const char *backend;   /* --backend auto|nvml|sim (default: $PFI_BACKEND, else sim when
                            * --sim is given, else auto) */
    const char *sim;       /* --sim FILE|PRESET */
    const char *nvml_lib;  /* --nvml-lib PATH (default $PFI_NVML_LIBRARY) */
    int read_only;         /* --read-only */
} pfi_cli_hw;
/* Which GPUs: every hardware-facing command; PFI_CLI_HW_OPTS adds --read-only to them for the
 * commands where it means something (not pfi restore, whose one purpose is a change). */
#define PFI_CLI_HW_WHICH_OPTS(h)                                                                  \
    {"backend", PFI_OPT_STR, &(h).backend, "NAME",                                              \
     "auto (default: NVML if it lists a GPU, else an error), nvml, or sim (the simulator)"},   \
        {"sim", PFI_OPT_STR, &(h).sim, "FILE|PRESET", "simulated node: a config file or preset"}, \
        {"nvml-lib", PFI_OPT_STR, &(h).nvml_lib, "PATH", "libnvidia-ml.so.1 to load"}
#define PFI_CLI_HW_OPTS(h)                                                                        \
    PFI_CLI_HW_WHICH_OPTS(h),                                                                     \
        {"read-only", PFI_OPT_FLAG, &(h).read_only, NULL, "never change a GPU setting"}
int pfi_cli_open_hw(const pfi_cli_hw *h, pfi_backend **out, pfi_err *err);
/* The backend name pfi_cli_open_hw will open: --backend, $PFI_BACKEND, "sim" with --sim,
 * else "auto". */
const char *pfi_cli_backend_name(const pfi_cli_hw *h);

/* Writes one JSON document to stdout (indented, newline-terminated) and decrefs it. */
int pfi_cli_print_json(json_t *doc);
/* 1 when everything written to stdout so far reached it (flushed now); else 0, once said on
 * stderr as "pfi CMD: write error: ..." (a reader gone with SIGPIPE ignored, a full disk): a
 * command that streams stops there instead of writing into nothing. */
int pfi_cli_stdout_ok(const char *cmd); /* cmd NULL: "pfi: write error: ..." */
/* The same for a document whose top member `key` is an array of n elements, each written by
 * item(ctx, i, w) into w (util/json_write.h) one at a time, so a long array is never held
 * whole, nor as a json_t per value: the bytes are those pfi_cli_print_json would write for the
 * document holding them.  An element whose writer failed ends the array there and makes it
 * PFI_EXIT_FAIL.  Decrefs doc. */
int pfi_cli_print_json_items(json_t *doc, const char *key,
                             void (*item)(void *ctx, int i, pfi_jw *w), void *ctx, int n);

/* What characterizing a run cost (core/cost.h), for sweep, show and runs: a JSON object
 * (seconds, gpu_s, lost, lost_frac, baseline_rate, unit) and one summary line.  unit: "tokens"
 * or "samples". */
struct pfi_cost;
json_t *pfi_cli_cost_json(const struct pfi_cost *c, const char *unit);
void pfi_cli_cost_line(FILE *f, const struct pfi_cost *c, const char *unit);
/* The cost of stored run (loaded into *run, durations from its telemetry): PFI_OK with *out
 * filled, or the error (a run without levels or baseline rate is PFI_EINVAL). */
struct pfi_store;
struct pfi_run;
int pfi_cli_stored_cost(struct pfi_store *st, const struct pfi_run *run, struct pfi_cost *out,
                        pfi_err *err);
/* "tokens" or "samples" for a run's rate unit. */
const char *pfi_cli_work_unit(int tput_unit);

/* The clients of pfi serve and pfi cluster serve (pfi ctl, pfi event, daemon_auth.c).  The
 * token of token_file (NULL: none; tok "" then) is sent on every request, reads included: a
 * daemon with read_auth = token (or --read-auth token) wants it on every read but /healthz, and
 * one without ignores it on reads.  An unreadable token_file is the error (PFI_OK otherwise)
 * for a change (change 1); for a read it is said on stderr as "pfi CMD: warning: ..." and tok
 * is left "", so a read the daemon leaves open still works. */
int pfi_cli_daemon_token(const char *cmd, const char *token_file, int change, char *tok,
                         size_t size, pfi_err *err);
/* After the error line of a 401 answer (status: the answer's; nothing for another): one line
 * that says what to do: pass --token-file (none was sent: reads need it there, or it was a
 * change), or check the file (the daemon refused the token sent from token_file). */
void pfi_cli_daemon_401(const char *cmd, const char *method, long status,
                        const char *token_file, int token_sent);
/* What to tell a user a daemon did not answer: timed_out (the request's timed_out) means it
 * took the connection, or it was tried, and said nothing within timeout_s: overloaded, its
 * listener full of other clients' connections, or not running; else it is not reachable. */
const char *pfi_cli_no_answer_hint(int timed_out, double timeout_s, const char *daemon,
                                   char *buf, size_t n);

#endif
