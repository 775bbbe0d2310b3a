/* SPDX-License-Identifier: Apache-2.0 */
/* common.c: helpers every subcommand shares (see cli.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int pfi_cli_fail(const char *cmd, const pfi_err *err)
{
    fprintf(stderr, "pfi %s: %s\n", cmd, err->msg[0] ? err->msg : pfi_code_name(err->code));
    /* Malformed and out of range are the same mistake to the user: both are bad input. */
    return err->code == PFI_EINVAL || err->code == PFI_ERANGE ? PFI_EXIT_USAGE : PFI_EXIT_FAIL;
}

int pfi_cli_args(const pfi_cmd_spec *spec, int argc, char **argv, char ***pos, int *npos,
                 int *dashdash)
{
    pfi_err err = {0};
    int rc = pfi_args_parse(spec, argc, argv, pos, npos, dashdash, &err);
    if (rc == PFI_ARGS_HELP)
        return PFI_EXIT_OK;
    if (rc != PFI_OK) {
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
    return pfi_hw_open(name, arg, h->read_only, out, err);
}

int pfi_cli_print_json(json_t *doc)
{
    if (!doc)
        return PFI_EXIT_FAIL;
    /* 12 digits: 6 rounded Unix times to hours and large totals (tokens/s of a fleet). */
    int rc = json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(12)) == 0 ? 0 : 1;
    fputc('\n', stdout);
    json_decref(doc);
    return rc ? PFI_EXIT_FAIL : PFI_EXIT_OK;
}
