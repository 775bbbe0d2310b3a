# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests of one `pfi serve` daemon over a shared simulated node (it_serve.sh,
# it_grid.sh, it_chaos.sh): the backend (the fake NVML, else the sim backend over the same
# state: the same daemon code, one layer less, and the test says so), a token file only its
# owner may read, and the daemon's start and stop.
# The caller sets $name, $dir and fail(), exports PFI_SIM_STATE and PFI_JOURNAL, kills $SERVE
# at exit, and may set SERVE_OPTS (options for every start, word-split) and SERVE_HW (the
# backend's options, instead of the choice above; support/node_env.sh).  Sets HW, AUTH (the
# Authorization header).  Functions:
#   start_serve LISTEN [options...]  pfi serve on LISTEN (127.0.0.1:0, unix:PATH) with the token,
#                                    the database $dir/serve.db and the log $dir/serve.log (the
#                                    environment as it is: PFI_FAKENVML_FAULTS, ...); waits until
#                                    it listens; sets SERVE (its pid) and ADDR (where it listens)
#   stop_serve SIGNAL                signals it and waits: returns its exit status
#   wait_listening PID FILE WHAT     waits until FILE (a port file) is written; fails the test
#                                    ("WHAT exited at start") when PID exits first, or after 30 s
unset PFI_SERVE_URL PFI_SERVE_TOKEN_FILE PFI_READ_ONLY
. "$(dirname "$0")/support/wait_listening.sh"
if [ -n "${SERVE_HW:-}" ]; then
    HW=$SERVE_HW
elif [ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ]; then
    HW="--backend nvml --nvml-lib $PFI_FAKENVML"
else
    echo "$name: fake NVML not built (${PFI_FAKENVML:-unset}): running on the sim backend over the same state"
    HW="--backend sim"
fi
[ -s "$dir/token" ] || { head -c 32 /dev/urandom | base64 >"$dir/token"; chmod 600 "$dir/token"; }
AUTH="Authorization: Bearer $(cat "$dir/token")"
SERVE=""

start_serve() {
    rm -f "$dir/port"
    addr=$1
    shift
    # shellcheck disable=SC2086
    "$PFI_BIN" serve $HW --listen "$addr" --port-file "$dir/port" --token-file "$dir/token" \
        --db "$dir/serve.db" ${SERVE_OPTS:-} "$@" >>"$dir/serve.log" 2>&1 &
    SERVE=$!
    wait_listening "$SERVE" "$dir/port" "pfi serve"
    ADDR=$(cat "$dir/port")
}
stop_serve() {
    kill "-$1" "$SERVE"
    wait "$SERVE" 2>/dev/null
    st_=$?
    SERVE=""
    return $st_
}
