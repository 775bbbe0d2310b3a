# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests of what talks to one node daemon on simulated GPUs over its Unix socket
# (it_ctl.sh, it_event_cli.sh, it_budget.sh): a fresh directory T (removed at exit, the daemon
# killed), fail(), jq checked, no daemon address, token or journal taken from the environment
# (only the options given count), the simulator's state in T.  The daemon is started by
# support/serve_env.sh's start_serve, which fails the test when it exits or does not listen.
# The caller sets $name (its name in messages).  Sets PFI (the binary), T, SERVE (the daemon's
# pid once started) and serve_env.sh's AUTH.  Functions:
#   start_node NAME  pfi serve on eight idle simulated H200s (--sim h200x8-idle) at
#                    unix:$T/NAME.sock, token $T/token, journal $T/NAME.journal, samples every
#                    100 ms; its log $T/serve.log
#   stop_serve SIGNAL  (serve_env.sh) signals it and waits: returns its exit status
PFI=${PFI_BIN:?PFI_BIN not set}
T=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/$name.XXXXXX") || exit 1
dir=$T
SERVE=""
cleanup() { [ -n "$SERVE" ] && kill "$SERVE" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "$name: FAIL: $*"; [ -s "$T/serve.log" ] && tail -n 20 "$T/serve.log"; exit 1; }
command -v jq >/dev/null || fail "jq is needed (scripts/install-deps.sh)"
unset PFI_JOURNAL
export PFI_SIM_STATE="$T/sim.state" PFI_STATE_DIR="$T"
SERVE_HW="--backend sim --sim h200x8-idle"
. "$(dirname "$0")/support/serve_env.sh"

start_node() {
    start_serve "unix:$T/$1.sock" --journal "$T/$1.journal" --sample-interval 100ms
}
