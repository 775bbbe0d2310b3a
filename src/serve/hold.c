/* SPDX-License-Identifier: Apache-2.0 */
/* hold.c: the limits a node holds for a budget or a cluster controller's caps, kept durably
 * in its state database (key "hold" of serve_state), so that a restart (after kill -9, a crash,
 * or a stop with on_stop = hold) comes back at no more than them before it touches anything
 * else, instead of raising power behind the controller's back.
 *
 * Written after every committed decision, before its answer goes out: a decision that was
 * answered is on disk.  A crash between applying and writing leaves the previous hold; the
 * start lowers each GPU to the smaller of what it holds and the hold, so it comes back below
 * both the old and the new caps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_int.h"

#define HOLD_KEY "hold"
#define HOLD_TEXT_MAX (PFI_MAX_GPUS * 160 + 512)

/* What a GPU holds after a decision: the lower of the cap asked and the limit read back. */
static double held_cap(const srv_gpu *g)
{
    double c = g->dev.limit_w;
    if (!isnan(g->requested_w) && (isnan(c) || g->requested_w < c))
        c = g->requested_w;
    return c;
}

void pfi_srv_hold_save(srv_node *n, long long epoch)
{
    if (n->cfg->read_only || !n->audit)
        return;
    pthread_mutex_lock(&n->mu);
    int active = n->mode != SRV_MODE_LOCAL || !isnan(n->budget_w);
    json_t *doc = NULL;
    if (active) {
        json_t *g = json_array();
        for (int i = 0; i < n->n_gpus; i++) {
            double c = held_cap(&n->gpu[i]);
            json_array_append_new(g, json_pack("{s:s, s:o}", "uuid", n->gpu[i].dev.uuid, "cap_w",
                                               isfinite(c) ? json_real(c) : json_null()));
        }
        /* GPUs held before but absent at this start stay held: a restart with them back
         * lowers them to their caps instead of leaving them at their default limit. */
        const srv_hold *a = &n->held_absent;
        for (int k = 0; k < a->n; k++)
            json_array_append_new(g, json_pack("{s:s, s:o}", "uuid", a->uuid[k], "cap_w",
                                               isfinite(a->cap_w[k]) ? json_real(a->cap_w[k])
                                                                     : json_null()));
        doc = json_pack("{s:s, s:I, s:o, s:f, s:o}", "mode", pfi_srv_mode_name(n->mode), "epoch",
                        (json_int_t)(epoch > n->caps_epoch ? epoch : n->caps_epoch), "budget_w",
                        isfinite(n->budget_w) ? json_real(n->budget_w) : json_null(), "ttl_s",
                        n->hb_ttl_s > 0 ? n->hb_ttl_s : 0.0, "gpus", g);
        /* A ramp under way: where it goes and how long it had left, so a restart goes on with
         * it (the step reached was taken back as the operator's budget, for good). */
        double left = n->ramp_t1 - pfi_clock_mono();
        if (doc && n->hold_ramp && n->ramping && n->mode == SRV_MODE_LOCAL &&
            isfinite(n->ramp_to_w))
            json_object_set_new(doc, "ramp",
                                json_pack("{s:f, s:f, s:f}", "to_w", n->ramp_to_w, "left_s",
                                          left > 0 ? left : 0.0, "end_wall",
                                          pfi_clock_wall() + (left > 0 ? left : 0.0)));
    } else {
        n->held_absent.n = 0; /* nothing held: neither are they */
    }
    pthread_mutex_unlock(&n->mu);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (active && !text) {
        pfi_srv_event_add(n, "db_error", "out of memory: the held limits were not saved");
        return;
    }
    if (pfi_audit_set_state(n->audit, HOLD_KEY, active ? text : "none") != PFI_OK)
        pfi_srv_event_add(n, "db_error", "the held limits could not be saved: a restart would "
                                         "come back to older ones");
    free(text);
}

void pfi_srv_hold_clear(srv_node *n)
{
    if (n->cfg->read_only || !n->audit)
        return;
    pthread_mutex_lock(&n->mu);
    n->held_absent.n = 0;
    pthread_mutex_unlock(&n->mu);
    if (pfi_audit_set_state(n->audit, HOLD_KEY, "none") != PFI_OK)
        pfi_srv_event_add(n, "db_error", "the held limits could not be cleared");
}

static int mode_of(const char *s)
{
    if (s && !strcmp(s, "external"))
        return SRV_MODE_EXTERNAL;
    if (s && !strcmp(s, "safe"))
        return SRV_MODE_SAFE;
    return SRV_MODE_LOCAL;
}

int pfi_srv_hold_load(pfi_audit *a, srv_hold *h, pfi_err *err)
{
    memset(h, 0, sizeof *h);
    h->budget_w = NAN;
    h->ramp_to_w = NAN;
    char *text = malloc(HOLD_TEXT_MAX);
    if (!text)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    if (pfi_audit_get_state(a, HOLD_KEY, text, HOLD_TEXT_MAX) != PFI_OK ||
        !strcmp(text, "none")) {
        free(text);
        return PFI_OK;
    }
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    free(text);
    json_t *gpus = json_object_get(doc, "gpus");
    if (!json_is_array(gpus) || json_array_size(gpus) > PFI_MAX_GPUS) {
        json_decref(doc);
        return pfi_err_set(err, PFI_EINVAL, "the held limits in the state database are damaged");
    }
    h->active = 1;
    h->mode = mode_of(json_string_value(json_object_get(doc, "mode")));
    json_t *v = json_object_get(doc, "epoch");
    h->epoch = json_is_integer(v) && json_integer_value(v) > 0 ? json_integer_value(v) : 0;
    v = json_object_get(doc, "budget_w");
    h->budget_w = json_is_number(v) ? json_number_value(v) : NAN;
    v = json_object_get(doc, "ttl_s");
    h->ttl_s = json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : 0;
    json_t *ramp = json_object_get(doc, "ramp");
    v = json_object_get(ramp, "to_w");
    h->ramp_to_w = json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : NAN;
    /* The ramp ends when it was to end: the time the daemon was down counts (a ramp down
     * stretched by the restart held the site above its new budget that much longer). */
    json_t *end = json_object_get(ramp, "end_wall"), *left = json_object_get(ramp, "left_s");
    double l = json_is_number(end)    ? json_number_value(end) - pfi_clock_wall()
               : json_is_number(left) ? json_number_value(left) /* written before end_wall */
                                      : 0;
    h->ramp_left_s = l > 0 ? l : 0;
    size_t i;
    json_t *o;
    json_array_foreach(gpus, i, o)
    {
        const char *u = json_string_value(json_object_get(o, "uuid"));
        json_t *c = json_object_get(o, "cap_w");
        snprintf(h->uuid[h->n], sizeof h->uuid[0], "%s", u ? u : "");
        h->cap_w[h->n] = json_is_number(c) ? json_number_value(c) : NAN;
        h->n++;
    }
    json_decref(doc);
    return PFI_OK;
}

/* The hold's entry for the GPU with this UUID (else the same index when the hold names no
 * UUID), or -1. */
static int hold_entry(const srv_hold *h, const pfi_device *d, int index)
{
    for (int k = 0; k < h->n; k++)
        if (h->uuid[k][0] && !strcmp(h->uuid[k], d->uuid))
            return k;
    return index < h->n && !h->uuid[index][0] ? index : -1;
}

void pfi_srv_hold_absent(const srv_hold *h, const srv_gpu *present, int n, srv_hold *out)
{
    memset(out, 0, sizeof *out);
    int room = PFI_MAX_GPUS - (n > 0 ? n : 0);
    for (int k = 0; k < h->n && out->n < room; k++) {
        const char *u = h->uuid[k];
        int seen = !u[0];
        for (int i = 0; !seen && i < n; i++)
            seen = !strcmp(present[i].dev.uuid, u);
        for (int m = 0; !seen && m < out->n; m++)
            seen = !strcmp(out->uuid[m], u);
        if (seen)
            continue;
        snprintf(out->uuid[out->n], sizeof out->uuid[0], "%s", u);
        out->cap_w[out->n++] = h->cap_w[k];
    }
}

int pfi_srv_hold_clamp(pfi_backend *b, const srv_hold *h, const unsigned char *to_min,
                       int *lowered, int *at_min, int *failed)
{
    *lowered = *at_min = *failed = 0;
    int count = 0;
    pfi_err e = {0};
    if (pfi_hw_count(b, &count, &e) != PFI_OK)
        return e.code;
    /* Lowerings only: in any order, the sum only goes down. */
    for (int i = 0; i < count; i++) {
        pfi_device d;
        if (pfi_hw_info(b, i, &d, &e) != PFI_OK) {
            (*failed)++;
            continue;
        }
        int k = hold_entry(h, &d, i);
        /* One the hold does not name (it was never held here, or was dropped): its minimum,
         * where the caller asks (a controller counts it at nothing or idle). */
        int min = k < 0 && to_min && i < PFI_MAX_GPUS && to_min[i];
        if (!min && (k < 0 || isnan(h->cap_w[k])))
            continue;
        double cap = min || h->cap_w[k] < d.min_limit_w ? d.min_limit_w : h->cap_w[k];
        if (pfi_hw_held_mw(d.limit_w) <= pfi_hw_cap_mw(cap)) {
            *at_min += min;
            continue;
        }
        if (pfi_hw_set_limit(b, i, cap, NULL, &e) != PFI_OK)
            (*failed)++;
        else if (min)
            (*at_min)++;
        else
            (*lowered)++;
    }
    return PFI_OK;
}

int pfi_srv_hold_names(const srv_hold *h, const pfi_device *d, int index)
{
    return hold_entry(h, d, index) >= 0;
}

double pfi_srv_hold_cap(const srv_hold *h, const pfi_device *d, int index)
{
    int k = hold_entry(h, d, index);
    return k >= 0 ? h->cap_w[k] : NAN;
}
