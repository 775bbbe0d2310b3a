/* backend_sim.c: PLACEHOLDER until the simulator lands (issue 2); replaced, not kept. */
#include "hw/hw.h"

static int sim_open(pfi_backend *b, const char *arg, pfi_err *err)
{
    return pfi_err_set(err, PFI_ENOTSUP, "the simulator backend is not built yet");
}
static void sim_close(pfi_backend *b) {}
const pfi_backend_ops pfi_backend_sim_ops = {.name = "sim", .open = sim_open, .close = sim_close};
