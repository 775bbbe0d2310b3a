/* SPDX-License-Identifier: Apache-2.0 */
/* mhd.c: request bodies and JSON replies over libmicrohttpd (mhd.h). */
#include "cluster/mhd.h"

#include <stdlib.h>
#include <string.h>

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

enum MHD_Result pfi_cl_send_text(struct MHD_Connection *con, unsigned code, char *text,
                                 const char *type)
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
    enum MHD_Result rc = MHD_queue_response(con, code, r);
    MHD_destroy_response(r);
    return rc;
}

enum MHD_Result pfi_cl_send_json(struct MHD_Connection *con, unsigned code, json_t *doc,
                                 size_t flags)
{
    char *text = json_dumps(doc, flags);
    json_decref(doc);
    return pfi_cl_send_text(con, code, text, "application/json");
}
