/* SPDX-License-Identifier: Apache-2.0 */
/* num.h: numbers read from the network or a file.  Every parser takes the whole string (no
 * trailing garbage, no empty string), checks the range the caller allows and says what it
 * expected, so an overflowing or out-of-range value never reaches arithmetic. */
#ifndef PFI_UTIL_NUM_H
#define PFI_UTIL_NUM_H

#include <stddef.h>

#include "core/err.h"

/* Decimal integer in [lo, hi], digits only: a '-' before them only when lo < 0, never a '+'
 * or a blank; `what` names the value in the error ("since"). */
int pfi_num_ll(const char *s, long long lo, long long hi, const char *what, long long *out,
               pfi_err *err);
int pfi_num_int(const char *s, int lo, int hi, const char *what, int *out, pfi_err *err);

/* A finite double as an integer step count, or -1 when it is negative, not finite or not below
 * `max`: converting an out-of-range double to an integer is undefined behaviour. */
long long pfi_num_to_ll(double x, long long max);

/* A finite double as JSON text that reads back as the very same double, into out[0..n) (at
 * least 32 bytes): a whole number below 2^53 as an integer ("450"), written without printf's
 * floating-point path, which costs several times more; anything else as %.17g.  Returns its
 * length. */
int pfi_num_json(char *out, size_t n, double v);

/* A finite double as the shortest "%.<p>g" text, p from 15 to 17, that reads back as the very
 * same double (248.88729140209105, not %.15g's 248.887291402091; 0.1, not %.17g's
 * 0.10000000000000001), into out[0..n) (at least 32 bytes).  Returns its length. */
int pfi_num_shortest(char *out, size_t n, double v);

#endif
