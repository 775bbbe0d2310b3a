/* SPDX-License-Identifier: Apache-2.0 */
#include "util/clock.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double g_scale = 1, g_origin = 0;
static char g_error[160];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* A finite number spelling the whole string, or NAN. */
static double number_of(const char *s)
{
    if (!s || !*s)
        return NAN;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    return *end || errno || !isfinite(v) ? NAN : v;
}

static void read_env(void)
{
    const char *s = getenv("PFI_CLOCK_SCALE"), *o = getenv("PFI_CLOCK_ORIGIN");
    if ((!s || !*s) && (!o || !*o))
        return;
    double scale = number_of(s), origin = number_of(o);
    if (!(scale >= 1 && scale <= 1000))
        snprintf(g_error, sizeof g_error,
                 "PFI_CLOCK_SCALE must be a number from 1 to 1000 (with PFI_CLOCK_ORIGIN), not "
                 "'%s'", s ? s : "");
    else if (!(origin > 0))
        snprintf(g_error, sizeof g_error,
                 "PFI_CLOCK_ORIGIN must be Unix seconds > 0 (with PFI_CLOCK_SCALE), not '%s'",
                 o ? o : "");
    else {
        g_scale = scale;
        g_origin = origin;
    }
}

static double seconds_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double pfi_clock_scale(void)
{
    pthread_once(&g_once, read_env);
    return g_scale;
}

const char *pfi_clock_env_error(void)
{
    pthread_once(&g_once, read_env);
    return g_error[0] ? g_error : NULL;
}

double pfi_clock_mono(void)
{
    return seconds_of(CLOCK_MONOTONIC) * pfi_clock_scale();
}

double pfi_clock_wall(void)
{
    double s = pfi_clock_scale(), t = seconds_of(CLOCK_REALTIME);
    return s == 1 ? t : g_origin + (t - g_origin) * s;
}

double pfi_clock_cpu(void)
{
    return seconds_of(CLOCK_THREAD_CPUTIME_ID);
}

void pfi_clock_sleep(double seconds)
{
    seconds /= pfi_clock_scale();
    if (!(seconds > 0))
        return;
    if (seconds > 1e9) /* past time_t's reach the cast was undefined: no sleep at all */
        seconds = 1e9;
    struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
}
