/* SPDX-License-Identifier: Apache-2.0 */
/* sim_node.c: a node daemon's state over the simulator for tests (sim_node.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/backend_impl.h"
#include "sim_node.h"

int pfi_test_node_start(pfi_test_node *t, const char *tag, const pfi_serve_config *cfg)
{
    memset(t, 0, sizeof *t);
    const char *base = getenv("PFI_TEST_TMP");
    snprintf(t->dir, sizeof t->dir, "%s/%s-XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(t->dir)) {
        perror(t->dir);
        return -1;
    }
    unsetenv("PFI_SIM_STATE"); /* a private node in virtual time */
    if (cfg)
        t->cfg = *cfg;
    else
        pfi_serve_config_defaults(&t->cfg);
    snprintf(t->cfg.db, sizeof t->cfg.db, "%s/serve.db", t->dir);
    pfi_err e = {0};
    if (pfi_hw_open("sim", NULL, 0, &t->b, &e) != PFI_OK) {
        fprintf(stderr, "sim backend: %s\n", e.msg);
        return -1;
    }
    t->n = calloc(1, sizeof *t->n);
    if (!t->n || pfi_srv_node_init(t->n, &t->cfg, t->b, &e) != PFI_OK ||
        pfi_audit_open(t->cfg.db, &t->n->audit, &e) != PFI_OK) {
        fprintf(stderr, "node: %s\n", t->n ? e.msg : "out of memory");
        return -1;
    }
    return 0;
}

void pfi_test_node_stop(pfi_test_node *t)
{
    pfi_audit_close(t->n->audit);
    pfi_srv_node_destroy(t->n);
    free(t->n);
    pfi_hw_close(t->b);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", t->dir);
}
