/* SPDX-License-Identifier: Apache-2.0 */
/* main.c: the pfi program: dispatch to a subcommand, git style. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/clock.h"
#include "util/text.h"
#include "pfi_version.h" /* generated: the Makefile writes it under build/gen/ */

static void usage(FILE *f)
{
    int n;
    const pfi_cli_sub *commands = pfi_cli_commands(&n);
    fprintf(f, "usage: pfi COMMAND [options]   (pfi COMMAND --help for its options)\n"
               "       pfi help COMMAND | TOPIC\n"
               "       pfi -V | --version\n\n"
               "pfi measures, predicts and acts on the power flexibility of training jobs.\n\n"
               "commands:\n");
    for (int i = 0; i < n; i++) {
        fprintf(f, "  %-12s ", commands[i].name);
        pfi_text_wrap(f, commands[i].summary, 15, 15, pfi_text_width(f), 0);
        fputc('\n', f);
    }
    fputc('\n', f);
    pfi_text_wrap(f, "exit status: 0 ok, 1 runtime failure, 2 bad input (an unknown option, a "
                     "malformed value or one out of range), 128+N a sweep stopped by signal N "
                     "once the limits were put back (130 SIGINT, 143 SIGTERM, 129 SIGHUP, 131 "
                     "SIGQUIT, 138 SIGUSR1, 140 SIGUSR2, ...)",
                  0, 0, pfi_text_width(f) ? pfi_text_width(f) : 80, 0);
    fputc('\n', f);
    fprintf(f, "\nexamples:\n"
               "  pfi gpus                        # the node's GPUs, their limits and draw\n"
               "  pfi help sweep                  # a command's options (pfi sweep --help)\n"
               "  pfi sweep --gpus 0-7 -- torchrun --nproc-per-node 8 train.py\n");
}

static void print_version(void)
{
    printf("pfi %s\n", PFI_VERSION);
    printf("revision: %s\n", PFI_BUILD_REV);
#ifdef __VERSION__
    printf("compiler: %s, C %ld, flags %s\n", __VERSION__, (long)__STDC_VERSION__, PFI_BUILD_FLAGS);
#endif
    printf("backends: sim (built in), nvml (libnvidia-ml.so.1, loaded at run time)\n");
    printf("license: Apache-2.0\n");
}

/* A command's exit status, 1 when what it wrote to stdout did not all get there (a full disk,
 * a reader gone with SIGPIPE ignored): exit 0 with the output lost said it was written. */
static int written(const char *cmd, int rc)
{
    if (!pfi_cli_stdout_ok(cmd))
        return rc == PFI_EXIT_OK ? PFI_EXIT_FAIL : rc;
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return PFI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
        usage(stdout);
        return written(NULL, PFI_EXIT_OK);
    }
    if (strcmp(name, "-V") == 0 || strcmp(name, "--version") == 0) {
        print_version();
        return written(NULL, PFI_EXIT_OK);
    }
    const char *clock_error = pfi_clock_env_error();
    if (clock_error) {
        fprintf(stderr, "pfi: %s\n", clock_error);
        return PFI_EXIT_USAGE;
    }
    int n;
    const pfi_cli_sub *commands = pfi_cli_commands(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(commands[i].name, name) == 0)
            return written(name, commands[i].fn(argc - 1, argv + 1));
    const pfi_cli_alias *a = pfi_cli_find_alias(name);
    if (a) {
        fprintf(stderr, "pfi: 'pfi %s' is deprecated; use 'pfi %s'\n", a->old, a->now);
        argv[1] = (char *)a->now; /* its messages name the command of today */
        return written(a->now, a->fn(argc - 1, argv + 1));
    }
    fprintf(stderr, "pfi: unknown command '%s'\n\n", name);
    usage(stderr);
    return PFI_EXIT_USAGE;
}
