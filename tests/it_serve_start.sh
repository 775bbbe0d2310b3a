#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Starts of `pfi serve` that cannot serve, on the fake NVML over a shared simulated node.
# A --db or a unix: --listen in a folder that does not exist exits 1 naming the folder and how
# to make it: SQLite said "unable to open database file" and bind() "No such file or
# directory", and outside systemd nothing makes the example config's /var/lib/pfi and /run/pfi.
# A second daemon (its own node) whose listen address the first holds, TCP or a Unix socket,
# exits 1 and never changed a limit: the simulated node's state file, which logs every limit
# change, is the same byte for byte.  It applied its start budget first, then restored the
# limits and exited, so that under Restart=on-failure the GPUs were cut and restored every 2 s.
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
set -u
name=it_serve_start

fail() { echo "$name: FAIL: $*"; exit 1; }
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "$name: PFI_BIN is not set"; exit 1; }
dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/$name.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' INT TERM
unset PFI_BACKEND PFI_READ_ONLY PFI_FAKENVML_FAULTS PFI_FAKENVML_FAULTS_FILE PFI_DB
export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
. "$(dirname "$0")/support/serve_env.sh"
"$PFI_BIN" sim init >/dev/null || fail "pfi sim init"

# serve_exit1 WHAT OPTIONS...: pfi serve exits 1 and names $dir/nodir in WHAT's message.
serve_exit1() {
    what=$1
    shift
    # shellcheck disable=SC2086
    "$PFI_BIN" serve $HW --token-file "$dir/token" --budget 70% "$@" >"$dir/out" 2>&1
    rc=$?
    [ $rc -eq 1 ] || fail "$what in a missing folder: exit $rc (want 1): $(cat "$dir/out")"
    grep -qF "cannot create $what $dir/nodir/" "$dir/out" &&
        grep -qF "the folder $dir/nodir does not exist (create it first: mkdir -p $dir/nodir)" "$dir/out" ||
        fail "$what in a missing folder: the message does not name the folder: $(cat "$dir/out")"
    [ ! -e "$dir/nodir" ] || fail "$what: $dir/nodir was made"
}
serve_exit1 database --listen 127.0.0.1:0 --db "$dir/nodir/serve.db"
serve_exit1 socket --listen "unix:$dir/nodir/serve.sock" --db "$dir/serve.db"

# ---- a second daemon on a taken listen address ----
SERVE=""
trap '[ -n "$SERVE" ] && kill -9 "$SERVE" 2>/dev/null; rm -rf "$dir"' EXIT
for listen in 127.0.0.1:0 "unix:$dir/first.sock"; do
    export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
    start_serve "$listen"
    export PFI_SIM_STATE="$dir/second.state" PFI_JOURNAL="$dir/second.journal"
    rm -f "$PFI_SIM_STATE"
    "$PFI_BIN" sim init >/dev/null || fail "pfi sim init (second node)"
    before=$(cksum <"$PFI_SIM_STATE")
    # shellcheck disable=SC2086
    "$PFI_BIN" serve $HW --listen "$ADDR" --token-file "$dir/token" --db "$dir/second.db" \
        --budget 70% >"$dir/out" 2>&1
    rc=$?
    [ $rc -eq 1 ] || fail "a second daemon on $ADDR: exit $rc (want 1): $(cat "$dir/out")"
    grep -qE "cannot listen on|another daemon listens on" "$dir/out" ||
        fail "a second daemon on $ADDR: not the listen error: $(cat "$dir/out")"
    [ "$(cksum <"$PFI_SIM_STATE")" = "$before" ] ||
        fail "a second daemon on $ADDR changed its GPUs' limits before it failed: $(cat "$dir/out")"
    [ ! -e "$dir/second.journal" ] || fail "a second daemon on $ADDR left a journal"
    export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
    stop_serve TERM || fail "the first daemon on $ADDR: exit $? at SIGTERM"
done

echo "$name: ok"
