/* SPDX-License-Identifier: Apache-2.0 */
/* node_url.c: where each node daemon is reached, for every file that sends it a request
 * (controller.c's refresh and heartbeats, apply.c's caps): its URL from the node map or the
 * template, a "unix:" URL's socket, and what a node refusing this controller's token means. */
#include <stdio.h>
#include <string.h>

#include "cluster/cl_int.h"

const char *pfi_cl_unix_sock(const char *base)
{
    return strncmp(base, "unix:", 5) ? NULL : base + 5;
}

void pfi_cl_build_url(const char *base, const char *path, char *out, size_t n)
{
    if (pfi_cl_unix_sock(base)) {
        snprintf(out, n, "http://localhost%s", path);
        return;
    }
    pfi_http_url(base, path, out, n);
}

void pfi_cl_node_url(const pfi_cl_config *cfg, const pfi_cl_topo_node *tn, char *out,
                     size_t n)
{
    if (cfg->node_map[0]) {
        FILE *f = fopen(cfg->node_map, "r");
        char line[600];
        while (f && fgets(line, sizeof line, f)) {
            char name[PFI_CL_NAME_MAX], url[PFI_CL_URL_MAX];
            if (line[0] == '#' || sscanf(line, "%63s %255s", name, url) != 2)
                continue;
            if (!strcmp(name, tn->name)) {
                snprintf(out, n, "%s", url);
                fclose(f);
                return;
            }
        }
        if (f)
            fclose(f);
    }
    size_t o = 0;
    for (const char *p = cfg->node_url; *p && o + 1 < n; p++) {
        const char *piece = NULL;
        if (p[0] == '%' && p[1] == 'n')
            piece = tn->name;
        else if (p[0] == '%' && p[1] == 'a')
            piece = tn->addr[0] ? tn->addr : tn->name;
        if (piece) {
            o += (size_t)snprintf(out + o, n - o, "%s", piece);
            if (o >= n)
                o = n - 1;
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

void pfi_cl_node_refused(pfi_cl_node *n, const char *what, const pfi_http_req *r)
{
    /* Another controller holds the node (node daemon: pfi_srv_other_controller): down, with
     * the daemon's word, until a heartbeat is taken again. */
    if (r->status == 409 && strstr(r->err, "held by controller")) {
        if (!n->refused)
            fprintf(stderr, "pfi cluster: node %s is held by another controller (%s: %s): "
                            "counted at its caps until it is free\n",
                    n->name, what, r->err);
        n->refused = PFI_CL_REFUSED_HELD;
        snprintf(n->why, sizeof n->why, "%s: %s", what, r->err);
        return;
    }
    if (r->status != 401 && r->status != 403) {
        snprintf(n->why, sizeof n->why, "%s: %s", what, r->err);
        return;
    }
    if (!n->refused) /* said once, where the operator looks first */
        fprintf(stderr, "pfi cluster: node %s refuses this controller (%s: HTTP %ld): check "
                        "--node-token-file against the node's token file\n",
                n->name, what, r->status);
    n->refused = PFI_CL_REFUSED_TOKEN;
    snprintf(n->why, sizeof n->why, "%s: HTTP %ld: the node refused the token of "
                                    "--node-token-file",
             what, r->status);
}
