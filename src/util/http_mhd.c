/* SPDX-License-Identifier: Apache-2.0 */
/* http_mhd.c: libmicrohttpd's header and argument walks into util/'s checks (http_mhd.h). */
#include "util/http_mhd.h"
#include "util/http_frame.h"
#include "util/http_origin.h"

static enum MHD_Result frame_note(void *cls, enum MHD_ValueKind kind, const char *name,
                                  const char *value)
{
    (void)kind;
    pfi_http_frame_note(cls, name, value);
    return MHD_YES;
}

static enum MHD_Result origin_note(void *cls, enum MHD_ValueKind kind, const char *name,
                                   const char *value)
{
    (void)kind;
    pfi_http_origin_note(cls, name, value);
    return MHD_YES;
}

/* Every argument, in order: a route checks them against what it takes, so a misspelt or
 * repeated one is refused rather than ignored (a lookup by name saw neither). */
static enum MHD_Result query_note(void *cls, enum MHD_ValueKind kind, const char *name,
                                  const char *value)
{
    (void)kind;
    pfi_http_query_note(cls, name, value);
    return MHD_YES;
}

int pfi_mhd_screen(struct MHD_Connection *con, const char *method, const char **why)
{
    pfi_http_frame f = {0};
    MHD_get_connection_values(con, MHD_HEADER_KIND, frame_note, &f);
    int status = pfi_http_frame_check(&f, why);
    if (status)
        return status;
    pfi_http_origin o = {0};
    MHD_get_connection_values(con, MHD_HEADER_KIND, origin_note, &o);
    return pfi_http_origin_cross(&o, method, why) ? 403 : 0;
}

void pfi_mhd_query(struct MHD_Connection *con, pfi_http_query *q)
{
    MHD_get_connection_values(con, MHD_GET_ARGUMENT_KIND, query_note, q);
}
