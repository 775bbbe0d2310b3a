/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: an OpenADR 3.0 event as a VTN sends it (JSON the grid operator writes, the
 * most exposed input the node takes) -> the grid events its intervals become
 * (serve/ven_map.c, pfi_ven_map) -> the reader every grid event goes through
 * (store/grid.h, pfi_grid_event_from_json) and the check against the site
 * (pfi_event_validate).  Any shape must map or be refused with a reason, never crash, leak or
 * read out of bounds; a body the mapping gives is a JSON object, and one the host would take
 * starts before it ends. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/event.h"
#include "serve/ven_map.h"
#include "store/grid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 2026-06-01T00:00:00Z, as the mapping tests. */
#define NOW_S 1780272000.0

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *ev = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
    if (!ev)
        return 0;
    pfi_ven_config c;
    pfi_ven_config_defaults(&c, "node");
    snprintf(c.program, sizeof c.program, "dr");
    snprintf(c.client_id, sizeof c.client_id, "pfi-site");
    json_t *ivs = json_object_get(ev, "intervals");
    size_t n = json_is_array(ivs) ? json_array_size(ivs) : 1;
    for (size_t k = 0; k < n && k < 16; k++) {
        char why[300] = "";
        json_t *iv = json_is_array(ivs) ? json_array_get(ivs, k) : ivs;
        pfi_ven_map_note nt;
        json_t *b = pfi_ven_map(&c, ev, iv, (int)k, NOW_S, 60, &nt, why, sizeof why);
        if (!b)
            continue;
        if (!json_is_object(b))
            abort();
        /* The host's path: read, then checked against the site (an absurd window, such as a
         * randomizeStart of 1e99 minutes, is refused there with its reason). */
        pfi_event e;
        pfi_err err = {0};
        pfi_event_site site = {.max_w = 5600, .manual_w = INFINITY, .restore_step_s = 60,
                               .restore_w_per_s = INFINITY};
        if (pfi_grid_event_from_json(b, NOW_S, &e, &err) == PFI_OK &&
            pfi_event_validate(&e, &site, &err) == PFI_OK && !(e.start_s < e.end_s))
            abort();
        json_decref(b);
    }
    json_decref(ev);
    return 0;
}
