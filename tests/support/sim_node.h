/* SPDX-License-Identifier: Apache-2.0 */
/* sim_node.h: a node daemon's state (src/serve) over the simulator backend in virtual time, in
 * a scratch folder, for the daemon's own tests (tests/test_serve_api.c, test_serve_control.c).
 * Built with the tests, never into libpfi.a. */
#ifndef PFI_TESTS_SUPPORT_SIM_NODE_H
#define PFI_TESTS_SUPPORT_SIM_NODE_H

#include "serve/serve_int.h"

typedef struct pfi_test_node {
    char dir[400];          /* the scratch folder: $PFI_TEST_TMP/TAG-XXXXXX */
    pfi_serve_config cfg;   /* as given, with its state database in dir */
    pfi_backend *b;
    srv_node *n;            /* initialized, its audit store open */
} pfi_test_node;

/* Starts a private node (PFI_SIM_STATE unset) under cfg (NULL: the defaults).  0 on success;
 * -1 with the reason on stderr. */
int pfi_test_node_start(pfi_test_node *t, const char *tag, const pfi_serve_config *cfg);
/* Stops it and removes its folder. */
void pfi_test_node_stop(pfi_test_node *t);

#endif
