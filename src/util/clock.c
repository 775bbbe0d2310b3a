/* SPDX-License-Identifier: Apache-2.0 */
#include "util/clock.h"

#include <time.h>

static double seconds_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double pfi_clock_mono(void)
{
    return seconds_of(CLOCK_MONOTONIC);
}

double pfi_clock_wall(void)
{
    return seconds_of(CLOCK_REALTIME);
}

void pfi_clock_sleep(double seconds)
{
    if (!(seconds > 0))
        return;
    struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
}
