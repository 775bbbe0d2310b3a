/* SPDX-License-Identifier: Apache-2.0 */
/* clock.h: the one clock of pfi.  Durations and deadlines are measured on the monotonic clock
 * (never jumps with NTP or an operator's date change); timestamps that a person or another host
 * reads are wall-clock seconds since the epoch.  Both are doubles in seconds, so callers subtract
 * them directly.  Below every layer: includes nothing of pfi. */
#ifndef PFI_UTIL_CLOCK_H
#define PFI_UTIL_CLOCK_H

/* Seconds on the monotonic clock (arbitrary origin, shared by the processes of one boot). */
double pfi_clock_mono(void);

/* Seconds since the Unix epoch (wall clock). */
double pfi_clock_wall(void);

/* Sleeps for about `seconds` of real time (nothing when not > 0).  A signal cuts the sleep short
 * on purpose, so loops that sleep notice a stop request; callers check why they woke. */
void pfi_clock_sleep(double seconds);

#endif
