# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests that watch the GPUs' power limits with tests/test_serve_sampler
# (it_serve.sh, it_grid.sh, it_chaos.sh, it_restart.sh, support/openadr_env.sh); the caller
# sets $name.  Checks $PFI_BIN and sets SAMPLER, the sampler of the same build.
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "$name: PFI_BIN is not set"; exit 1; }
SAMPLER=$(dirname "$PFI_BIN")/tests/test_serve_sampler
[ -x "$SAMPLER" ] || { echo "$name: $SAMPLER is not built"; exit 1; }
