/* SPDX-License-Identifier: Apache-2.0 */
/* status_page.h: the status page people open in a browser (GET / on `pfi serve` and
 * `pfi cluster serve`).  One self-contained HTML file, src/report/status_page.html, compiled in
 * by the Makefile (as a byte array generated from it): edit the HTML, not C strings. */
#ifndef PFI_REPORT_STATUS_PAGE_H
#define PFI_REPORT_STATUS_PAGE_H

#include <stddef.h>

/* The page's bytes, NUL-terminated, and their length without the NUL.  Static: never freed. */
const char *pfi_status_page(size_t *len);

/* Defined in the file the Makefile generates from status_page.html. */
extern const unsigned char pfi_status_page_html[];
extern const unsigned long pfi_status_page_html_len;

#endif
