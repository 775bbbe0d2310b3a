/* SPDX-License-Identifier: Apache-2.0 */
/* ven.c: the OpenADR 3.0 client (serve/ven.h) on the site's grid events: the events the
 * controller holds, added through pfi_cl_grid_add and applied at once (one the SLAs cannot
 * meet taken, and held at the least the site can hold), and their compliance reports. */
#include <string.h>

#include <jansson.h>

#include "cluster/cl_int.h"

static int site_events(void *ctx, pfi_event *out, int cap)
{
    pfi_cl *c = ctx;
    pthread_mutex_lock(&c->mu);
    int n = c->n_grid < cap ? c->n_grid : cap;
    memcpy(out, c->grid_ev, sizeof out[0] * (size_t)n);
    pthread_mutex_unlock(&c->mu);
    return n;
}

static int site_add(void *ctx, void *body, pfi_err *err)
{
    pfi_cl *c = ctx;
    void *res = NULL;
    int created;
    int rc = pfi_cl_grid_add(c, body, PFI_CL_GRID_TAKE_SHORT, &res, &created, err);
    json_decref(res);
    if (rc == PFI_OK) {
        pfi_err e = {0}; /* a failed apply is retried by the loop and shown in its note */
        pfi_cl_reapply(c, &e);
    }
    return rc;
}

static int site_remove(void *ctx, const char *id, pfi_err *err)
{
    pfi_cl *c = ctx;
    int rc = pfi_cl_grid_remove(c, id, err);
    if (rc == PFI_OK) {
        pfi_err e = {0};
        pfi_cl_reapply(c, &e);
    }
    return rc;
}

static int site_let_go(void *ctx, const char *id, pfi_err *err)
{
    pfi_cl *c = ctx;
    int rc = pfi_cl_grid_let_go(c, id, err);
    if (rc == PFI_OK) {
        pfi_err e = {0};
        pfi_cl_reapply(c, &e);
    }
    return rc;
}

static void *site_report(void *ctx, const char *id, pfi_err *err)
{
    return pfi_cl_grid_report(ctx, id, err);
}

static void site_now(void *ctx, pfi_event_site *out)
{
    *out = pfi_cl_grid_site(ctx);
}

static int site_reported(void *ctx, const char *id, double when, pfi_err *err)
{
    return pfi_cl_grid_reported(ctx, id, when, err);
}

int pfi_cl_ven_start(pfi_cl *c, const pfi_ven_config *cfg, pfi_ven **out, pfi_err *err)
{
    *out = NULL;
    int rc = pfi_ven_config_check(cfg, err);
    if (rc != PFI_OK)
        return rc;
    if (!c->grid)
        return pfi_err_set(err, PFI_ESTATE, "openadr: grid events need the store (--db)");
    pfi_ven_host h = {.ctx = c, .name = "pfi cluster", .events = site_events, .add = site_add,
                      .remove = site_remove, .let_go = site_let_go, .report = site_report,
                      .site = site_now, .reported = site_reported};
    return pfi_ven_start(&h, cfg, out, err);
}
