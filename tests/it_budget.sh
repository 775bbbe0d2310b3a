#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# it_budget.sh: one budget grammar everywhere (pfi help budget).  The same text gives the same
# watts in pfi serve (its API and pfi ctl), pfi cluster (one shot over that node) and pfi
# allocate, each against its reference, and the same cut in pfi evaluate --cuts (study and
# bench pergpu read that list too); every command refuses the same bad text with the same
# message and exit status 2, and changes nothing.
set -u
name=it_budget
. "$(dirname "$0")/support/node_env.sh"
command -v curl >/dev/null || fail "curl is needed (scripts/install-deps.sh)"

# ---- allocate: one jobs file, every spelling of the same budget ----
cat >"$T/jobs.json" <<'EOF'
{"jobs": [{"id": "a", "gpus": 4, "predicted_curve": {"cap_w": [200, 450, 700],
                                           "tput": [50000, 90000, 100000]}},
          {"id": "b", "gpus": 4, "predicted_curve": {"cap_w": [200, 450, 700],
                                           "tput": [80000, 95000, 100000]}}]}
EOF
alloc_w() { "$PFI" allocate --jobs "$T/jobs.json" --budget "$1" --json | jq -r .budget_w; }
w70=$(alloc_w 70%) || fail "allocate 70%"
for b in cut=30% -30% CUT=30%; do
  [ "$(alloc_w "$b")" = "$w70" ] || fail "allocate --budget $b: $(alloc_w "$b") W, 70% is $w70 W"
done
for b in 3000W 3kW 3000 0.003MW; do
  [ "$(alloc_w "$b")" = 3000 ] || fail "allocate --budget $b: $(alloc_w "$b") W"
done
# It says what the share was of.
"$PFI" allocate --jobs "$T/jobs.json" --budget cut=30% >"$T/out" || fail "allocate table"
ref=$("$PFI" allocate --jobs "$T/jobs.json" --budget 70% --json | jq -r .budget_reference.watts)
grep -qx "budget 70% of $(printf '%.0f' "$ref") W (the jobs' baseline draw, GPUs x baseline power)" "$T/out" ||
  fail "allocate does not name its reference: $(tail -2 "$T/out")"
"$PFI" allocate --jobs "$T/jobs.json" --budget 3kW >"$T/out" || fail "allocate 3kW"
if grep -q '^budget ' "$T/out"; then fail "allocate names a reference for watts"; fi

# ---- evaluate, study and bench pergpu --cuts: a list of budgets of the jobs' baseline draw ----
# cut=30% and -30% are the bare 0.3; a bare share (30%: a cut of 30%, or a budget of 30%?) and
# watts are refused by every command that reads the list, which then writes nothing.
ev_cut() { "$PFI" evaluate --fleet small --policies equal --cuts "$1" --json | jq -c '[.cuts[] | .cut, .budget_w]'; }
e03=$(ev_cut 0.3) || fail "evaluate --cuts 0.3"
for b in cut=30% -30%; do
  [ "$(ev_cut "$b")" = "$e03" ] || fail "evaluate --cuts $b: $(ev_cut "$b"), --cuts 0.3 is $e03"
done
[ "$(ev_cut cut=20%,-40%)" = "$(ev_cut 0.2,0.4)" ] || fail "evaluate --cuts cut=20%,-40%: $(ev_cut cut=20%,-40%)"
for c in "evaluate --fleet small --cuts" "study --fleet small --out $T/study --cuts" "bench pergpu --sim h200x8-mixed --cuts"; do
  # shellcheck disable=SC2086
  "$PFI" $c 4kW >/dev/null 2>"$T/err" && fail "$c 4kW taken"
  grep -qF "budget '4kW': a cut here is a share of the jobs' baseline draw" "$T/err" || fail "$c 4kW: $(cat "$T/err")"
  # shellcheck disable=SC2086
  "$PFI" $c 0.1,30% >/dev/null 2>"$T/err"; st=$?
  [ "$st" = 2 ] || fail "$c 0.1,30%: exit $st"
  grep -qF "budget '30%': in a list of cuts a bare share is ambiguous" "$T/err" || fail "$c 30%: $(cat "$T/err")"
done
[ ! -e "$T/study" ] || fail "study --cuts 4kW or 30% wrote its folder"

# ---- a node daemon on simulated GPUs ----
start_node n1
ctl() { "$PFI" ctl --socket "$T/n1.sock" --token-file "$T/token" "$@"; }
node_w() { ctl budget set "$1" >"$T/set.json" && ctl allocation | jq -r .budget_w; }
nominal=$(ctl allocation | jq -r .nominal_w)
[ "$nominal" = 5600 ] || fail "nominal_w $nominal, expected 8 x 700 W"
n70=$(node_w 70%) || fail "ctl budget set 70%: $(cat "$T/set.json")"
jq -e '.budget_reference.of == "the sum of the GPUs'"'"' default limits" and .budget_reference.watts == 5600' \
  "$T/set.json" >/dev/null || fail "serve does not name its reference: $(cat "$T/set.json")"
for b in cut=30% -30%; do
  [ "$(node_w "$b")" = "$n70" ] || fail "ctl budget set $b: $(cat "$T/set.json")"
done
[ "$(node_w 4kW)" = 4000 ] || fail "ctl budget set 4kW"
# The API's budget string reads the same grammar.
api() { curl -s --max-time 10 --unix-socket "$T/n1.sock" -H "Authorization: Bearer $(cat "$T/token")" \
  -X PUT -d "$1" -o "$T/api.json" -w '%{http_code}' http://localhost/v1/budget; }
[ "$(api '{"budget": "-30%"}')" = 200 ] || fail "PUT budget -30%: $(cat "$T/api.json")"
[ "$(ctl allocation | jq -r .budget_w)" = "$n70" ] || fail "PUT -30% is not 70%"

# pfi serve --budget with a share says what it was of when it starts.
# Its own simulated node: two daemons on one node's GPUs are refused (each GPU has one writer).
PFI_SIM_STATE="$T/n2.sim" "$PFI" serve --backend sim --sim h200x8-idle --budget cut=30% --listen "unix:$T/n2.sock" \
  --port-file "$T/n2.port" --db "$T/n2.db" --journal "$T/n2.journal" >"$T/serve2.log" 2>&1 &
S2=$!
i=0
until grep -q 'initial budget' "$T/serve2.log" || [ $i -gt 300 ]; do i=$((i + 1)); sleep 0.05; done
kill $S2; wait $S2
grep -qF "initial budget cut=30%: $n70 W, 70% of 5600 W (the sum of the GPUs' default limits)" \
  "$T/serve2.log" || fail "serve --budget cut=30% does not name its reference: $(cat "$T/serve2.log")"

# ---- the cluster, one shot over that node: same text, same reference, same watts ----
cat >"$T/topo.json" <<'EOF'
{"nodes": [{"name": "n1", "gpus": 8}], "jobs": []}
EOF
cl() { cb=$1; shift; "$PFI" cluster budget "$cb" --topology "$T/topo.json" --node-url "unix:$T/%n.sock" \
  --node-token-file "$T/token" "$@"; }
for b in 70% cut=30% -30%; do
  w=$(cl "$b" --json | jq -r .budget_w) || fail "cluster budget $b"
  [ "$w" = "$n70" ] || fail "cluster budget $b: $w W, the node's 70% is $n70 W"
done
cl cut=30% >"$T/out" || fail "cluster budget table"
grep -qx "budget 70% of 5600 W (the sum of the site's GPUs' default limits)" "$T/out" ||
  fail "cluster does not name its reference: $(cat "$T/out")"
[ "$(cl 4kW --json | jq -r .budget_w)" = 4000 ] || fail "cluster budget 4kW"

# ---- bad text: the same message from every command, exit 2, nothing changed ----
ctl budget set 4kW >/dev/null || fail "ctl budget set 4kW"
for b in nan NaN% inf 0% 0W -5 150% cut=100% cut=30W 70%x "70% " 1e308 1e999 "70 %" -5kW 1e400 70%% ""; do
  want="pfi CMD: budget '$b': "
  check() { # CMD STATUS [OPTION]: an empty option value is the option parser's to refuse
    [ "$2" = 2 ] || fail "$1 with budget '$b': exit $2 ($(cat "$T/err"))"
    if [ -z "$b" ] && [ -n "${3:-}" ]; then
      grep -qxF "pfi $1: --$3 is empty" "$T/err" || fail "$1 with --$3 '': $(cat "$T/err")"
    else
      grep -qF "$(echo "$want" | sed "s/CMD/$1/")" "$T/err" || fail "$1 with budget '$b': $(cat "$T/err")"
    fi
  }
  "$PFI" allocate --jobs "$T/jobs.json" --budget "$b" >/dev/null 2>"$T/err"; check allocate $? budget
  "$PFI" evaluate --fleet small --cuts "0.2,$b" >/dev/null 2>"$T/err"; check evaluate $?
  ctl budget set "$b" >/dev/null 2>"$T/err"; check ctl $?
  cl "$b" >/dev/null 2>"$T/err"; check cluster $?
  "$PFI" event --socket "$T/n1.sock" --token-file "$T/token" add --start now+1h --duration 1h \
    --limit "$b" >/dev/null 2>"$T/err"; check event $? limit
  timeout 30 "$PFI" serve --backend sim --budget "$b" --listen "unix:$T/bad.sock" --db "$T/bad.db" \
    --journal "$T/bad.journal" >/dev/null 2>"$T/err"; st=$?
  [ "$st" = 2 ] && grep -qF -- "$([ -n "$b" ] && echo "budget '$b': " || echo "--budget is empty")" "$T/err" ||
    fail "serve --budget '$b': exit $st $(cat "$T/err")"
  [ "$(api "{\"budget\": \"$b\"}")" = 400 ] && grep -qF "budget '$b': " "$T/api.json" ||
    fail "PUT budget '$b': $(cat "$T/api.json")"
done
[ "$(ctl allocation | jq -r .budget_w)" = 4000 ] || fail "a refused budget changed the node's"
echo "it_budget: ok (70% = cut=30% = -30%: allocate $w70 W of the jobs' draw, serve and cluster $n70 W of 5600 W)"
