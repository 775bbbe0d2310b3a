/* SPDX-License-Identifier: Apache-2.0 */
/* http_frame.c: see http_frame.h. */
#include "util/http_frame.h"

#include <limits.h>
#include <stddef.h>
#include <strings.h>

#include "util/num.h"

/* "chunked", in any case, with optional whitespace around it (RFC 9110 5.6.3). */
static int is_chunked(const char *v)
{
    while (*v == ' ' || *v == '\t')
        v++;
    if (strncasecmp(v, "chunked", 7))
        return 0;
    for (v += 7; *v == ' ' || *v == '\t'; v++)
        ;
    return *v == '\0';
}

void pfi_http_frame_note(pfi_http_frame *f, const char *name, const char *value)
{
    if (!name)
        return;
    if (!strcasecmp(name, "Transfer-Encoding")) {
        f->transfer_coding = 1;
        if (!value || !is_chunked(value))
            f->other_coding = 1;
        return;
    }
    if (strcasecmp(name, "Content-Length"))
        return;
    long long n = -1;
    int ok = value && pfi_num_ll(value, 0, LLONG_MAX, "Content-Length", &n, NULL) == PFI_OK;
    if (f->lengths++ == 0) {
        f->first_bad = !ok;
        f->length = ok ? n : -1;
    } else if (!ok || f->first_bad || n != f->length) {
        f->lengths_differ = 1;
    }
}

int pfi_http_frame_check(const pfi_http_frame *f, const char **why)
{
    *why = NULL;
    if (f->lengths && f->transfer_coding)
        *why = "both Content-Length and Transfer-Encoding: the body's length must be said one "
               "way";
    else if (f->lengths_differ)
        *why = "Content-Length given twice with different values";
    else if (f->other_coding)
        *why = "Transfer-Encoding other than chunked is not supported: send the body with a "
               "Content-Length or chunked";
    else
        return 0;
    return f->other_coding && !f->lengths ? 501 : 400;
}
