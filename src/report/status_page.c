/* SPDX-License-Identifier: Apache-2.0 */
#include "report/status_page.h"

const char *pfi_status_page(size_t *len)
{
    if (len)
        *len = (size_t)pfi_status_page_html_len;
    return (const char *)pfi_status_page_html;
}
