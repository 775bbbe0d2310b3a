/* SPDX-License-Identifier: Apache-2.0 */
/* answer_once.h: an HTTP answer read in one piece with util/http_answer.h's reader (begun,
 * given every byte at once, ended): what the tests and the fuzz target compare reads made
 * step by step with. */
#ifndef PFI_TESTS_SUPPORT_ANSWER_ONCE_H
#define PFI_TESTS_SUPPORT_ANSWER_ONCE_H

#include "util/http_answer.h"

static inline int answer_once(const char *in, size_t n, int eof, int head, size_t max,
                              pfi_http_answer *a)
{
    pfi_http_answer_reader rd;
    pfi_http_answer_begin(&rd, head, max);
    int rc = pfi_http_answer_more(&rd, in, n, eof, a);
    pfi_http_answer_end(&rd);
    return rc;
}

#endif
