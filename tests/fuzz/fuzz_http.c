/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: what pfi serve answers an HTTP request (src/serve/http.c
 * pfi_srv_http_answer: the bearer token check and every route of api.c and grid_api.c), on a
 * node over the simulator, without a socket.  Input: newline-separated fields
 *   METHOD \n PATH \n Authorization \n QUERY \n Content-Length \n BODY...
 * (a missing field is an absent header; QUERY is what follows '?', "since=5&limit=2", its
 * arguments split on '&' and '=' as libmicrohttpd splits them, each name and value unescaped).
 * The path goes through the transport's unescaping first.  After each input the node is put
 * back: jobs removed, budget cleared. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw/hw.h"
#include "serve/serve_int.h"
#include "util/unescape.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static pfi_serve_config cfg;
static pfi_backend *backend;
static srv_node *node;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    unsetenv("PFI_SIM_STATE"); /* a private simulated node in virtual time */
    pfi_serve_config_defaults(&cfg);
    snprintf(cfg.db, sizeof cfg.db, ":memory:"); /* the audit log in memory: no fsync */
    pfi_err e = {0};
    node = calloc(1, sizeof *node);
    if (!node || pfi_hw_open("sim", NULL, 0, &backend, &e) != PFI_OK ||
        pfi_srv_node_init(node, &cfg, backend, &e) != PFI_OK ||
        pfi_audit_open(cfg.db, &node->audit, &e) != PFI_OK) {
        fprintf(stderr, "fuzz_http: %s\n", e.msg);
        abort();
    }
    snprintf(node->token, sizeof node->token, "fuzz-token-0123456789abcdef");
    return 0;
}

/* The next field up to '\n' (malloc'ed, NUL-terminated), or NULL at the end. */
static char *field(const uint8_t **p, const uint8_t *end)
{
    if (*p >= end)
        return NULL;
    const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
    size_t l = nl ? (size_t)(nl - *p) : (size_t)(end - *p);
    char *s = malloc(l + 1);
    if (!s)
        abort();
    memcpy(s, *p, l);
    s[l] = '\0';
    *p += l + (nl ? 1 : 0);
    return s;
}

/* Splits query (modified in place) into q's arguments, as the transport lists them: "a=1",
 * "a=" (an empty value), "a" (no value: NULL). */
static void split_query(char *query, pfi_http_query *q)
{
    for (char *p = query; p && *p;) {
        char *amp = strchr(p, '&');
        if (amp)
            *amp = '\0';
        if (*p) {
            char *eq = strchr(p, '=');
            if (eq)
                *eq = '\0';
            pfi_url_unescape(p);
            if (eq)
                pfi_url_unescape(eq + 1);
            pfi_http_query_note(q, p, eq ? eq + 1 : NULL);
        }
        p = amp ? amp + 1 : NULL;
    }
}

static void reset(void)
{
    char ids[SRV_MAX_JOBS][SRV_ID_MAX];
    int nj = node->n_jobs;
    for (int j = 0; j < nj; j++)
        memcpy(ids[j], node->jobs[j].id, SRV_ID_MAX);
    for (int j = 0; j < nj; j++) {
        json_t *res = NULL;
        pfi_srv_job_remove(node, ids[j], &res, NULL);
        json_decref(res);
    }
    json_t *res = NULL;
    pfi_srv_budget_clear(node, 1, &res, NULL);
    json_decref(res);
    node->rl_last = 0; /* a full burst for the next input: writes are not all throttled */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    char *method = field(&p, end), *url = field(&p, end), *auth = field(&p, end);
    char *query = field(&p, end), *clen = field(&p, end);
    size_t blen = (size_t)(end - p);
    char *body = malloc(blen + 1);
    if (!body)
        abort();
    memcpy(body, p, blen);
    body[blen] = '\0';
    if (method && url) {
        pfi_url_unescape(url);
        pfi_http_query q = {0};
        split_query(query, &q);
        node->rl_last = 0;
        if (!pfi_srv_http_body_too_big(clen, cfg.max_body) && blen <= cfg.max_body) {
            int status = 0;
            const char *ctype = NULL;
            size_t len = 0;
            char *out = pfi_srv_http_answer(node, method, url, auth, &q, blen ? body : NULL,
                                            blen, &status, &ctype, &len);
            if (!out || status < 100 || status > 599 || !ctype || strlen(out) != len)
                abort();
            free(out);
        }
        reset();
    }
    free(method);
    free(url);
    free(auth);
    free(query);
    free(clen);
    free(body);
    return 0;
}
