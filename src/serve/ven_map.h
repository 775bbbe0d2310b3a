/* SPDX-License-Identifier: Apache-2.0 */
/* ven_map.h: OpenADR 3.0 events read into pfi's grid events, for the VEN (ven.c) and its
 * tests: what an interval asks for, when, and for whom.  JSON in, JSON out: no I/O and no
 * state (ven_map.c). */
#ifndef PFI_SERVE_VEN_MAP_H
#define PFI_SERVE_VEN_MAP_H

#include <stddef.h>

#include <jansson.h>

#include "serve/ven_config.h"

/* A limit of 0 (import nothing) is the strictest a VTN can send, and a site cannot run at
 * nothing: it is held at the least the site can hold, as any limit below that is (the host
 * takes such an event and holds its least).  An event's target must be positive (a manual
 * event of 0 W is a mistake, refused), so it is taken as this, below anything a site holds. */
#define PFI_VEN_LEAST_W 1.0

/* What became of an interval in the mapping, for the log when it is taken: its randomizeStart
 * (rand_s, 0: none) and how much later it starts for it (late_s, -1: not applied, a limit);
 * the VTN's limit in W when it, less the non-GPU allowance, was below any target pfi holds
 * (least_w: taken as PFI_VEN_LEAST_W), else NAN. */
typedef struct pfi_ven_map_note {
    double rand_s, late_s, least_w;
    int priority_ignored; /* a priority given that is not a whole number: taken as none */
} pfi_ven_map_note;

/* One interval (the k-th, iv) of an OpenADR event ev -> the body of the grid event it becomes
 * (store/grid.h's shape; the caller owns it), its window widened by widen_s on both sides (the
 * VTN's clock against ours); a start of "now" (0001-01-01) is now (Unix seconds).  A SIMPLE
 * interval with a randomizeStart R starts (and ends) u * R later, u in [0, 1) drawn from cfg's
 * seed, the VEN's name and the event id; a limit starts on time whatever R.  NULL when nothing
 * is to be done: why[0] is 0 for an interval that asks for nothing (SIMPLE level 0, another
 * VEN's event), else why says what is wrong with it.  nt: what became of it, for the log. */
json_t *pfi_ven_map(const pfi_ven_config *cfg, json_t *ev, json_t *iv, int k, double now,
                    double widen_s, pfi_ven_map_note *nt, char *why, size_t wn);
/* Whether the interval's window starts OpenADR's "now" (0001-01-01). */
int pfi_ven_interval_starts_now(json_t *ev, json_t *iv);
/* The part of a grid event id "oadr-<key>-<interval>" naming the VTN's event, from its id
 * (long ids held as a prefix and a hash), and back from a grid event id ("" when none). */
#define PFI_VEN_KEY_MAX 40 /* a key's length at most */
void pfi_ven_vtn_key(const char *vtn_id, char *out, size_t n);
void pfi_ven_vtn_id_of(const char *id, char *out, size_t n);
/* The payload of an interval pfi acts on (IMPORT_CAPACITY_LIMIT or SIMPLE first), else NULL. */
json_t *pfi_ven_acted_payload(json_t *iv);
/* Whether event ev's targets include this VEN (VEN_NAME, RESOURCE_NAME). */
int pfi_ven_for_this(const pfi_ven_config *cfg, json_t *ev);

#endif
