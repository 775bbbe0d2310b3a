#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# it_http_allow.sh: a 405 from either HTTP server, the node daemon's (`pfi serve`) and the
# cluster controller's (`pfi cluster serve`), names the methods its path takes in an Allow
# header (RFC 9110 section 15.5.6 requires one; both sent none), and each method it names is
# not itself answered 405.  No other answer carries the header.  A change a web page of another
# origin sent (the browser's Origin or Sec-Fetch-Site says so) is refused with 403 by both, and
# changes nothing; the same request from a client that is no browser is taken.
# Needs $PFI_BIN, curl, jq; $PFI_FAKENVML when built (else the sim backend).
set -u
name=it_http_allow
fail() {
    echo "it_http_allow: FAIL: $*"
    for l in "$dir/serve.log" "$dir/cluster.log"; do [ -s "$l" ] && tail -n 20 "$l"; done
    exit 1
}
: "${PFI_BIN:?PFI_BIN not set}"
command -v curl >/dev/null || { echo "it_http_allow: curl is missing (scripts/install-deps.sh test)"; exit 77; }
dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_http_allow.XXXXXX") || exit 1
SERVE="" CLU=""
cleanup() { for p in $SERVE $CLU; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal" PFI_STATE_DIR="$dir"
. "$(dirname "$0")/support/serve_env.sh"
start_serve 127.0.0.1:0

# METHOD URL STATUS ALLOW: the answer's status, and its Allow header ("" for none)
check() {
    curl -s --max-time 10 -D "$dir/head" -o /dev/null -X "$1" "$2" || fail "$1 $2: no answer"
    st=$(awk 'NR == 1 { print $2 }' "$dir/head")
    allow=$(tr -d '\r' <"$dir/head" | awk -F': ' 'tolower($1) == "allow" { print $2 }')
    [ "$st" = "$3" ] && [ "$allow" = "$4" ] ||
        fail "$1 $2: $st, Allow '$allow' (expected $3, '$4')"
    # every method named is taken: not a 405
    echo "$allow" | tr -d ' ' | tr ',' '\n' | while read -r m; do
        [ -n "$m" ] || continue
        if [ "$m" = HEAD ]; then how=--head; else how="-X $m"; fi
        # shellcheck disable=SC2086
        code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' $how "$2")
        [ "$code" != 405 ] || fail "$2 names $m in Allow but answers it 405"
    done || exit 1
}

N="http://$ADDR"
check DELETE "$N/healthz" 405 "GET, HEAD"
check POST "$N/v1/budget" 405 "GET, HEAD, PUT, DELETE"
check PATCH "$N/v1/jobs" 405 "GET, HEAD, POST"
check GET "$N/v1/caps" 405 "PUT"
check DELETE "$N/v1/jobs/a/throughput" 405 "POST"
check PUT "$N/v1/jobs/a" 405 "GET, HEAD, DELETE"
check PUT "$N/v1/grid/events" 405 "GET, HEAD, POST"
check POST "$N/v1/grid/events/e1" 405 "GET, HEAD, DELETE"
check PUT "$N/v1/grid/events/e1/report" 405 "GET, HEAD"
check POST "$N/v1/grid/openadr" 405 "GET, HEAD"
check GET "$N/v1/grid/openadr/notify/abc" 405 "POST"
check GET "$N/nope" 404 ""
check GET "$N/v1/jobsx" 404 ""
check PUT "$N/v1/budget" 401 ""

# METHOD URL BODY STATUS [HEADER...]: a change with the token, as a browser with that header
# would send it (text/plain: no preflight)
xsite() {
    m=$1 u=$2 b=$3 want=$4
    shift 4
    code=$(curl -s --max-time 10 -o "$dir/x.out" -w '%{http_code}' -X "$m" \
        -H "Authorization: Bearer $(cat "$dir/token")" -H 'Content-Type: text/plain' \
        "$@" --data "$b" "$u")
    [ "$code" = "$want" ] || fail "$m $u with $*: $code (expected $want): $(cat "$dir/x.out")"
    if [ "$want" = 403 ]; then
        grep -q "web page of another origin" "$dir/x.out" || fail "$m $u 403 says: $(cat "$dir/x.out")"
    fi
}
ev() { printf '{"id": "%s", "start": "2099-01-01T00:00:00Z", "end": "2099-01-01T01:00:00Z", "limit_w": 1700}' "$1"; }
xsite POST "$N/v1/grid/events" "$(ev evil1)" 403 -H 'Origin: http://localhost:18005'
xsite POST "$N/v1/grid/events" "$(ev evil2)" 403 -H 'Sec-Fetch-Site: cross-site'
xsite POST "$N/v1/grid/events" "$(ev evil3)" 403 -H "Origin: http://$ADDR" -H 'Sec-Fetch-Site: same-site'
xsite POST "$N/v1/grid/events" "$(ev evil4)" 403 -H 'Origin: null'
xsite PUT "$N/v1/budget" '{"budget": "70%"}' 403 -H 'Origin: http://localhost:18005'
ids=$(curl -s --max-time 10 "$N/v1/grid/events" | jq -c '[.events[].id]')
[ "$ids" = "[]" ] || fail "a refused cross-site change left events: $ids"
[ "$(curl -s --max-time 10 "$N/v1/budget" | jq -c .budget_w)" = null ] || fail "a refused cross-site budget was set"
xsite POST "$N/v1/grid/events" "$(ev own1)" 201 -H "Origin: http://$ADDR"
xsite POST "$N/v1/grid/events" "$(ev own2)" 201
xsite POST "$N/v1/grid/events" "$(ev own3)" 201 -H 'Sec-Fetch-Site: same-origin'

# The controller, over one node it never reaches (its grid routes need none).
mkdir "$dir/bin"
for c in sinfo squeue; do printf '#!/bin/sh\nexit 1\n' >"$dir/bin/$c"; chmod +x "$dir/bin/$c"; done
echo '{"nodes": [{"name": "n1", "gpus": 8}], "jobs": []}' >"$dir/topo.json"
PATH="$dir/bin:$PATH" "$PFI_BIN" cluster serve --listen 127.0.0.1:0 --port-file "$dir/c.port" \
    --token-file "$dir/token" --topology "$dir/topo.json" --node-url "unix:$dir/%n.sock" \
    --heartbeat 0 --db "$dir/cluster.db" >"$dir/cluster.log" 2>&1 &
CLU=$!
wait_listening "$CLU" "$dir/c.port" "pfi cluster serve"
C="http://127.0.0.1:$(cat "$dir/c.port")"
check PUT "$C/v1/grid/events" 405 "GET, HEAD, POST"
check POST "$C/v1/grid/events/e1" 405 "GET, HEAD, DELETE"
check DELETE "$C/v1/grid/events/e1/report" 405 "GET, HEAD"
check PUT "$C/v1/grid/openadr" 405 "GET, HEAD"
check GET "$C/v1/grid/openadr/notify/abc" 405 "POST"
check DELETE "$C/healthz" 405 "GET, HEAD"
check POST "$C/metrics" 405 "GET, HEAD"
check PUT "$C/v1/nodes" 405 "GET, HEAD"
check POST "$C/v1/allocation" 405 "GET, HEAD"
check DELETE "$C/v1/jobs" 405 "GET, HEAD"
check POST "$C/" 405 "GET, HEAD"
check PUT "$C/v1/history" 405 "GET, HEAD"
check PUT "$C/v1/decisions" 405 "GET, HEAD"
check GET "$C/v1/budget" 405 "PUT"
check GET "$C/v1/refresh" 405 "POST"
check GET "$C/nope" 404 ""
check GET "$C/v1/nodesx" 404 ""
check PUT "$C/v1/budget" 401 ""
check POST "$C/v1/refresh" 401 ""
xsite POST "$C/v1/refresh" '' 403 -H 'Origin: http://localhost:18005'
xsite POST "$C/v1/grid/events" "$(ev evil1)" 403 -H 'Sec-Fetch-Site: cross-site'
xsite PUT "$C/v1/budget" '{"budget": "70%"}' 403 -H 'Origin: http://evil.example'
[ "$(curl -s --max-time 10 "$C/v1/grid/events" | jq -c '[.events[].id]')" = "[]" ] ||
    fail "a refused cross-site change left the controller an event"
xsite POST "$C/v1/refresh" '' 200 -H "Origin: $C"
# The controller's answers carry what the node daemon's do: no caching, the charset of its
# metrics (UTF-8 node names), a 401's scheme.
for d in "$N" "$C"; do
    curl -s --max-time 10 -D "$dir/h" -o /dev/null "$d/metrics"
    tr -d '\r' <"$dir/h" | grep -qi '^content-type: text/plain; version=0.0.4; charset=utf-8$' ||
        fail "$d/metrics: $(grep -i content-type "$dir/h")"
    for u in /metrics / /v1/jobs /nope; do
        curl -s --max-time 10 -D "$dir/h" -o /dev/null "$d$u"
        tr -d '\r' <"$dir/h" | grep -qi '^cache-control: no-store$' || fail "$d$u: no Cache-Control: no-store"
    done
    curl -s --max-time 10 -D "$dir/h" -o /dev/null -X PUT --data '{}' "$d/v1/budget"
    tr -d '\r' <"$dir/h" | grep -qi '^www-authenticate: Bearer realm="pfi"$' ||
        fail "$d: a 401 without WWW-Authenticate: $(head -1 "$dir/h")"
done
echo "it_http_allow: ok"
