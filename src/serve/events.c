/* SPDX-License-Identifier: Apache-2.0 */
/* events.c: the daemon's event log: a ring in memory (GET /v1/events), stderr, and the audit
 * log.  Below decisions, telemetry and the control loop, which all report through it. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "serve/serve_int.h"

void pfi_srv_event_add(srv_node *n, const char *kind, const char *fmt, ...)
{
    srv_event e;
    memset(&e, 0, sizeof e);
    e.wall = pfi_clock_wall();
    snprintf(e.kind, sizeof e.kind, "%s", kind);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof e.msg, fmt, ap);
    va_end(ap);
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
