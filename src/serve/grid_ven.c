/* SPDX-License-Identifier: Apache-2.0 */
/* grid_ven.c: the OpenADR 3.0 client (ven.h) on this node's grid events (grid.c), when the
 * openadr_* settings name a VTN: the events the node holds, added through pfi_srv_grid_add
 * (validated, saved and applied at once; one the SLAs cannot meet taken and held at the least
 * the node can hold), and their compliance reports for the VTN. */
#include <string.h>

#include "serve/serve_int.h"

static int node_events(void *ctx, pfi_event *out, int cap)
{
    srv_node *n = ctx;
    pthread_mutex_lock(&n->mu);
    int k = n->n_grid < cap ? n->n_grid : cap;
    memcpy(out, n->grid_ev, sizeof out[0] * (size_t)k);
    pthread_mutex_unlock(&n->mu);
    return k;
}

static int node_add(void *ctx, void *body, pfi_err *err)
{
    json_t *res = NULL;
    int rc = pfi_srv_grid_add(ctx, body, SRV_GRID_TAKE_SHORT, &res, NULL, err);
    json_decref(res);
    return rc;
}

static int node_remove(void *ctx, const char *id, pfi_err *err)
{
    json_t *res = NULL;
    int rc = pfi_srv_grid_remove(ctx, id, &res, err);
    json_decref(res);
    return rc;
}

static int node_let_go(void *ctx, const char *id, pfi_err *err)
{
    return pfi_srv_grid_let_go(ctx, id, err);
}

static void *node_report(void *ctx, const char *id, pfi_err *err)
{
    return pfi_srv_grid_report(ctx, id, err);
}

static void node_site(void *ctx, pfi_event_site *out)
{
    srv_node *n = ctx;
    pthread_mutex_lock(&n->mu);
    *out = pfi_srv_grid_site(n, n->manual_w);
    pthread_mutex_unlock(&n->mu);
}

static int node_reported(void *ctx, const char *id, double when, pfi_err *err)
{
    return pfi_srv_grid_reported(ctx, id, when, err);
}

int pfi_srv_ven_start(srv_node *n, pfi_err *err)
{
    const pfi_ven_config *cfg = &n->cfg->openadr;
    if (!cfg->vtn_url[0])
        return PFI_OK;
    if (!n->grid)
        return pfi_err_set(err, PFI_ESTATE, "openadr: grid events need the state database");
    pfi_ven_host h = {.ctx = n, .name = "pfi serve", .events = node_events, .add = node_add,
                      .remove = node_remove, .let_go = node_let_go, .report = node_report,
                      .site = node_site, .reported = node_reported};
    pfi_ven *v;
    int rc = pfi_ven_start(&h, cfg, &v, err);
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "openadr_* settings: ");
    pthread_mutex_lock(&n->mu);
    n->ven = v;
    pthread_mutex_unlock(&n->mu);
    return PFI_OK;
}

void pfi_srv_ven_stop(srv_node *n)
{
    if (!n->ven) /* only the main thread sets it: also safe before the node's mutex exists */
        return;
    pthread_mutex_lock(&n->mu);
    pfi_ven *v = n->ven;
    n->ven = NULL;
    pthread_mutex_unlock(&n->mu);
    pfi_ven_stop(v);
}
