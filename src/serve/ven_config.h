/* SPDX-License-Identifier: Apache-2.0 */
/* ven_config.h: the settings of the OpenADR 3.0 client (ven.h), read from a daemon's
 * configuration (ven_config.c). Keys (docs/cluster.md, docs/serve.md):
 *   vtn_url, token_url ("" : VTN_URL/auth/token), client_id, secret_file (first line, chmod
 *   600), program (programName), resource (resourceName in reports), ven_name (venName,
 *   default the client id), callback_url (this daemon's base URL as the VTN reaches it: a
 *   subscription's notifications go to it), poll, timeout, ramp,
 *   max_skew (durations), simple_cut_1..3 (percentages: the cut of each SIMPLE level),
 *   randomize_seed (an integer: which start offsets a randomizeStart draws), sla (keep or
 *   yield: whether the jobs' SLAs give way to the VTN's events), non_gpu_power (a fixed power,
 *   "2kW": the site's draw besides its GPUs, off each import limit, onto each DEMAND). */
#ifndef PFI_SERVE_VEN_CONFIG_H
#define PFI_SERVE_VEN_CONFIG_H

#include "core/err.h"

#define PFI_VEN_URL_MAX 256

typedef struct pfi_ven_config {
    char vtn_url[PFI_VEN_URL_MAX];   /* the VTN's API base, e.g. https://vtn.example/openadr3 */
    char token_url[PFI_VEN_URL_MAX]; /* OAuth 2.0 token endpoint ("" : VTN_URL/auth/token) */
    char client_id[128];
    char secret_file[512];           /* the client secret: first line, chmod 600 */
    char program[128];               /* programName */
    char resource[64];               /* resourceName in reports and registration */
    char ven_name[128];              /* venName it registers as ("": the client id) */
    char callback_url[PFI_VEN_URL_MAX]; /* where the VTN reaches this daemon ("": no
                                      * subscription, polling alone) */
    double poll_s, timeout_s, ramp_s;
    double max_skew_s;               /* the clocks may disagree by this much (default 30 s) */
    double simple_cut[4];            /* SIMPLE level 1..3 -> cut of the baseline */
    long long randomize_seed;        /* >= 0 (default 0): with the venName and the event id,
                                      * the offset of a randomizeStart (ven_map.c start_fraction) */
    int sla_yield;                   /* sla = yield: the jobs' SLAs give way to the VTN's events
                                      * (default keep: held at the least the SLAs allow) */
    /* What the site draws besides its GPUs (W, default 0): pfi caps only the GPUs, and a VTN's
     * import limit covers the meter, so this is taken off each limit for the GPUs' budget and
     * added to the DEMAND and USAGE reported. */
    double non_gpu_w;
} pfi_ven_config;

/* No VTN, poll 10 s, timeout 5 s, ramp 5 min, max skew 30 s, SIMPLE cuts 10/20/30%, seed 0,
 * the resource name given. */
void pfi_ven_config_defaults(pfi_ven_config *c, const char *resource);
/* One setting by its key (above); an unknown key or a bad value is an error naming it. */
int pfi_ven_config_set(pfi_ven_config *c, const char *key, const char *value, pfi_err *err);
/* "key = value" lines ('#' comments); errors name the file and line. */
int pfi_ven_config_load(pfi_ven_config *c, const char *path, pfi_err *err);
/* Whether the settings are complete and in range (PFI_EINVAL naming the first problem). */
int pfi_ven_config_check(const pfi_ven_config *c, pfi_err *err);

#endif
