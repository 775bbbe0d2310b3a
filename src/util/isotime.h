/* SPDX-License-Identifier: Apache-2.0 */
/* isotime.h: times people and other programs write: ISO 8601 UTC ("2026-12-01T18:00:00Z"),
 * Unix seconds, and times relative to now ("now", "now+10m", "+2h").  Below every layer but
 * core/err.h. */
#ifndef PFI_UTIL_ISOTIME_H
#define PFI_UTIL_ISOTIME_H

#include <stddef.h>

#include "core/err.h"

/* Parses s into Unix seconds.  Accepts "YYYY-MM-DDTHH:MM[:SS[.fff]](Z|+HH:MM|-HH:MM)", a bare
 * number (Unix seconds), "now", "now+DURATION" / "+DURATION" (util/units.h durations) relative
 * to now.  Trailing garbage, a missing time zone, or an impossible date is PFI_EINVAL. */
int pfi_time_parse(const char *s, double now, double *t, pfi_err *err);

/* "2026-12-01T18:00:00Z" (whole seconds, UTC); "" for a time that is not finite. */
void pfi_time_format(double t, char *buf, size_t size);

#endif
