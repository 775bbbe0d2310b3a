/* SPDX-License-Identifier: Apache-2.0 */
/* fake_inband.c: the in-band power limit of a GPU under an out-of-band cap (see fake.h).
 *
 * Under an oob-cap the simulator runs a GPU at the capped limit while NVML's in-band limit
 * reads what was asked.  Kept in the process only, that asked value was lost to every other
 * process on a shared node (PFI_SIM_STATE): they read the simulator's capped limit as the
 * in-band one, and a sweep started later journaled it as the original.  So on a shared node it
 * lives in a side file beside the state, $PFI_SIM_STATE.inband, one line per GPU:
 *   gpu G inband_w W run_at_w R
 * R is the limit the simulator was given for it: when the simulator's limit is no longer R,
 * something else set it (pfi sim set, the sim backend), and the line is stale. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "fakenvml/fake.h"

#define INBAND_LINE_MAX 96

static int side_path(char *buf, size_t n)
{
    const char *ss = getenv("PFI_SIM_STATE");
    if (!ss || !*ss)
        return 0;
    return snprintf(buf, n, "%s.inband", ss) < (int)n;
}

/* Reads every line of the side file into in[] / at[] (NAN where none). */
static void read_lines(int fd, double *in, double *at)
{
    for (int i = 0; i < PFI_MAX_GPUS; i++)
        in[i] = at[i] = NAN;
    char buf[PFI_MAX_GPUS * INBAND_LINE_MAX];
    ssize_t got = pread(fd, buf, sizeof buf - 1, 0);
    if (got <= 0)
        return;
    buf[got] = '\0';
    for (char *line = buf; line && *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        int g;
        double w, r;
        if (sscanf(line, "gpu %d inband_w %lf run_at_w %lf", &g, &w, &r) == 3 && g >= 0 &&
            g < PFI_MAX_GPUS && isfinite(w) && isfinite(r)) {
            in[g] = w;
            at[g] = r;
        }
        line = next;
    }
}

double fake_inband_get(fake_gpu *g, double sim_limit_w)
{
    char path[4200];
    double inband = g->inband_w, run_at = g->run_at_w;
    if (side_path(path, sizeof path)) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return NAN;
        double in[PFI_MAX_GPUS], at[PFI_MAX_GPUS];
        flock(fd, LOCK_SH);
        read_lines(fd, in, at);
        close(fd);
        inband = in[g->dev.index];
        run_at = at[g->dev.index];
    }
    /* Compared in whole milliwatts, as NVML reports limits. */
    if (isnan(inband) || lround(run_at * 1000.0) != lround(sim_limit_w * 1000.0))
        return NAN;
    return inband;
}

void fake_inband_put(fake_gpu *g, double inband_w, double run_at_w)
{
    g->inband_w = inband_w;
    g->run_at_w = run_at_w;
    char path[4200];
    if (!side_path(path, sizeof path))
        return;
    /* A node never under an out-of-band cap gets no side file. */
    int capped = lround(inband_w * 1000.0) != lround(run_at_w * 1000.0);
    if (!capped && access(path, F_OK) != 0)
        return;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "fake libnvidia-ml: cannot write %s: %s\n", path, strerror(errno));
        return;
    }
    flock(fd, LOCK_EX);
    double in[PFI_MAX_GPUS], at[PFI_MAX_GPUS];
    read_lines(fd, in, at);
    in[g->dev.index] = inband_w;
    at[g->dev.index] = run_at_w;
    char buf[PFI_MAX_GPUS * INBAND_LINE_MAX];
    size_t len = 0;
    for (int i = 0; i < PFI_MAX_GPUS; i++)
        if (!isnan(in[i]))
            len += (size_t)snprintf(buf + len, sizeof buf - len,
                                    "gpu %d inband_w %.3f run_at_w %.3f\n", i, in[i], at[i]);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, len, 0) != (ssize_t)len)
        fprintf(stderr, "fake libnvidia-ml: cannot write %s: %s\n", path, strerror(errno));
    close(fd);
}
