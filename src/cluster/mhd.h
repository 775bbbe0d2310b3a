/* SPDX-License-Identifier: Apache-2.0 */
/* mhd.h: what the two HTTP servers of the cluster share, the controller's API (api.c) and the
 * node stand-ins of its tests (tests/support/standin.c): a request body gathered over
 * libmicrohttpd's calls, and JSON replies.  Nothing else includes it. */
#ifndef PFI_CLUSTER_MHD_H
#define PFI_CLUSTER_MHD_H

#include <stddef.h>

#include <jansson.h>
#include <microhttpd.h>

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
void pfi_cl_body_done(void *cls, struct MHD_Connection *con, void **con_cls,
                      enum MHD_RequestTerminationCode toe);

/* Queues text (malloc'd, taken) as the answer; NULL text: MHD_NO. */
enum MHD_Result pfi_cl_send_text(struct MHD_Connection *con, unsigned code, char *text,
                                 const char *type);
/* Queues doc (decref'd) as the JSON answer, dumped with flags (jansson's). */
enum MHD_Result pfi_cl_send_json(struct MHD_Connection *con, unsigned code, json_t *doc,
                                 size_t flags);

#endif
