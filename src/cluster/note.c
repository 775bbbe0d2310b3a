/* SPDX-License-Identifier: Apache-2.0 */
/* note.c: the controller's note, the last thing worth telling an operator (/v1/allocation, the
 * status page).  Below every other file of the layer, which all say things through it. */
#include <stdarg.h>
#include <stdio.h>

#include "cluster/cl_int.h"
#include "util/clock.h"

void pfi_cl_note(pfi_cl *c, int condition, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->note, sizeof c->note, fmt, ap);
    va_end(ap);
    c->note_at = pfi_clock_wall();
    c->note_condition = condition;
    c->note_seq++;
}
