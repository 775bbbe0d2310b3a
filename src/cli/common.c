/* SPDX-License-Identifier: Apache-2.0 */
/* common.c: helpers every subcommand shares (see cli.h). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/text.h"

int pfi_cli_fail(const char *cmd, const pfi_err *err)
{
    fprintf(stderr, "pfi %s: %s\n", cmd, err->msg[0] ? err->msg : pfi_code_name(err->code));
    /* Malformed and out of range are the same mistake to the user: both are bad input. */
    return err->code == PFI_EINVAL || err->code == PFI_ERANGE ? PFI_EXIT_USAGE : PFI_EXIT_FAIL;
}

/* The family (pfi_cli_family) whose subcommand runs now: its subcommands get argv[0] = their
 * own name ("train"), and a usage error must still name the command typed ("pfi model train",
 * not "pfi train", which reads as another command or none). */
static const char *running_family;

int pfi_cli_args(const pfi_cmd_spec *spec, int argc, char **argv, char ***pos, int *npos,
                 int *dashdash)
{
    pfi_err err = {0};
    int rc = pfi_args_parse(spec, argc, argv, pos, npos, dashdash, &err);
    if (rc == PFI_ARGS_HELP)
        return PFI_EXIT_OK;
    if (rc != PFI_OK) {
        const char *fam = running_family;
        size_t n = fam ? strlen(fam) : 0;
        if (fam && !(strncmp(argv[0], fam, n) == 0 && argv[0][n] == ' '))
            fprintf(stderr, "pfi %s %s: %s\n", fam, argv[0], err.msg);
        else
            fprintf(stderr, "pfi %s: %s\n", argv[0], err.msg);
        return PFI_EXIT_USAGE;
    }
    return -1;
}

int pfi_cli_args_none(const pfi_cmd_spec *spec, int argc, char **argv, const char *cmd)
{
    char **pos;
    int npos, rc = pfi_cli_args(spec, argc, argv, &pos, &npos, NULL);
    if (rc < 0 && npos > 0) {
        fprintf(stderr, "pfi %s: unexpected argument '%s'\n", cmd, pos[0]);
        return PFI_EXIT_USAGE;
    }
    return rc;
}

static const pfi_cli_sub commands[] = {
#define PFI_COMMAND(name, fn, summary) {#name, fn, summary},
#include "cli/commands.def"
#undef PFI_COMMAND
};

static const pfi_cli_alias aliases[] = {
    {"simjob", "sim job", pfi_cmd_sim_job},
    {"demo", "sim demo", pfi_cmd_sim_demo},
    {"show", "runs show", pfi_cmd_runs_show},
    {"export", "runs export", pfi_cmd_runs_export},
};

const pfi_cli_alias *pfi_cli_find_alias(const char *name)
{
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcmp(aliases[i].old, name))
            return &aliases[i];
    return NULL;
}

const pfi_cli_sub *pfi_cli_commands(int *n)
{
    *n = (int)(sizeof commands / sizeof commands[0]);
    return commands;
}

int pfi_cli_fleet_seed(const char *cmd, int seed, int fleet, const char *hint,
                       unsigned long long *out)
{
    *out = 1;
    if (seed == INT_MIN)
        return -1;
    if (!fleet) {
        fprintf(stderr, "pfi %s: --seed is the seed of a simulated fleet (--fleet); these runs "
                        "are not drawn from one%s%s\n", cmd, hint ? "; " : "", hint ? hint : "");
        return PFI_EXIT_USAGE;
    }
    if (seed < 0) {
        fprintf(stderr, "pfi %s: --seed must be a whole number >= 0, got %d\n", cmd, seed);
        return PFI_EXIT_USAGE;
    }
    *out = (unsigned long long)seed;
    return -1;
}

const pfi_cli_family_spec *pfi_cli_family_of(const char *name)
{
    static const pfi_cli_family_spec *const fams[] = {&pfi_cli_family_bench, &pfi_cli_family_model,
                                                      &pfi_cli_family_runs, &pfi_cli_family_sim};
    for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++)
        if (!strcmp(fams[i]->name, name))
            return fams[i];
    return NULL;
}

const char *const *pfi_cli_actions_of(const char *name)
{
    static const struct {
        const char *name;
        const char *const *actions;
    } cmds[] = {{"cluster", pfi_cli_actions_cluster},
                {"ctl", pfi_cli_actions_ctl},
                {"event", pfi_cli_actions_event}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(cmds[i].name, name))
            return cmds[i].actions;
    return NULL;
}

int pfi_cli_is_action(const char *const *actions, const char *word)
{
    for (; *actions; actions++)
        if (!strcmp(*actions, word))
            return 1;
    return 0;
}

void pfi_cli_actions_list(FILE *f, const char *const *actions)
{
    for (const char *const *a = actions; *a; a++)
        fprintf(f, "%s%s", a == actions ? "" : ", ", *a);
}

static void family_text(const pfi_cli_family_spec *fam, FILE *f)
{
    int width = pfi_text_width(f);
    fprintf(f, "usage: pfi %s SUBCOMMAND [options]   (pfi %s SUBCOMMAND --help)\n\n", fam->name,
            fam->name);
    pfi_text_wrap(f, fam->summary, 0, 0, width, 0);
    fprintf(f, "\n\nsubcommands:\n");
    for (int i = 0; i < fam->n; i++) {
        fprintf(f, "  %-12s ", fam->subs[i].name);
        pfi_text_wrap(f, fam->subs[i].summary, 15, 15, width, 0);
        fputc('\n', f);
    }
    pfi_args_examples(f, fam->examples);
}

/* The family's manual page body: its synopsis and subcommands, then each subcommand's own help
 * (its option table) as a subsection, then the family's examples. */
static void family_man(const pfi_cli_family_spec *fam, FILE *f)
{
    fprintf(f, ".SH SYNOPSIS\n.nf\npfi %s SUBCOMMAND [options]\n.fi\n.SH DESCRIPTION\n",
            fam->name);
    pfi_args_roff(f, fam->summary);
    fprintf(f, "\n.SH SUBCOMMANDS\n");
    for (int i = 0; i < fam->n; i++) {
        fprintf(f, ".TP\n.B ");
        pfi_args_roff(f, fam->subs[i].name);
        fputc('\n', f);
        pfi_args_roff(f, fam->subs[i].summary);
        fputc('\n', f);
    }
    fflush(f);
    pfi_args_set_help_format(PFI_HELP_MAN_SUB);
    for (int i = 0; i < fam->n; i++) {
        char name[64], help[] = "--help";
        snprintf(name, sizeof name, "%s", fam->subs[i].name);
        char *argv[] = {name, help, NULL};
        fam->subs[i].fn(2, argv);
        fflush(stdout);
    }
    pfi_args_set_help_format(PFI_HELP_MAN);
    pfi_args_examples(f, fam->examples);
}

int pfi_cli_family_late_sub(const pfi_cli_family_spec *fam, int argc, char **argv)
{
    if (argc < 3 || argv[1][0] != '-')
        return -1;
    for (int k = 2; k < argc; k++) {
        if (!strcmp(argv[k], "--"))
            return -1;
        for (int i = 0; i < fam->n; i++)
            if (!strcmp(argv[k], fam->subs[i].name)) {
                fprintf(stderr, "pfi %s: the subcommand comes first: pfi %s %s", fam->name,
                        fam->name, argv[k]);
                for (int a = 1; a < argc; a++)
                    if (a != k)
                        fprintf(stderr, " %s", argv[a]);
                fputc('\n', stderr);
                return PFI_EXIT_USAGE;
            }
    }
    return -1;
}

int pfi_cli_family(const pfi_cli_family_spec *fam, int argc, char **argv)
{
    if (argc >= 2)
        for (int i = 0; i < fam->n; i++)
            if (strcmp(argv[1], fam->subs[i].name) == 0) {
                const char *outer = running_family;
                running_family = fam->name;
                int rc = fam->subs[i].fn(argc - 1, argv + 1);
                running_family = outer;
                return rc;
            }
    int help = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
    if (help && pfi_args_help_format() == PFI_HELP_MAN) {
        family_man(fam, stdout);
        return PFI_EXIT_OK;
    }
    if (help) {
        family_text(fam, stdout);
        return PFI_EXIT_OK;
    }
    int late = pfi_cli_family_late_sub(fam, argc, argv);
    if (late >= 0)
        return late;
    if (argc >= 2)
        fprintf(stderr, "pfi %s: unknown subcommand '%s'\n\n", fam->name, argv[1]);
    family_text(fam, stderr);
    return PFI_EXIT_USAGE;
}

const char *pfi_cli_backend_name(const pfi_cli_hw *h)
{
    if (h->backend)
        return h->backend;
    const char *env = getenv("PFI_BACKEND");
    if (env && *env)
        return env;
    return h->sim ? "sim" : "auto"; /* --sim names a simulated node: that is asking for it */
}

int pfi_cli_open_hw(const pfi_cli_hw *h, pfi_backend **out, pfi_err *err)
{
    const char *name = pfi_cli_backend_name(h);
    const char *arg = strcmp(name, "sim") == 0 ? h->sim : h->nvml_lib;
    if (h->sim && strcmp(name, "sim") != 0)
        return pfi_err_set(err, PFI_EINVAL, "--sim goes with --backend sim (the backend is %s)",
                           name);
    /* the simulator loads no library: a path given for one would be silently dropped */
    if (h->nvml_lib && strcmp(name, "sim") == 0)
        return pfi_err_set(err, PFI_EINVAL,
                           "--nvml-lib goes with --backend nvml or auto (the backend is sim)");
    return pfi_hw_open(name, arg, h->read_only, out, err);
}

/* 12 digits: 6 rounded Unix times to hours and large totals (tokens/s of a fleet). */
#define PRINT_INDENT 2
#define PRINT_PRECISION 12
#define PRINT_FLAGS (JSON_INDENT(PRINT_INDENT) | JSON_REAL_PRECISION(PRINT_PRECISION))

void pfi_cli_catch_stop_signals(void (*h)(int))
{
    static const int sigs[] = {SIGINT,  SIGTERM,   SIGHUP,  SIGQUIT, SIGUSR1, SIGUSR2,
                               SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ,
#ifdef SIGPWR
                               SIGPWR,
#endif
    };
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int pfi_cli_stdout_ok(const char *cmd)
{
    static int said; /* once: a streaming command and main both ask */
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return 1;
    if (said++)
        return 0;
    /* An error flagged by an earlier write (a JSON document cut by a full disk) leaves no
     * errno to the flush, which has nothing left to write. */
    fprintf(stderr, "pfi%s%s: write error: %s\n", cmd ? " " : "", cmd ? cmd : "",
            errno ? strerror(errno) : "the output did not all get through");
    return 0;
}

int pfi_cli_print_json(json_t *doc)
{
    if (!doc) { /* a value jansson refused (not UTF-8): never an exit 1 with nothing said */
        fprintf(stderr, "pfi: internal error: the JSON document could not be built\n");
        return PFI_EXIT_FAIL;
    }
    int rc = json_dumpf(doc, stdout, PRINT_FLAGS) == 0 ? 0 : 1;
    fputc('\n', stdout);
    json_decref(doc);
    return rc ? PFI_EXIT_FAIL : PFI_EXIT_OK;
}

int pfi_cli_print_json_items(json_t *doc, const char *key,
                             void (*item)(void *ctx, int i, pfi_jw *w), void *ctx, int n)
{
    if (!doc)
        return PFI_EXIT_FAIL;
    /* the document with an empty array there, then the elements written in its place */
    json_object_set_new(doc, key, json_array());
    char *s = json_dumps(doc, PRINT_FLAGS), mark[256];
    json_decref(doc);
    snprintf(mark, sizeof mark, "\n  \"%s\": []", key);
    char *at = s ? strstr(s, mark) : NULL;
    if (!at) {
        free(s);
        return PFI_EXIT_FAIL;
    }
    at += strlen(mark) - 1; /* at the ']' */
    fwrite(s, 1, (size_t)(at - s), stdout);
    int rc = 0;
    pfi_jw w;
    pfi_jw_init(&w, PRINT_INDENT, PRINT_PRECISION);
    for (int i = 0; i < n && rc == 0; i++) {
        fputs(i ? ",\n    " : "\n    ", stdout);
        pfi_jw_reset(&w, 2); /* the document, its array, the element */
        item(ctx, i, &w);
        if (w.failed)
            rc = -1;
        else
            fwrite(w.buf, 1, w.len, stdout);
    }
    pfi_jw_free(&w);
    if (n > 0)
        fputs("\n  ", stdout);
    fputs(at, stdout);
    fputc('\n', stdout);
    free(s);
    return rc ? PFI_EXIT_FAIL : PFI_EXIT_OK;
}
