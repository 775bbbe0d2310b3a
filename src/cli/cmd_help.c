/* SPDX-License-Identifier: Apache-2.0 */
/* pfi help: short texts on the ideas behind the commands (the definition of the index first),
 * for the person at the terminal; docs/pfi.md has the long form. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "pfi_version.h" /* generated under build/gen/ */
#include "serve/serve.h"
#include "util/text.h"

typedef struct topic {
    const char *name, *summary, *text;
} topic;

static const topic topics[] = {
    {"index", "the Power Flexibility Index: definition, headline, SLA primitive",
     "The Power Flexibility Index (PFI)\n"
     "\n"
     "This is pfi's definition, chosen to match the abstract of \"Characterizing Job Power\n"
     "Elasticity for Power-Flexible AI Training\" (arXiv 2609.11542); the paper's full text and\n"
     "exact formulas were not available to us.\n"
     "\n"
     "  baseline   the job at its default power limit: throughput T0, mean per-GPU board\n"
     "             power drawn P0\n"
     "  r(c)       = 1 - P(c)/P0   power shed at cap c, as DRAWN (not the cap setting): a job\n"
     "             drawing less than the cap sheds nothing, and loses nothing, until it binds\n"
     "  s(c)       = 1 - T(c)/T0   slowdown\n"
     "  PFI(r)     = s(r) / r      fraction of throughput lost per fraction of power shed\n"
     "             0: power given back for free; 1: throughput falls in proportion; >1: worse\n"
     "  PFI30      = PFI(0.30), the headline; also PFI10/20/40\n"
     "  SLA        for a slowdown budget s_max, the largest r with s(r) <= s_max: the power\n"
     "             a job can give without breaking its SLA (pfi index: budgets 2, 5, 10%)\n"
     "\n"
     "Curves are convex (slow loss first, faster later), so PFI grows with depth and one\n"
     "number does not describe a job; the allocator uses whole curves.\n"
     "\n"
     "How pfi reads it: the measured levels give points (r, s); a monotone fit (isotonic\n"
     "regression, baseline pinned at s = 0) and a power law s = a r^b (b in [1, 4], the family\n"
     "that fits the real public curves best: pfi index --public --compare-families).  PFI is\n"
     "the monotone interpolation of the measured points where the sweep reached the depth;\n"
     "beyond the deepest shed it is read on the power law and marked as an extrapolation\n"
     "(more than 0.01 beyond: left out unless --extrapolate).  The 95% interval of PFI30 comes\n"
     "from a seeded wild bootstrap of the fit's residuals plus each level's own throughput\n"
     "interval, each replicate read on both curves: it covers the choice between them.\n"
     "The SLA shed is read on the same interpolation, walking out from the origin until the\n"
     "slowdown first passes the budget; where it never does, the deepest shed measured (a\n"
     "lower bound, marked +), or with --extrapolate the power law beyond it (marked *).\n"
     "\n"
     "Commands: pfi index, pfi predict, pfi model eval, pfi model probe-eval.\n"},
    {"predict", "runtime prediction of a job's curve from its baseline telemetry",
     "Runtime prediction (no sweep)\n"
     "\n"
     "From the telemetry a real GPU gives while the job runs at its default limit: power drawn\n"
     "relative to the limits (headroom), SM clock relative to the GPU's max, time under the SW\n"
     "power cap, GPU utilization, SM, tensor and DRAM activity, NVLink and PCIe traffic, plus\n"
     "job metadata when known (dense/MoE, pretraining/fine-tuning, GPU count, parallelism).\n"
     "Two models predict the slowdown at r = 0.1 ... 0.5, and a power law through those points\n"
     "is the predicted curve:\n"
     "  ridge    regularized linear regression on standardized features (GSL)\n"
     "  physics  a DVFS estimator: compute share from SM activity slows as 1/f, the power\n"
     "           that scales with the clock goes as f V(f)^2 down to a voltage floor\n"
     "pfi model train keeps the one with the lower cross-validated error of PFI30.\n"
     "\n"
     "Commands: pfi model train, pfi predict RUN | --live, pfi model eval.\n"},
    {"probe", "estimating a curve from the baseline and one or two short probes",
     "One-probe estimation\n"
     "\n"
     "Run the job briefly at one reduced cap, at (1 - depth) of its baseline draw (depth 0.40\n"
     "by default: the depth that predicted the public curves best), and read\n"
     "its slowdown there.  The curve is the power law through the origin and that point, with\n"
     "its exponent b from a prior (the median over reference curves).  With two probes both\n"
     "parameters come from the probes.  pfi model probe-eval measures the error of the\n"
     "relative throughput predicted at 80, 70 and 60% of baseline power on the real public\n"
     "curves, the probe taken at a measured level and never scored on itself.\n"
     "\n"
     "Read through a library of measured curves instead (pfi evaluate --probes 1, its probe\n"
     "at depth 0.50 by default; pfi serve with a probe_library, at the job's probe depth):\n"
     "the curve is the shape of the measured curves nearest to the job in slowdown and draw\n"
     "at the probe, through the probe (docs/allocation.md).  pfi evaluate --nested-cv gives\n"
     "its honest, held-out figure.\n"},
    {"budget", "power budgets: one grammar for every command, and what a share is of",
     "Power budgets\n"
     "\n"
     "Every command and API that takes a power budget reads the same forms:\n"
     "  4000W, 4000, 4kW, 0.004MW   watts (W, kW or MW; a bare number is watts)\n"
     "  70%                         70% of the command's reference (below)\n"
     "  cut=30%, -30%               a 30% cut of the reference: the same as 70%\n"
     "Watts are more than 0 and at most 1e9, a share more than 0% and at most 100%, a cut at\n"
     "least 0% and less than 100%.  Anything else (NaN, a negative number, hexadecimal\n"
     "0x10W, a trailing character) is refused with the same message everywhere, and nothing\n"
     "is changed.\n"
     "\n"
     "What a share is of, each command saying it with the watts it took:\n"
     "  pfi serve --budget, budget and safe_budget settings, PUT /v1/budget, pfi ctl budget set\n"
     "      the sum of the node's GPUs' default limits (nominal_w)\n"
     "  pfi cluster budget, --budget, the cluster's PUT /v1/budget\n"
     "      the sum of the default limits of every GPU of the site (site_default_w)\n"
     "  pfi allocate --budget\n"
     "      the jobs' baseline draw, GPUs x baseline power (a jobs file has no default limits)\n"
     "  pfi event add --limit\n"
     "      the event's baseline (--baseline, else the daemon's mean draw over the last hour):\n"
     "      --limit 75% is --cut 25%\n"
     "  pfi evaluate, pfi study and pfi bench pergpu --cuts, a list of cuts\n"
     "      of the jobs' baseline draw: --cuts cut=30%,-40% is --cuts 0.3,0.4 (a bare\n"
     "      fraction there is a cut; a bare share such as 70% is refused as ambiguous, and\n"
     "      watts as not a cut)\n"
     "pfi serve's safe_budget (--safe-budget) also takes min: every GPU at its minimum limit;\n"
     "its budget setting takes none: no budget at start (the default).\n"},
};
#define NTOPICS ((int)(sizeof topics / sizeof topics[0]))

/* ---------------------------------------------------------------- manual pages */

/* A topic's text without its title line and the blank line under it. */
static const char *topic_text(const char *name)
{
    for (int i = 0; i < NTOPICS; i++)
        if (!strcmp(topics[i].name, name)) {
            const char *t = strstr(topics[i].text, "\n\n");
            return t ? t + 2 : topics[i].text;
        }
    return "";
}

static void man_header(const char *title, int section, const char *name, const char *summary)
{
    printf(".\\\" Generated by `pfi help --man` from the same tables as --help: do not edit.\n");
    /* The date of the source (make: SOURCE_DATE_EPOCH, else the last commit's), not of the
     * build, so that the same source makes the same pages. */
    printf(".TH \"%s\" \"%d\" \"%s\" \"pfi %s\" \"pfi manual\"\n.SH NAME\n", title, section,
           PFI_SOURCE_DATE, PFI_VERSION);
    pfi_args_roff(stdout, name);
    printf(" \\- ");
    pfi_args_roff(stdout, summary);
    putchar('\n');
}

static void man_see_also(const char *extra)
{
    printf(".SH SEE ALSO\n.BR pfi (1)%s\n", extra ? extra : "");
}

static const struct {
    const char *name, *text;
} environment[] = {
    {"PFI_DB", "the store (SQLite) of runs when --db is not given (else pfi.db)"},
    {"PFI_DATA_DIR", "where the public measured sweeps are read (--public, pfi import)"},
    {"PFI_BACKEND", "the backend when --backend is not given: auto, nvml or sim"},
    {"PFI_NVML_LIBRARY", "the NVML library to load (default libnvidia-ml.so.1)"},
    {"PFI_READ_ONLY", "when set to 1, never change a GPU setting (as --read-only)"},
    {"PFI_JOURNAL", "the journal of original power limits (pfi sweep, pfi serve, pfi restore)"},
    {"PFI_LOCK_DIR", "where each GPU's lock is kept while a sweep or pfi serve changes its limit "
                     "(default /run/lock/pfi as root, /run/lock for other users, /tmp where there "
                     "is no /run/lock; a simulated node's beside its state)"},
    {"PFI_SERVE_URL", "the daemon pfi ctl and pfi event talk to (default unix:/run/pfi/serve.sock "
                      "when that socket exists, else http://127.0.0.1:9455)"},
    {"PFI_SERVE_TOKEN_FILE", "the bearer token file of pfi ctl and pfi event"},
    {"PFI_SIM_STATE", "a shared simulated node (pfi sim init) that every process sees"},
    {"PFI_SIM_SPEED", "how many times faster than real time a shared simulated node runs "
                      "(default 1)"},
    {"PFI_PROGRESS", "progress of long commands on stderr: 0 off, lines (plain lines), tty (a "
                     "line redrawn in place); default: in place on a terminal, else a plain "
                     "line at most every 10 s"},
    {"PFI_CLOCK_SCALE", "with PFI_CLOCK_ORIGIN (Unix seconds): pfi's clock runs this many "
                        "times faster (1 to 1000), for tests of schedules (docs/api.md)"},
    {"PFI_CLOCK_ORIGIN", "the Unix time from which PFI_CLOCK_SCALE's faster clock runs"},
};

static int man_pfi(void)
{
    int n;
    const pfi_cli_sub *cmds = pfi_cli_commands(&n);
    man_header("PFI", 1, "pfi", "measure, predict and act on the power flexibility of training jobs");
    printf(".SH SYNOPSIS\n.nf\n.B pfi \\fICOMMAND\\fR [\\fIoptions\\fR]\n.B pfi help "
           "\\fICOMMAND\\fR|\\fITOPIC\\fR\n.B pfi \\-V\\fR|\\fB\\-\\-version\n.fi\n");
    printf(".SH DESCRIPTION\npfi characterizes a training job under a sweep of GPU power limits, "
           "computes its Power Flexibility Index (the fraction of throughput lost per fraction of "
           "power shed), predicts it from the telemetry of the job running normally, allocates "
           "power caps across jobs under a budget, and applies them safely on a node "
           "(\\fBpfi serve\\fR) or a Slurm site (\\fBpfi cluster\\fR).  It runs without an NVIDIA "
           "driver too: NVML is loaded at run time, and an embedded simulator stands in for GPUs "
           "when asked (\\-\\-backend sim).\n");
    printf(".SH COMMANDS\nEach has its own page, \\fBpfi\\-\\fICOMMAND\\fR(1), and "
           "\\fBpfi help \\fICOMMAND\\fR prints its options.\n");
    for (int i = 0; i < n; i++) {
        printf(".TP\n.B ");
        pfi_args_roff(stdout, cmds[i].name);
        putchar('\n');
        pfi_args_roff(stdout, cmds[i].summary);
        putchar('\n');
    }
    printf(".SH OPTIONS\n.TP\n.B \\-V, \\-\\-version\nprint the version and how this pfi was "
           "built\n.TP\n.B \\-h, \\-\\-help\nlist the commands\n");
    printf(".SH BUDGETS\n.nf\n");
    pfi_args_roff(stdout, topic_text("budget"));
    printf(".fi\n");
    printf(".SH EXIT STATUS\n0 success, 1 a runtime failure, 2 bad input (an unknown option, a "
           "malformed value, one out of range, or an empty one), 128+N a sweep stopped by signal "
           "N once the limits were put back (130 SIGINT, 143 SIGTERM, 129 SIGHUP, 131 SIGQUIT, 138 "
           "SIGUSR1, 140 SIGUSR2: any signal that would end it).\n");
    printf(".SH ENVIRONMENT\n");
    for (size_t i = 0; i < sizeof environment / sizeof environment[0]; i++)
        printf(".TP\n.B %s\n%s\n", environment[i].name, environment[i].text);
    printf(".SH FILES\n.TP\n.I /etc/pfi/serve.conf\nsettings of pfi serve, "
           "\\fBpfi\\-serve.conf\\fR(5)\n.TP\n.I /var/lib/pfi/\nthe daemon's state, audit log "
           "and journal of original power limits\n");
    printf(".SH EXAMPLES\n.nf\n.RS 4\npfi gpus\npfi sweep \\-\\-gpus 0\\-7 \\-\\- torchrun "
           "\\-\\-nproc\\-per\\-node 8 train.py\npfi index \\-\\-public\n.RE\n.fi\n");
    printf(".SH SEE ALSO\n");
    for (int i = 0; i < n; i++)
        printf(".BR pfi\\-%s (1)%s\n", cmds[i].name, ",");
    printf(".BR pfi\\-serve.conf (5)\n");
    return PFI_EXIT_OK;
}

static int man_serve_conf(void)
{
    int n;
    const pfi_serve_key *k = pfi_serve_config_keys(&n);
    man_header("PFI-SERVE.CONF", 5, "pfi-serve.conf", "settings of the pfi node power controller");
    printf(".SH SYNOPSIS\n/etc/pfi/serve.conf\n.SH DESCRIPTION\n\\fBpfi serve \\-\\-config "
           "\\fIFILE\\fR reads one setting a line, \\fIkey\\fR = \\fIvalue\\fR; '#' starts a "
           "comment (but inside double quotes: a value that holds '#' is written in quotes) "
           "and blank lines are ignored.  An unknown key or a bad value stops the daemon "
           "with the file and line; so does an empty value (leave the line out for the "
           "default), but for default_sla, where it means none.  The flags of \\fBpfi serve\\fR, and \\-\\-set "
           "\\fIKEY\\fR=\\fIVALUE\\fR for any key, override the file.  Durations take a unit "
           "(500ms, 30s, 5m); watts may end in W; shares end in %%.\n.SH SETTINGS\n");
    for (int i = 0; i < n; i++) {
        printf(".TP\n\\fB");
        pfi_args_roff(stdout, k[i].name);
        printf("\\fR = \\fI");
        pfi_args_roff(stdout, k[i].value);
        printf("\\fR\n");
        pfi_args_roff(stdout, k[i].help);
        printf("  Default: ");
        pfi_args_roff(stdout, k[i].dflt);
        printf(".\n");
    }
    printf(".SH EXAMPLES\n.nf\n.RS 4\nlisten = unix:/run/pfi/serve.sock\ntoken_file = "
           "/etc/pfi/token\ndb = /var/lib/pfi/serve.db\nbackend = nvml\nsample_interval = 1s\n"
           ".RE\n.fi\n");
    man_see_also(", \\fBpfi\\-serve\\fR(1), \\fBpfi\\-ctl\\fR(1)");
    return PFI_EXIT_OK;
}

/* The page of one command, from the help it prints (its option table) in roff. */
static int man_command(const pfi_cli_sub *c)
{
    char title[64], name[64], help[] = "--help";
    snprintf(name, sizeof name, "pfi-%s", c->name);
    size_t len = 0;
    for (; name[len] && len + 1 < sizeof title; len++)
        title[len] = (char)toupper((unsigned char)name[len]);
    title[len] = '\0';
    man_header(title, 1, name, c->summary);
    fflush(stdout);
    pfi_args_set_help_format(PFI_HELP_MAN);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "%s", c->name);
    char *argv[] = {cmd, help, NULL};
    c->fn(2, argv);
    pfi_args_set_help_format(PFI_HELP_TEXT);
    fflush(stdout);
    man_see_also(strcmp(c->name, "serve") ? NULL : ", \\fBpfi\\-serve.conf\\fR(5)");
    return PFI_EXIT_OK;
}

static const pfi_cli_sub *find_command(const char *name)
{
    int n;
    const pfi_cli_sub *cmds = pfi_cli_commands(&n);
    for (int i = 0; i < n; i++)
        if (!strcmp(cmds[i].name, name))
            return &cmds[i];
    /* A former name (pfi help simjob): the help of what replaced it. */
    static pfi_cli_sub old;
    const pfi_cli_alias *a = pfi_cli_find_alias(name);
    if (!a)
        return NULL;
    old = (pfi_cli_sub){a->old, a->fn, a->now};
    return &old;
}

/* A word pfi help cannot show (`pfi help allocate extra`) is refused, never dropped: dropped,
 * it reads as the help of what was asked.  what: the words taken so far ("sim run"). */
static int help_extra(const char *how, const char *what, const char *word)
{
    fprintf(stderr, "pfi help%s: unexpected argument '%s' after '%s' (ask: pfi help%s %s)\n", how,
            word, what, how, what);
    return PFI_EXIT_USAGE;
}

static int help_man(int npos, char **pos)
{
    if (npos == 0)
        return man_pfi();
    if (npos > 1)
        return help_extra(" --man", pos[0], pos[1]);
    if (!strcmp(pos[0], "serve.conf"))
        return man_serve_conf();
    const pfi_cli_sub *c = find_command(pos[0]);
    if (!c) {
        fprintf(stderr, "pfi help --man: no command '%s' (expected nothing for pfi(1), a command "
                        "or serve.conf)\n", pos[0]);
        return PFI_EXIT_USAGE;
    }
    return man_command(c);
}

/* A command's own help: `pfi help sim run` is `pfi sim run --help`. */
static int help_command(const pfi_cli_sub *c, int npos, char **pos)
{
    char *argv[8], help[] = "--help";
    int n = 0;
    for (int i = 0; i < npos && n < 6; i++)
        argv[n++] = pos[i];
    argv[n++] = help;
    argv[n] = NULL;
    return c->fn(n, argv);
}

/* A second word is a subcommand of a command made of them (pfi help sim run) or an action of
 * a command that takes one (pfi help cluster serve, as git help and docker help read it),
 * nothing else: -1 when it is one, else the exit status, the word refused with the list of
 * those it could be. */
static int help_second_word(const pfi_cli_sub *c, const char *name, const char *word)
{
    const pfi_cli_family_spec *fam = c ? pfi_cli_family_of(c->name) : NULL;
    const char *const *actions = c ? pfi_cli_actions_of(c->name) : NULL;
    if (!fam && !actions)
        return help_extra("", name, word);
    if (actions) {
        if (pfi_cli_is_action(actions, word))
            return -1;
        fprintf(stderr, "pfi help: pfi %s has no action '%s' (its actions: ", c->name, word);
        pfi_cli_actions_list(stderr, actions);
        fprintf(stderr, ")\n");
        return PFI_EXIT_USAGE;
    }
    for (int i = 0; i < fam->n; i++)
        if (!strcmp(fam->subs[i].name, word))
            return -1;
    fprintf(stderr, "pfi help: pfi %s has no subcommand '%s' (its subcommands: ", fam->name, word);
    for (int i = 0; i < fam->n; i++)
        fprintf(stderr, "%s%s", i ? ", " : "", fam->subs[i].name);
    fprintf(stderr, ")\n");
    return PFI_EXIT_USAGE;
}

int pfi_cmd_help(int argc, char **argv)
{
    int man = 0;
    const pfi_opt opts[] = {
        {"man", PFI_OPT_FLAG, &man, NULL,
         "write the manual page in roff instead: pfi(1), a command's, or serve.conf for "
         "pfi-serve.conf(5)"},
        {0},
    };
    const pfi_cmd_spec spec = {"pfi help [TOPIC | COMMAND [SUBCOMMAND | ACTION]] [--man]",
                               "Explain an idea behind pfi's commands, or show a command's help "
                               "(the same as pfi COMMAND --help); without an argument, list the "
                               "topics.  A name that is both (index, predict) gives the topic, "
                               "then the command's options.  A second word is a subcommand (pfi "
                               "help sim run) or an action (pfi help ctl job), the same as pfi "
                               "COMMAND WORD --help; any other word is refused.",
                               opts,
                               "pfi help index                                     # the definition of the index\n"
                               "pfi help sweep                                     # the same as pfi sweep --help\n"
                               "pfi help --man serve | man -l -                    # the manual page"};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    if (man)
        return help_man(npos, pos);
    if (npos == 0) {
        printf("pfi help TOPIC, where TOPIC is one of:\n");
        for (int i = 0; i < NTOPICS; i++) {
            printf("  %-10s ", topics[i].name);
            pfi_text_wrap(stdout, topics[i].summary, 13, 13, pfi_text_width(stdout), 0);
            putchar('\n');
        }
        pfi_text_wrap(stdout, "pfi help COMMAND (or pfi COMMAND --help) gives a command's "
                              "options; `pfi --help` lists the commands.",
                      0, 0, pfi_text_width(stdout), 0);
        putchar('\n');
        return PFI_EXIT_OK;
    }
    const pfi_cli_sub *c = find_command(pos[0]);
    const topic *t = NULL;
    for (int i = 0; i < NTOPICS; i++)
        if (strcmp(pos[0], topics[i].name) == 0)
            t = &topics[i];
    if (!c && !t) {
        fprintf(stderr, "pfi help: no topic or command '%s' (topics: ", pos[0]);
        for (int i = 0; i < NTOPICS; i++)
            fprintf(stderr, "%s%s", i ? ", " : "", topics[i].name);
        fprintf(stderr, "; commands: pfi --help)\n");
        return PFI_EXIT_USAGE;
    }
    if (npos > 1) {
        if ((rc = help_second_word(c, pos[0], pos[1])) >= 0)
            return rc;
        if (npos > 2) {
            char what[128];
            snprintf(what, sizeof what, "%s %s", pos[0], pos[1]);
            return help_extra("", what, pos[2]);
        }
        return help_command(c, npos, pos);
    }
    if (t) {
        fputs(t->text, stdout);
        if (!c)
            return PFI_EXIT_OK;
        printf("\n");
        fflush(stdout);
    }
    return help_command(c, npos, pos);
}
