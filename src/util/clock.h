/* SPDX-License-Identifier: Apache-2.0 */
/* clock.h: the one clock of pfi.  Durations and deadlines are measured on the monotonic clock
 * (never jumps with NTP or an operator's date change); timestamps that a person or another host
 * reads are wall-clock seconds since the epoch.  Both are doubles in seconds, so callers subtract
 * them directly.  Below every layer: includes nothing of pfi.
 *
 * Scaled time, for tests: with PFI_CLOCK_SCALE=S (S in [1, 1000]) and PFI_CLOCK_ORIGIN=T0 (Unix
 * seconds) in the environment, both clocks run S times faster than real time: the wall clock
 * reads T0 + (real - T0) * S, the monotonic clock S times its real reading, and
 * pfi_clock_sleep(d) sleeps d / S real seconds.  Every process given the same two values (the
 * daemons, their clients, a test's own VTN) agrees on the time, so an event of 20 minutes with
 * 5 minute ramps takes 20 s and 5 s of real time at S = 60.  What cannot run faster (a network
 * round trip, a GPU's limit write) takes S times longer on this clock: a margin for such a
 * latency is a real-time figure times pfi_clock_scale().  Unset, both clocks are real. */
#ifndef PFI_UTIL_CLOCK_H
#define PFI_UTIL_CLOCK_H

/* Seconds on the monotonic clock (arbitrary origin, shared by the processes of one boot). */
double pfi_clock_mono(void);

/* Seconds since the Unix epoch (wall clock). */
double pfi_clock_wall(void);

/* CPU seconds the calling thread has used (never scaled): what a benchmark on a shared machine
 * should time, since other processes' load does not count in it. */
double pfi_clock_cpu(void);

/* Sleeps for about `seconds` of this clock (seconds / scale of real time; nothing when not > 0).
 * A signal cuts the sleep short on purpose, so loops that sleep notice a stop request; callers
 * check why they woke. */
void pfi_clock_sleep(double seconds);

/* How many seconds of this clock pass per real second: 1 unless PFI_CLOCK_SCALE is set. */
double pfi_clock_scale(void);

/* NULL when PFI_CLOCK_SCALE and PFI_CLOCK_ORIGIN are unset or valid; else why they are not (the
 * clock then runs in real time: a program should refuse to start rather than disagree with its
 * peers on the time). */
const char *pfi_clock_env_error(void);

#endif
