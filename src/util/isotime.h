/* SPDX-License-Identifier: Apache-2.0 */
/* isotime.h: times people and other programs write: ISO 8601 UTC ("2026-12-01T18:00:00Z"),
 * Unix seconds, and times relative to now ("now", "now+10m", "+2h").  Below every layer but
 * core/err.h. */
#ifndef PFI_UTIL_ISOTIME_H
#define PFI_UTIL_ISOTIME_H

#include <stddef.h>

#include "core/err.h"

/* The last second a four-digit ISO 8601 year writes, 9999-12-31T23:59:59Z, in Unix seconds:
 * the latest time pfi takes or writes (a double beyond time_t's range cannot be converted). */
#define PFI_TIME_MAX_S 253402300799.0

/* Parses s into Unix seconds.  Accepts "YYYY-MM-DDTHH:MM[:SS[.fff]](Z|+HH:MM|-HH:MM)", a bare
 * number (Unix seconds), "now", "now+DURATION" / "+DURATION" (util/units.h durations) relative
 * to now.  Trailing garbage, a missing time zone, an impossible date, or a time after
 * PFI_TIME_MAX_S is PFI_EINVAL. */
int pfi_time_parse(const char *s, double now, double *t, pfi_err *err);

/* "2026-12-01T18:00:00Z" (whole seconds, UTC); "" for a time outside the years 0000-9999
 * (infinite, not a number, or beyond what a four-digit year writes). */
void pfi_time_format(double t, char *buf, size_t size);

#endif
