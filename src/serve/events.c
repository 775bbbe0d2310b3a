/* SPDX-License-Identifier: Apache-2.0 */
/* events.c: the daemon's event log: a ring in memory (GET /v1/events), stderr, and the audit
 * log.  Below decisions, telemetry and the control loop, which all report through it. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "serve/serve_int.h"
#include "util/text.h"

/* src as one line into dst: a control character is written as C writes it (\n, \r, \t,
 * \xHH).  An event quotes what others chose (a controller's name, the log file a local user
 * named, a driver's message): a newline in it wrote a line of their making into the log. */
static void one_line(char *dst, size_t size, const char *src)
{
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)src; *p && k + 5 < size; p++) {
        int u = *p >= 0x80 ? pfi_utf8_len((const char *)p) : 1;
        if (u > 1 && k + (size_t)u + 5 < size) { /* a whole UTF-8 character */
            memcpy(dst + k, p, (size_t)u);
            k += (size_t)u;
            p += u - 1;
        } else if (*p >= 0x20 && *p != 0x7f && *p < 0x80)
            dst[k++] = (char)*p;
        else if (*p == '\n' || *p == '\r' || *p == '\t')
            k += (size_t)snprintf(dst + k, size - k, "\\%c",
                                  *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't');
        else
            k += (size_t)snprintf(dst + k, size - k, "\\x%02x", *p);
    }
    dst[k] = '\0';
}

void pfi_srv_event_add(srv_node *n, const char *kind, const char *fmt, ...)
{
    srv_event e;
    memset(&e, 0, sizeof e);
    e.wall = pfi_clock_wall();
    snprintf(e.kind, sizeof e.kind, "%s", kind);
    char raw[sizeof e.msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    one_line(e.msg, sizeof e.msg, raw);
    pthread_mutex_lock(&n->mu);
    e.id = n->ev_next++;
    n->ev[e.id % SRV_EVENTS] = e;
    pthread_mutex_unlock(&n->mu);
    /* The daemon's log is stderr (journald under systemd); the audit DB keeps them too. */
    fprintf(stderr, "pfi serve: %s: %s\n", e.kind, e.msg);
    /* Not an event of its own: that one could not be written either. */
    if (pfi_audit_event(n->audit, e.wall, e.kind, e.msg) != PFI_OK)
        fprintf(stderr, "pfi serve: db_error: the event above is not in the audit log\n");
}
