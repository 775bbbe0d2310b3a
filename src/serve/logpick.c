/* SPDX-License-Identifier: Apache-2.0 */
/* logpick.c: which of a job's two output files, stdout or stderr, is its log (discover.c
 * looks at them; this is the rule alone, serve_int.h).
 *
 * A job may print its throughput to either: torchtitan's metrics (Python's logging) and
 * progress bars go to stderr, print()s to stdout; a job can move from one to the other (its
 * first epoch's bars to stderr, later metrics printed to stdout; a relaunch with another
 * logger).  The one that shows throughput now is followed, stdout when both or neither do at
 * the first choice.  A followed file keeps its place while its new lines show throughput; it
 * gives way only when the other's new lines show throughput and its own have shown none for
 * switch_after_s: a pause (a checkpoint, an evaluation) or the other file's stray line is no
 * switch.  Only one file is read at a time, so a reading never mixes the two. */
#include <math.h>

#include "serve/serve_int.h"

void pfi_srv_logpick_init(srv_logpick *lp)
{
    lp->followed = 0;
    lp->settled = 0;
    lp->shown_t[0] = lp->shown_t[1] = -INFINITY;
}

srv_logpick_change pfi_srv_logpick_step(srv_logpick *lp, const int shows[2], double now,
                                        double switch_after_s)
{
    for (int s = 0; s < 2; s++)
        if (shows[s])
            lp->shown_t[s] = now;
    if (!lp->settled) {
        if (!shows[0] && !shows[1])
            return SRV_LOGPICK_SAME; /* stdout, until one of them shows throughput */
        lp->followed = shows[0] ? 0 : 1;
        lp->settled = 1;
        return SRV_LOGPICK_CHOSEN;
    }
    int f = lp->followed, o = 1 - f;
    if (shows[o] && !shows[f] && now - lp->shown_t[f] >= switch_after_s) {
        lp->followed = o;
        return SRV_LOGPICK_SWITCHED;
    }
    return SRV_LOGPICK_SAME;
}
