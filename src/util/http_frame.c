/* SPDX-License-Identifier: Apache-2.0 */
/* http_frame.c: see http_frame.h. */
#include "util/http_frame.h"

#include <limits.h>
#include <stddef.h>
#include <strings.h>

#include "util/num.h"

void pfi_http_frame_note(pfi_http_frame *f, const char *name, const char *value)
{
    if (!name)
        return;
    if (!strcasecmp(name, "Transfer-Encoding")) {
        f->transfer_coding = 1;
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

const char *pfi_http_frame_why(const pfi_http_frame *f)
{
    if (f->lengths && f->transfer_coding)
        return "both Content-Length and Transfer-Encoding: the body's length must be said one "
               "way";
    if (f->lengths_differ)
        return "Content-Length given twice with different values";
    return NULL;
}
