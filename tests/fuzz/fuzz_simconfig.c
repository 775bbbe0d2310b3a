/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the simulator's node configuration reader (src/sim/config.c).  Input: the
 * JSON text.  A configuration it accepts must dump to text it accepts again, equal field for
 * field, and must build a node. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    pfi_node_config *c = calloc(2, sizeof *c);
    if (c && pfi_sim_config_parse(text, &c[0], NULL) == PFI_OK) {
        char *dump = pfi_sim_config_dump(&c[0]);
        pfi_err e = {0};
        if (!dump || pfi_sim_config_parse(dump, &c[1], &e) != PFI_OK)
            abort(); /* what the reader accepted, its own dump must give back */
        char *again = pfi_sim_config_dump(&c[1]);
        if (!again || strcmp(dump, again) != 0)
            abort();
        free(again);
        free(dump);
        pfi_sim_node *node = NULL;
        if (pfi_sim_node_new(&c[0], &node, NULL) == PFI_OK)
            pfi_sim_node_free(node);
    }
    free(c);
    free(text);
    return 0;
}
