/* SPDX-License-Identifier: Apache-2.0 */
/* daemon_auth.c: the bearer token of the clients of pfi serve and pfi cluster serve (pfi ctl,
 * pfi event), and what to say when a daemon answers 401 (see cli.h). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/token.h"

int pfi_cli_daemon_token(const char *cmd, const char *token_file, int change, char *tok,
                         size_t size, pfi_err *err)
{
    tok[0] = '\0';
    if (!token_file)
        return PFI_OK;
    pfi_err e = {0};
    if (pfi_token_load(token_file, tok, size, &e) == PFI_OK)
        return PFI_OK;
    tok[0] = '\0';
    if (change) {
        *err = e;
        return e.code;
    }
    /* A read the daemon leaves open must still work for whoever cannot read the file (a
     * $PFI_SERVE_TOKEN_FILE only root may read): it goes without the token, saying so; a
     * daemon that locks its reads then answers 401, and pfi_cli_daemon_401 says why. */
    fprintf(stderr, "pfi %s: warning: %s: reading without the token\n", cmd,
            e.msg[0] ? e.msg : pfi_code_name(e.code));
    return PFI_OK;
}

void pfi_cli_daemon_401(const char *cmd, const char *method, long status,
                        const char *token_file, int token_sent)
{
    if (status != 401)
        return;
    int reading = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    if (token_sent)
        fprintf(stderr, "pfi %s: the daemon refused the token in %s: is it the daemon's "
                        "token file (its --token-file)?\n", cmd, token_file);
    else if (reading)
        fprintf(stderr, "pfi %s: the daemon requires its bearer token for reads (read_auth = "
                        "token, or pfi cluster serve --read-auth token): pass --token-file FILE "
                        "or set PFI_SERVE_TOKEN_FILE\n", cmd);
    else
        fprintf(stderr, "pfi %s: changes need the daemon's bearer token: pass --token-file "
                        "FILE or set PFI_SERVE_TOKEN_FILE\n", cmd);
}

const char *pfi_cli_no_answer_hint(int timed_out, double timeout_s, const char *daemon,
                                   char *buf, size_t n)
{
    if (timed_out)
        snprintf(buf, n, "no answer within %.0f s: the daemon is overloaded, its listener full of "
                         "other connections (pfi-serve.conf(5): max_connections), or it is not "
                         "running",
                 timeout_s);
    else
        snprintf(buf, n, "is %s running there?", daemon);
    return buf;
}
