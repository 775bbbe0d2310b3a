#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The status page (GET /) of `pfi serve` and `pfi cluster serve`, in headless Chromium: one
# self-contained HTML document (no external asset: Chromium resolves no host name, and the
# HTML names no URL of its own but the API's paths), read-only (no request but GET), showing
# the API's strings as text only (no markup built from them), served
# without a token like the other GETs; every figure it shows (budget, sum of limits, draw, each
# GPU's or node's caps, each job's cap, throughput, PFI30 and SLA headroom, the active and next
# grid events, the last decisions) matches the API (tests/support/check_status_page.py), and it
# refreshes itself; its plot is /v1/history's numbers.  With read_auth = token, GET / without the
# token is refused saying so; through a proxy that adds the token (docs/api.md) the page works;
# through one that adds it to the page alone, the page says its reads want the token and shows
# no figure.  The same for a controller run with --read-auth token (over that node, whose reads
# it makes with the node token).  A node gone silent is shown stale on the site page (its caps
# the last acknowledged, no draw), not with its last values as current.  Screenshots are kept
# next to the pfi binary: status-page-node.png and status-page-site.png (build/ for the normal
# build).
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
set -u
name=it_status_page
CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
    { echo "$name: FAIL: chromium is missing (scripts/install-deps.sh test installs it)"; exit 1; }
command -v python3 >/dev/null || { echo "$name: FAIL: python3 is missing (scripts/install-deps.sh test)"; exit 1; }
out=$(cd "$(dirname "$PFI_BIN")" && pwd)
. "$(dirname "$0")/support/monitor_env.sh"
"$PFI_BIN" event --url "$CL" --token-file "$TOKEN" add --id site-next --start now+1h \
    --duration 30m --limit 4600W >/dev/null || fail "grid event on the controller"

# The page itself: HTML, the same bytes on both daemons, no token needed, nothing external.
for u in "$N1" "$CL"; do
    curl -sf -D "$dir/h" -o "$dir/page.html" "$u/" || fail "GET $u/"
    grep -qi '^content-type: text/html' "$dir/h" || fail "GET $u/ is not text/html: $(cat "$dir/h")"
    cmp -s "$dir/page.html" "$here/../src/report/status_page.html" || fail "GET $u/ is not src/report/status_page.html"
done
# No URL but the SVG namespace, no stylesheet, script or image fetched from elsewhere, no
# request that changes anything.
grep -n -o -E '(https?:)?//[A-Za-z0-9.-]+' "$dir/page.html" | grep -v 'http://www.w3.org/2000/svg' |
    grep -v -E ':(//)[^/]*$' >"$dir/urls" || true
grep -n -E '<(link|img|iframe)[ >]|<script[^>]+src=|@import|url\(' "$dir/page.html" >>"$dir/urls" || true
[ -s "$dir/urls" ] && fail "the page reaches outside: $(cat "$dir/urls")"
grep -n -E "method|XMLHttpRequest|sendBeacon|WebSocket|EventSource" "$dir/page.html" >"$dir/writes" || true
[ -s "$dir/writes" ] && fail "the page may send more than GET: $(cat "$dir/writes")"
# What the API gives (job ids and node names from Slurm or an operator, error texts) is shown
# as text, never parsed as markup or code: a name with <, & or quotes stays that name.
grep -n -E 'innerHTML|outerHTML|insertAdjacentHTML|document\.write|createContextualFragment|DOMParser|eval\(|new Function|setAttribute\("on' \
    "$dir/page.html" >"$dir/markup" || true
[ -s "$dir/markup" ] && fail "the page writes API text as markup: $(cat "$dir/markup")"

chrome() { # URL, then options
    u=$1
    shift
    # Root (CI) needs --no-sandbox; a container's small /dev/shm, --disable-dev-shm-usage; host
    # names resolve to nothing, so only 127.0.0.1 answers.
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --hide-scrollbars --no-first-run --disable-extensions --host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1" \
        --virtual-time-budget=7000 "$@" "$u" 2>>"$dir/chromium.log"
}
api() { # base, directory, then names: the API's answers
    b=$1
    to=$2
    shift 2
    mkdir -p "$to"
    for n in "$@"; do
        case $n in
        grid_events) p=/v1/grid/events ;; decisions) p="/v1/decisions?limit=8" ;; *) p=/v1/$n ;;
        esac
        curl -sf "$b$p" >"$to/$n.json" || fail "GET $b$p"
    done
}
sleep 1 # a few seconds of history for the plot
rm -f "$out/status-page-node.png" "$out/status-page-site.png"
api "$N1" "$dir/n1.before" gpus jobs allocation grid_events decisions history
chrome "$N1/" --window-size=1400,1100 --screenshot="$out/status-page-node.png" --dump-dom \
    >"$dir/node.dom" || fail "chromium on the node page: $(tail -n 5 "$dir/chromium.log")"
api "$N1" "$dir/n1.after" gpus jobs allocation grid_events decisions history
python3 "$here/support/check_status_page.py" node "$dir/node.dom" "$dir/n1.before" "$dir/n1.after" ||
    fail "the node page does not match the API"
api "$CL" "$dir/cl.before" nodes jobs allocation grid_events decisions history
chrome "$CL/" --window-size=1400,900 --screenshot="$out/status-page-site.png" --dump-dom \
    >"$dir/site.dom" || fail "chromium on the site page: $(tail -n 5 "$dir/chromium.log")"
api "$CL" "$dir/cl.after" nodes jobs allocation grid_events decisions history
python3 "$here/support/check_status_page.py" site "$dir/site.dom" "$dir/cl.before" "$dir/cl.after" ||
    fail "the site page does not match the API"

# read_auth = token (a third node daemon): the page and every read need the token.
start_node n3 "" --set read_auth=token
N3=http://$(cat "$dir/n3.port")
code=$(curl -s -o "$dir/n3.body" -w '%{http_code}' "$N3/")
[ "$code" = 401 ] && grep -q "read_auth = token" "$dir/n3.body" ||
    fail "GET / of a read_auth daemon without the token: $code $(cat "$dir/n3.body")"
proxy() { # name upstream [--page-only]: a proxy that adds the token; sets P
    python3 "$here/support/auth_proxy.py" "$2" "$TOKEN" "$dir/$1.port" ${3:+"$3"} 2>"$dir/$1.log" &
    pids="$pids $!"
    wait_file "$dir/$1.port" "the token-adding proxy ($1)"
    P=http://127.0.0.1:$(cat "$dir/$1.port")
}
"$PFI_BIN" ctl --url "$N3" --token-file "$TOKEN" job add t --gpus 0-3 --pfi30 0.4 >/dev/null || fail "job t on n3"
"$PFI_BIN" ctl --url "$N3" --token-file "$TOKEN" job throughput t 5100 >/dev/null || fail "job t's rate on n3"
t_rate=$(date +%s)
"$PFI_BIN" ctl --url "$N3" --token-file "$TOKEN" budget set 80% >/dev/null || fail "budget on n3"
proxy px "$N3"
sleep 1
api "$P" "$dir/n3.before" gpus jobs allocation grid_events decisions history
chrome "$P/" --window-size=1400,1100 --dump-dom >"$dir/n3.dom" ||
    fail "chromium on the page through the proxy: $(tail -n 5 "$dir/chromium.log")"
api "$P" "$dir/n3.after" gpus jobs allocation grid_events decisions history
python3 "$here/support/check_status_page.py" node "$dir/n3.dom" "$dir/n3.before" "$dir/n3.after" ||
    fail "the page of a read_auth daemon, through a token-adding proxy, does not match the API"
proxy pxpage "$N3" --page-only
chrome "$P/" --window-size=1400,1100 --dump-dom >"$dir/n3p.dom" ||
    fail "chromium on the page, token on the page only: $(tail -n 5 "$dir/chromium.log")"
grep -q -E 'id="err">cannot read the API: /v1/[a-z_/?=0-9]+: HTTP 401 \(the daemon wants its bearer token on every read' "$dir/n3p.dom" ||
    fail "reads refused for want of the token, the page does not say so: $(grep -o 'id="err">[^<]*' "$dir/n3p.dom")"
grep -q '<body[^>]* data-stale="1"' "$dir/n3p.dom" || fail "reads refused, the page is not marked stale"
grep -q 'data-v="[0-9-]' "$dir/n3p.dom" && fail "reads refused, the page still shows figures"
grep -q 'id="title">pfi cluster serve' "$dir/n3p.dom" && fail "reads refused, the node's page calls itself the site's"

# pfi cluster serve --read-auth token over n3: the site's page and reads need the token too.
echo '{"nodes": [{"name": "n3", "gpus": 8}], "jobs": [{"id": "t", "parts": [{"node": "n3", "gpus": [0, 1, 2, 3]}]}]}' >"$dir/topo3.json"
echo "n3 $N3" >"$dir/node3.map"
"$PFI_BIN" cluster serve --listen 127.0.0.1:0 --port-file "$dir/cl3.port" --token-file "$TOKEN" \
    --read-auth token --node-map "$dir/node3.map" --node-token-file "$TOKEN" \
    --topology "$dir/topo3.json" --heartbeat 1s --db "$dir/cl3.db" --budget 4000W >"$dir/cl3.log" 2>&1 &
pids="$pids $!"
wait_file "$dir/cl3.port" "pfi cluster serve --read-auth token"
CL3=http://127.0.0.1:$(cat "$dir/cl3.port")
code=$(curl -s -o "$dir/cl3.body" -w '%{http_code}' "$CL3/")
[ "$code" = 401 ] && grep -q -- "--read-auth token" "$dir/cl3.body" ||
    fail "GET / of a --read-auth token controller without the token: $code $(cat "$dir/cl3.body")"
proxy pxs "$CL3"
sleep 1
api "$P" "$dir/cl3.before" nodes jobs allocation grid_events decisions history
chrome "$P/" --window-size=1400,900 --dump-dom >"$dir/cl3.dom" ||
    fail "chromium on the site page through the proxy: $(tail -n 5 "$dir/chromium.log")"
api "$P" "$dir/cl3.after" nodes jobs allocation grid_events decisions history
python3 "$here/support/check_status_page.py" site "$dir/cl3.dom" "$dir/cl3.before" "$dir/cl3.after" ||
    fail "the page of a --read-auth token controller, through a token-adding proxy, does not match the API"
proxy pxspage "$CL3" --page-only
chrome "$P/" --window-size=1400,900 --dump-dom >"$dir/cl3p.dom" ||
    fail "chromium on the site page, token on the page only: $(tail -n 5 "$dir/chromium.log")"
grep -q -E 'id="err">cannot read the API: /v1/[a-z_/?=0-9]+: HTTP 401 \(the daemon wants its bearer token on every read, read_auth = token or --read-auth token' "$dir/cl3p.dom" ||
    fail "site reads refused for want of the token, the page does not say so: $(grep -o 'id="err">[^<]*' "$dir/cl3p.dom")"
grep -q '<body[^>]* data-stale="1"' "$dir/cl3p.dom" || fail "site reads refused, the page is not marked stale"
grep -q 'data-v="[0-9-]' "$dir/cl3p.dom" && fail "site reads refused, the page still shows figures"

# A node gone silent: the site page marks it stale, its caps the last acknowledged, no draw.
kill -9 "$N2_PID"
i=0
until curl -sf "$CL/v1/nodes" | jq -e '.nodes[] | select(.name == "n2") | .up == false' >/dev/null; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "n2 killed, the controller never said it silent"
    sleep 0.1
done
api "$CL" "$dir/cs.before" nodes jobs allocation grid_events decisions history
chrome "$CL/" --window-size=1400,900 --dump-dom >"$dir/silent.dom" ||
    fail "chromium on the site page, n2 silent: $(tail -n 5 "$dir/chromium.log")"
api "$CL" "$dir/cs.after" nodes jobs allocation grid_events decisions history
python3 "$here/support/check_status_page.py" site "$dir/silent.dom" "$dir/cs.before" "$dir/cs.after" ||
    fail "the site page with n2 silent does not match the API"

# Every browser asks /favicon.ico: no icon, and no 404 in the page's console.
for u in "$N1" "$CL"; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$u/favicon.ico")
    [ "$code" = 204 ] || fail "GET $u/favicon.ico: $code, not 204"
done

# A daemon that hangs (stopped, deadlocked) never refuses: a read not answered within 10 s
# marks the page stale and says so; the last figures stayed up as current.
python3 "$here/support/hung_api.py" "$dir/page.html" "$dir/hung.port" &
HUNG_PID=$!
pids="${pids:-} $HUNG_PID"
i=0
until [ -s "$dir/hung.port" ]; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "the hung stand-in did not start"
    sleep 0.1
done
HUNG=http://127.0.0.1:$(cat "$dir/hung.port")
"$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --disable-extensions --dump-dom "$HUNG/" >"$dir/hung.dom" 2>>"$dir/chromium.log" ||
    fail "chromium on a hung daemon's page: $(tail -n 5 "$dir/chromium.log")"
kill "$HUNG_PID" 2>/dev/null
grep -q -E 'id="err">cannot read the API: /v1/[a-z_/?=0-9]+: no answer within 10 s' "$dir/hung.dom" ||
    fail "a hung daemon's page does not say so: $(grep -o 'id="err">[^<]*' "$dir/hung.dom")"
grep -q '<body[^>]* data-stale="1"' "$dir/hung.dom" || fail "a hung daemon's page is not marked stale"

# A job whose rate stopped coming (hung, or its log no longer read): the page shows its last
# rate with its age, not as current (job t's, posted once above; the check wants " ago)" past
# 30 s).
while [ $(($(date +%s) - t_rate)) -le 32 ]; do sleep 1; done
proxy px2 "$N3"
api "$P" "$dir/n3o.before" gpus jobs allocation grid_events decisions history
chrome "$P/" --window-size=1400,1100 --dump-dom >"$dir/n3o.dom" ||
    fail "chromium on n3's page, job t's rate old: $(tail -n 5 "$dir/chromium.log")"
api "$P" "$dir/n3o.after" gpus jobs allocation grid_events decisions history
jq -e '.jobs[] | select(.id == "t") | .observed_age_s > 30' "$dir/n3o.before/jobs.json" >/dev/null ||
    fail "job t's rate is not old: $(jq -c '.jobs[] | {id, observed_age_s}' "$dir/n3o.before/jobs.json")"
python3 "$here/support/check_status_page.py" node "$dir/n3o.dom" "$dir/n3o.before" "$dir/n3o.after" ||
    fail "n3's page with job t's rate old does not match the API"
grep -q 'tok/s ([0-9]* s ago)' "$dir/n3o.dom" || fail "job t's old rate is shown without its age"

[ -s "$out/status-page-node.png" ] && [ -s "$out/status-page-site.png" ] || fail "no screenshot"
note "screenshots: $out/status-page-node.png $out/status-page-site.png"
exit 0
