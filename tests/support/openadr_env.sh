# SPDX-License-Identifier: Apache-2.0
# Sourced by the OpenADR tests (it_openadr*.sh): the tools they need, a
# scratch folder removed at exit with every process in $pids, pfi's clock scaled SCALE times
# (util/clock.h; every process of the test shares it: daemons, fake NVML, sampler, test VTN),
# the backend, the token and the VTN client's secret, and the helpers below.
# The caller sets $name, and may set PFI_CLOCK_SCALE's factor in SCALE (default 100) and the
# logs fail shows in $logs (default "serve vtn": $dir/serve.log, $dir/vtn.log).  Sets SAMPLER,
# here, PY, dir, pids, HW.  Functions:
#   fail MSG              prints "$name: FAIL: MSG" and the end of each log, exits 1
#   note MSG              prints "$name: MSG"
#   wait_file FILE WHAT   waits until FILE is not empty (a daemon's port file)
#   limits, sum_limits    the GPUs' limits as the simulated state has them, and their sum
#   le A B                A <= B (half a watt of printing allowed)
#   now, iso T            pfi's scaled clock (Unix seconds), T as ISO 8601 UTC
#   sleep_until T         sleeps until pfi's clock reaches T
#   cap_target FRACTION   the draw now (draw, W), FRACTION of it (TARGET, W) and in kW (KW)
#   publish_cap S DUR     starts the sampler on $dir/allowed (SAMPLE) and, once it watches
#                         (sampler_start, support/sampler.sh), publishes to $VTN an
#                         IMPORT_CAPACITY_LIMIT event of $KW kW from S (pfi's clock) for DUR
#                         (ISO 8601, e.g. PT10M)
#   check_start S         at S (pfi's clock), fails when the limits sum to more than $TARGET
#   check_restored MAX    waits until the limits sum to MAX again, stops the sampler and fails
#                         when it did not watch to the end (sampler_stop) or any sampled instant
#                         was over what $dir/allowed allowed
#   oadr_event ID TYPE V S [R] [EXTRA]
#                         an event's body for the VTN: id ID, one interval from S (pfi's
#                         clock) for an hour asking TYPE (SIMPLE, or IMPORT_CAPACITY_LIMIT in
#                         kW) with value V, the event's randomizeStart R (none when empty or
#                         absent), EXTRA fields first (e.g. '"programID": "p2", ')
#   randomized_by FILE S R SEED VEN [limit]
#                         FILE, a grid event (GET /v1/grid/events/ID) taken from such an event
#                         from S with randomizeStart R seconds by the VEN named VEN with
#                         randomize_seed SEED: prints how late it starts (its
#                         openadr.randomized_s); fails (what is wrong on stderr) unless its
#                         openadr fields name S and R, its window is the VTN's hour moved by
#                         that offset, and the offset is the draw docs/cluster.md gives
#                         (whole seconds in [0, R] drawn from SEED, VEN and the event id; 0
#                         for a limit)
#   await N MSG CMD...    runs CMD every 0.05 s until it succeeds; after N more tries, fails
#                         with MSG expanded then (single-quoted, it shows the state at the end)
#   not CMD...            CMD failed (for await)
#   start_vtn CLIENT PROGRAM ARGS...
#                         starts the test VTN (tests/vtn.py, log $dir/vtn.log) for client CLIENT
#                         with $dir/secret and program PROGRAM, then ARGS; waits for it; sets VTN
#   publish JSON          posts an event to the VTN (fails when it is refused)
#   serve_openadr ARGS... starts `pfi serve` on $HW (token, $dir/serve.db, $dir/serve.log, a
#                         sample every 4 s) with its VEN on $VTN as pfi-node of program node-dr,
#                         then ARGS (where it listens, how it polls); adds it to $pids
# Over that node (http://127.0.0.1:PORT in $NODE_URL when set, else unix:$dir/serve.sock):
#   get PATH              the body of GET PATH (fails as curl -f does)
#   ven_num FIELD         a number of GET /v1/grid/openadr (polls, errors, events_taken, ...)
#   served                the node answers /healthz
#   held ID               the node holds the VTN's event ID (its interval 0: ID-0)
#   polled N              the VEN has polled N times or more
#   polls N               waits for N more polls (p0: the count before them)
fail() {
    echo "$name: FAIL: $*"
    for f in ${logs:-serve vtn}; do
        [ -f "${dir:-}/$f.log" ] && { echo "-- $f"; tail -n 15 "$dir/$f.log"; }
    done
    exit 1
}
note() { echo "$name: $*"; }
. "$(dirname "$0")/support/sampler.sh"
command -v curl >/dev/null || { echo "$name: curl is missing (scripts/install-deps.sh test)"; exit 77; }
command -v python3 >/dev/null || { echo "$name: python3 is missing (scripts/install-deps.sh test)"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
# The interpreter itself, found once (a version manager's shim costs seconds a call when loaded).
PY=$(python3 -c 'import sys; print(sys.executable)') || { echo "$name: python3 does not run"; exit 1; }

dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/$name.XXXXXX") || exit 1
pids=""
cleanup() {
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    [ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
SCALE=${SCALE:-100}
PFI_CLOCK_SCALE=$SCALE PFI_CLOCK_ORIGIN=$(date +%s)
export PFI_CLOCK_SCALE PFI_CLOCK_ORIGIN
unset PFI_SERVE_URL PFI_SERVE_TOKEN_FILE PFI_READ_ONLY
if [ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ]; then
    HW="--backend nvml --nvml-lib $PFI_FAKENVML"
else
    echo "$name: fake NVML not built ($PFI_FAKENVML): running on the sim backend over the same state"
    HW="--backend sim"
fi
head -c 32 /dev/urandom | base64 >"$dir/token"
head -c 32 /dev/urandom | base64 >"$dir/secret"
chmod 600 "$dir/token" "$dir/secret"

await() {
    _n=$1 _msg=$2
    shift 2
    _k=0
    until "$@"; do
        _k=$((_k + 1))
        [ $_k -gt "$_n" ] && eval "fail \"$_msg\""
        sleep 0.05
    done
}
not() { ! "$@"; }
wait_file() {
    i=0
    while [ ! -s "$1" ]; do
        i=$((i + 1)); [ $i -gt 600 ] && fail "$2 did not start"
        sleep 0.05
    done
}
limits() {
    # shellcheck disable=SC2086
    "$PFI_BIN" gpus $HW --read-only --json | awk -F': ' '/"limit_w"/ { sub(/,$/, "", $2); printf "%s ", $2 }'
}
sum_limits() { limits | awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; printf "%.1f\n", s }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b + 0.5) }'; }
now() { awk -v r="$(date +%s.%N)" -v s="$SCALE" -v o="$PFI_CLOCK_ORIGIN" 'BEGIN { printf "%.3f", o + (r - o) * s }'; }
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
sleep_until() { while awk -v a="$(now)" -v b="$1" 'BEGIN { exit !(a < b) }'; do sleep 0.05; done; }
cap_target() {
    draw=$("$PFI_BIN" gpus $HW --read-only --json | awk -F': ' '/"power_w"/ { sub(/,$/, "", $2); s += $2 } END { printf "%.0f", s }')
    TARGET=$(awk -v d="$draw" -v f="$1" 'BEGIN { printf "%.0f", f * d }')
    KW=$(awk -v t="$TARGET" 'BEGIN { printf "%.3f", t / 1000 }')
}
publish_cap() {
    sampler_start "$dir/sampled" --sample "$PFI_SIM_STATE" "$dir/allowed" "$dir/sampled"
    pids="$pids $SAMPLE"
    curl -sf -o /dev/null -X POST -d "{\"eventName\": \"cap\", \"priority\": 0, \"intervalPeriod\": {\"start\": \"$(iso "$1")\", \"duration\": \"$2\"}, \"payloadDescriptors\": [{\"payloadType\": \"IMPORT_CAPACITY_LIMIT\", \"units\": \"KW\"}], \"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [$KW]}]}]}" \
        "$VTN/_test/events" || fail "publishing the event"
}
check_start() {
    sleep_until "$1"
    s=$(sum_limits)
    le "$s" "$TARGET" || fail "at the start the limits sum to $s W > $TARGET W"
    note "at the start: limits sum $s W (target $TARGET W)"
}
check_restored() {
    i=0
    until awk -v a="$(sum_limits)" -v b="$1" 'BEGIN { exit !(a == b) }'; do
        i=$((i + 1)); [ $i -gt 200 ] && fail "limits not restored after the event: $(limits)"
        sleep 0.1
    done
    sampler_stop "$dir/sampled"
    note "sampler: $samples instants, largest sum $maxsum W, $viol over the target or a restore step"
    [ "$viol" = 0 ] || fail "the limits exceeded the event's target or a restore step at $viol sampled instants"
}
start_vtn() {
    _client=$1 _program=$2
    shift 2
    "$PY" "$here/vtn.py" --port-file "$dir/vtn.port" --client-id "$_client" --secret-file "$dir/secret" \
        --program "$_program" "$@" >"$dir/vtn.log" 2>&1 &
    pids="$pids $!"
    wait_file "$dir/vtn.port" "the VTN"
    VTN=http://127.0.0.1:$(cat "$dir/vtn.port")
}
publish() { curl -sf -o /dev/null -X POST -d "$1" "$VTN/_test/events" || fail "publishing $1"; }
serve_openadr() {
    # shellcheck disable=SC2086
    "$PFI_BIN" serve $HW --token-file "$dir/token" --db "$dir/serve.db" --sample-interval 4s \
        --set openadr_vtn_url="$VTN" --set openadr_client_id=pfi-node \
        --set openadr_secret_file="$dir/secret" --set openadr_program=node-dr "$@" >"$dir/serve.log" 2>&1 &
    pids="$pids $!"
}
get() {
    if [ -n "${NODE_URL:-}" ]; then
        curl -sf "$NODE_URL$1"
    else
        curl -sf --unix-socket "$dir/serve.sock" "http://node$1"
    fi
}
ven_num() { get /v1/grid/openadr | tr ',{}' '\n\n\n' | sed -n "s/^ *\"$1\": *//p"; }
served() { get /healthz >/dev/null 2>&1; }
held() { get "/v1/grid/events/oadr-$1" >/dev/null 2>&1; }
polled() { [ "$(ven_num polls)" -ge "$1" ]; }
polls() {
    p0=$(ven_num polls)
    # shellcheck disable=SC2016 # await expands it when it fails
    await 200 'the VEN stopped polling: $(get /v1/grid/openadr)' polled $((p0 + $1))
}
oadr_event() {
    _d=""
    [ "$2" = IMPORT_CAPACITY_LIMIT ] && _d='"payloadDescriptors": [{"payloadType": "IMPORT_CAPACITY_LIMIT", "units": "KW"}], '
    printf '{"id": "%s", %s"intervalPeriod": {"start": "%s", "duration": "PT1H"%s}, %s"intervals": [{"id": 0, "payloads": [{"type": "%s", "values": [%s]}]}]}' \
        "$1" "${6:-}" "$(iso "$4")" "${5:+, \"randomizeStart\": \"$5\"}" "$_d" "$2" "$3"
}
randomized_by() {
    "$PY" - "$@" <<'EOF'
import json, math, sys, time
ev, s, r = json.load(open(sys.argv[1])), float(sys.argv[2]), float(sys.argv[3])
seed, ven, limit = int(sys.argv[4]), sys.argv[5].encode(), sys.argv[6:] == ["limit"]
o = ev.get("openadr")
assert o, "no openadr fields"
late = o["randomized_s"]
assert o["vtn_start_s"] == s and o["randomize_start_s"] == r and o["interval"] == 0, o
assert o["vtn_start"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(s)), o["vtn_start"]
assert ev["start_s"] == s + late and ev["end_s"] == s + late + 3600, (ev["start_s"], ev["end_s"])
# The draw as documented: FNV-1a of the venName (its terminating 0 too) and the event id, the
# seed added, splitmix64's finalizer; its top 53 bits a share u of [0, 1); u * (R + 1) whole.
M = (1 << 64) - 1
h = 14695981039346656037
for c in ven + b"\0" + o["event_id"].encode():
    h = ((h ^ c) * 1099511628211) & M
z = (h + seed * 0x9E3779B97F4A7C15) & M
z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
z ^= z >> 31
want = 0 if limit else min(math.floor((z >> 11) * 2.0 ** -53 * (r + 1)), r)
assert late == want, "randomized_s %s, the draw for seed %d and venName %s is %s" % (late, seed, ven, want)
print("%.0f" % late)
EOF
}
