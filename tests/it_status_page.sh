#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The status page (GET /) of `pfi serve` and `pfi cluster serve`, in headless Chromium: one
# self-contained HTML document (no external asset: Chromium resolves no host name, and the
# HTML names no URL of its own but the API's paths), read-only (no request but GET), showing
# the API's strings as text only (no markup built from them), served
# without a token like the other GETs; every figure it shows (budget, sum of limits, draw, each
# GPU's or node's caps, each job's cap, throughput, PFI30 and SLA headroom, the active and next
# grid events, the last decisions) matches the API (tests/support/check_status_page.py), and it
# refreshes itself.  Screenshots are kept next to the pfi binary: status-page-node.png and
# status-page-site.png (build/ for the normal build).
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
api "$N1" "$dir/n1.before" gpus jobs allocation grid_events decisions
chrome "$N1/" --window-size=1400,1100 --screenshot="$out/status-page-node.png" --dump-dom \
    >"$dir/node.dom" || fail "chromium on the node page: $(tail -n 5 "$dir/chromium.log")"
api "$N1" "$dir/n1.after" gpus jobs allocation grid_events decisions
python3 "$here/support/check_status_page.py" node "$dir/node.dom" "$dir/n1.before" "$dir/n1.after" ||
    fail "the node page does not match the API"
api "$CL" "$dir/cl.before" nodes jobs allocation grid_events decisions
chrome "$CL/" --window-size=1400,900 --screenshot="$out/status-page-site.png" --dump-dom \
    >"$dir/site.dom" || fail "chromium on the site page: $(tail -n 5 "$dir/chromium.log")"
api "$CL" "$dir/cl.after" nodes jobs allocation grid_events decisions
python3 "$here/support/check_status_page.py" site "$dir/site.dom" "$dir/cl.before" "$dir/cl.after" ||
    fail "the site page does not match the API"

[ -s "$out/status-page-node.png" ] && [ -s "$out/status-page-site.png" ] || fail "no screenshot"
note "screenshots: $out/status-page-node.png $out/status-page-site.png"
exit 0
