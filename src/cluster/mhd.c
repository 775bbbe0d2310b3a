/* SPDX-License-Identifier: Apache-2.0 */
/* mhd.c: request bodies and JSON replies over libmicrohttpd (mhd.h). */
#include "cluster/mhd.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/http_mhd.h"
#include "util/http_query.h"
#include "util/num.h"
#include "util/unescape.h"

#define LOG_PER_MINUTE 10

int pfi_cl_body_step(void **con_cls, const char *data, size_t *data_size, size_t max,
                     pfi_cl_body **out)
{
    pfi_cl_body *u = *con_cls;
    if (!u) {
        u = calloc(1, sizeof *u);
        if (!u)
            return -1;
        *con_cls = u;
        return 1;
    }
    if (*data_size) {
        /* Past max the rest is read and dropped, so the client gets an answer, not a reset. */
        if (u->len + *data_size > max) {
            u->too_big = 1;
        } else {
            char *nb = realloc(u->buf, u->len + *data_size + 1);
            if (!nb)
                return -1;
            memcpy(nb + u->len, data, *data_size);
            u->buf = nb;
            u->len += *data_size;
            u->buf[u->len] = '\0';
        }
        *data_size = 0;
        return 1;
    }
    *out = u;
    return 0;
}

int pfi_cl_body_too_big(struct MHD_Connection *con, size_t max)
{
    const char *v = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Content-Length");
    long long n;
    return v && pfi_num_ll(v, 0, LLONG_MAX, "Content-Length", &n, NULL) == PFI_OK &&
           (unsigned long long)n > max;
}

int pfi_cl_body_framing(struct MHD_Connection *con, const char *method, const char **why)
{
    return pfi_mhd_screen(con, method, why);
}

int pfi_cl_query_take(struct MHD_Connection *con, const pfi_http_param *takes, int n,
                      pfi_err *e)
{
    pfi_http_query q = {0};
    pfi_mhd_query(con, &q);
    return pfi_http_query_take(&q, takes, n, e);
}

void pfi_cl_body_done(void *cls, struct MHD_Connection *con, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    pfi_cl_body *u = *con_cls;
    if (u) {
        free(u->buf);
        free(u);
    }
    *con_cls = NULL;
}

static enum MHD_Result send_text(struct MHD_Connection *con, unsigned code, char *text,
                                 const char *type, const char *allow)
{
    if (!text)
        return MHD_NO;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    /* Every answer is the state now (as the node daemon's): a cache must not serve it later. */
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (allow)
        MHD_add_response_header(r, "Allow", allow);
    if (code == 401) /* RFC 9110 11.6.1: a 401 names its scheme, as the node daemon's does */
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"pfi\"");
    enum MHD_Result rc = MHD_queue_response(con, code, r);
    MHD_destroy_response(r);
    return rc;
}

enum MHD_Result pfi_cl_send_text(struct MHD_Connection *con, unsigned code, char *text,
                                 const char *type)
{
    return send_text(con, code, text, type, NULL);
}

enum MHD_Result pfi_cl_send_json_allow(struct MHD_Connection *con, unsigned code, json_t *doc,
                                       size_t flags, const char *allow)
{
    char *text = json_dumps(doc, flags);
    json_decref(doc);
    return send_text(con, code, text, "application/json", allow);
}

enum MHD_Result pfi_cl_send_json(struct MHD_Connection *con, unsigned code, json_t *doc,
                                 size_t flags)
{
    return pfi_cl_send_json_allow(con, code, doc, flags, NULL);
}

void pfi_cl_log_init(pfi_cl_log *l, const char *who)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->mu, NULL);
    l->who = who;
    l->t0 = pfi_clock_mono();
}

void pfi_cl_log_destroy(pfi_cl_log *l)
{
    pthread_mutex_destroy(&l->mu);
}

void pfi_cl_mhd_log(void *cls, const char *fmt, va_list ap)
{
    pfi_cl_log *l = cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = '\0';
    pthread_mutex_lock(&l->mu);
    double now = pfi_clock_mono();
    if (now - l->t0 >= 60) {
        l->t0 = now;
        l->printed = 0;
    }
    if (l->printed >= LOG_PER_MINUTE) {
        l->dropped++;
        pthread_mutex_unlock(&l->mu);
        return;
    }
    l->printed++;
    long long dropped = l->dropped;
    l->dropped = 0;
    pthread_mutex_unlock(&l->mu);
    if (dropped)
        fprintf(stderr, "%s: http: %s (and %lld more messages not shown)\n", l->who, msg,
                dropped);
    else
        fprintf(stderr, "%s: http: %s\n", l->who, msg);
}

size_t pfi_cl_unescape(void *cls, struct MHD_Connection *con, char *s)
{
    (void)cls;
    (void)con;
    return pfi_url_unescape(s);
}
