/* SPDX-License-Identifier: Apache-2.0 */
/* mhd.h: what the two HTTP servers of the cluster share, the controller's API (api.c) and the
 * node stand-ins of its tests (tests/support/standin.c): a request body gathered over
 * libmicrohttpd's calls, its query checked, and JSON replies.  Nothing else includes it. */
#ifndef PFI_CLUSTER_MHD_H
#define PFI_CLUSTER_MHD_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>

#include <jansson.h>
#include <microhttpd.h>

#include "util/http_query.h"

typedef struct pfi_cl_body {
    char *buf; /* NUL-terminated; NULL while empty */
    size_t len;
    int too_big; /* more than max came: the rest was dropped */
} pfi_cl_body;

/* libmicrohttpd calls a handler first with no body, then once per piece of it, then once more
 * for the answer.  Returns 1 while the handler must return MHD_YES at once (the body is still
 * coming), 0 when the body is complete in *out, -1 out of memory (return MHD_NO).  Register
 * pfi_cl_body_done as MHD_OPTION_NOTIFY_COMPLETED to free it. */
int pfi_cl_body_step(void **con_cls, const char *data, size_t *data_size, size_t max,
                     pfi_cl_body **out);
/* 1 when the request's Content-Length says more than max bytes: refuse it before its body
 * comes (libmicrohttpd itself answers 400 to a length that is not a number). */
int pfi_cl_body_too_big(struct MHD_Connection *con, size_t max);
/* 0 when the request says its body's length at most one way, in a way pfi reads, and is no
 * change sent by a web page of another origin; otherwise the status to answer at once, before
 * the body is read (400/501: util/http_frame.h; 403: util/http_origin.h), and *why says why. */
int pfi_cl_body_framing(struct MHD_Connection *con, const char *method, const char **why);
/* Checks every query argument of the request against the n parameters takes[0..n) its route
 * takes (util/http_query.h): PFI_OK with each one given in its *out, or PFI_EINVAL with e
 * naming the argument that is unknown, repeated, empty or out of range. */
int pfi_cl_query_take(struct MHD_Connection *con, const pfi_http_param *takes, int n,
                      pfi_err *e);
void pfi_cl_body_done(void *cls, struct MHD_Connection *con, void **con_cls,
                      enum MHD_RequestTerminationCode toe);

/* libmicrohttpd's messages (MHD_OPTION_EXTERNAL_LOGGER with pfi_cl_mhd_log, cls a
 * pfi_cl_log): to stderr after `who`, at most 10 a minute (a flood of clients refused at the
 * connection limits would otherwise write a line each); those past it are counted, and the
 * count said with the next message printed. */
typedef struct pfi_cl_log {
    pthread_mutex_t mu;
    const char *who;
    double t0;          /* the minute's start (monotonic) */
    int printed;        /* in it */
    long long dropped;  /* since the last printed */
} pfi_cl_log;

void pfi_cl_log_init(pfi_cl_log *l, const char *who);
void pfi_cl_log_destroy(pfi_cl_log *l);
void pfi_cl_mhd_log(void *cls, const char *fmt, va_list ap);

/* MHD_OPTION_UNESCAPE_CALLBACK: util/unescape.h's pfi_url_unescape, the node daemon's rule
 * (docs/api.md): a path or argument with "%00" is left as sent (it matches no route and no
 * number) instead of decoded into a NUL that cuts it short ("/v1/budget%00" read as
 * "/v1/budget"); anything else is unescaped as libmicrohttpd does. */
size_t pfi_cl_unescape(void *cls, struct MHD_Connection *con, char *s);

/* Queues text (malloc'd, taken) as the answer; NULL text: MHD_NO. */
enum MHD_Result pfi_cl_send_text(struct MHD_Connection *con, unsigned code, char *text,
                                 const char *type);
/* Queues doc (decref'd) as the JSON answer, dumped with flags (jansson's). */
enum MHD_Result pfi_cl_send_json(struct MHD_Connection *con, unsigned code, json_t *doc,
                                 size_t flags);
/* The same with an Allow header naming allow, the methods the path takes: a 405's (RFC 9110
 * 15.5.6). */
enum MHD_Result pfi_cl_send_json_allow(struct MHD_Connection *con, unsigned code, json_t *doc,
                                       size_t flags, const char *allow);

#endif
