/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the node daemon's configuration file reader (src/serve/config.c).  Input:
 * the file's text, given to the reader through a memory file.  A file it accepts must hold
 * durations and watts a daemon can run with (finite, not negative), and the cross-field check
 * must answer either way. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "serve/serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int runnable(double v)
{
    return isfinite(v) && v >= 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("serve.conf", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    pfi_serve_config *c = malloc(sizeof *c);
    if (c) {
        pfi_serve_config_defaults(c);
        pfi_err e = {0};
        if (pfi_serve_config_load(c, path, &e) == PFI_OK) {
            if (!runnable(c->sample_interval_s) || !runnable(c->reoptimize_interval_s) ||
                !runnable(c->min_change_interval_s) || !runnable(c->hysteresis_w) ||
                !runnable(c->watchdog_timeout_s) || !runnable(c->client_timeout_s) ||
                !runnable(c->log_switch_after_s) || c->threads < 0 || c->max_conns < 0 ||
                c->max_client_conns < 0)
                abort(); /* a setting the daemon cannot run with was taken */
            if (!(isnan(c->default_sla) || (c->default_sla >= 0 && isfinite(c->default_sla))))
                abort();
            pfi_serve_config_check(c, &e);
        } else if (!e.msg[0]) {
            abort(); /* a refusal says why */
        }
    }
    free(c);
    close(fd);
    return 0;
}
