/* SPDX-License-Identifier: Apache-2.0 */
/* names.c: the names of serve's states as the API, the metrics and the audit log spell them.
 * A leaf: every file of serve/ may call it, it calls none of them. */
#include "serve/serve_int.h"

const char *pfi_srv_mode_name(int m)
{
    return m == SRV_MODE_EXTERNAL ? "external" : m == SRV_MODE_SAFE ? "safe" : "local";
}

const char *pfi_srv_curve_src_name(int src)
{
    static const char *names[] = {"none", "given", "pfi30", "predicted", "probed", "observed"};
    return src >= 0 && src <= SRV_CURVE_OBSERVED ? names[src] : "none";
}
