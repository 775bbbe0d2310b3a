#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# it_ctl.sh: what `pfi ctl` sends is what was typed, or nothing.  A job id goes into the path
# percent-encoded: libcurl resolves dot segments, so `pfi ctl job rm ../budget` went out as
# DELETE /v1/budget and removed the node's budget (every GPU back to its original limit).  Caps
# are GPU=WATTS pairs of digits, and --epoch an integer >= 1 as large as a controller's.  The
# token of --token-file goes with every request, reads included, so a daemon with read_auth =
# token is read with it, and without it a read fails saying to pass --token-file; a daemon
# whose reads are open reads the same with the right token, a wrong one or none.
# Needs $PFI_BIN (tests/run.sh sets it), jq.
set -u
name=it_ctl
. "$(dirname "$0")/support/node_env.sh"
start_node n
ctl() { "$PFI" ctl --socket "$T/n.sock" --token-file "$T/token" "$@"; }
budget() { ctl allocation | jq -r .budget_w; }

ctl budget set 4kW >/dev/null || fail "budget set 4kW"
# The unix:PATH form every other part takes (serve.conf's listen, the Slurm side's url) is
# --socket PATH, in --url and in PFI_SERVE_URL ("Unsupported protocol" before).
[ "$("$PFI" ctl --url "unix:$T/n.sock" allocation | jq -r .budget_w)" = 4000 ] ||
  fail "ctl --url unix:PATH: $("$PFI" ctl --url "unix:$T/n.sock" allocation 2>&1 | head -c 200)"
[ "$(PFI_SERVE_URL="unix:$T/n.sock" "$PFI" ctl allocation | jq -r .budget_w)" = 4000 ] ||
  fail "PFI_SERVE_URL=unix:PATH: $(PFI_SERVE_URL="unix:$T/n.sock" "$PFI" ctl allocation 2>&1 | head -c 200)"
"$PFI" ctl --url "unix:$T/none.sock" health >"$T/out" 2>&1 && fail "ctl --url unix: of no daemon answered"
grep -q "GET /healthz at unix:$T/none.sock: " "$T/out" || fail "ctl does not name the socket: $(cat "$T/out")"
ctl job add j1 --gpus 0-1 >/dev/null || fail "job add j1"

# ---- a job id is a job id, never another path ----
for id in ../budget ../../v1/budget ./../budget; do
  ctl job rm "$id" >"$T/out" 2>&1 && fail "job rm $id: exit 0: $(cat "$T/out")"
  [ "$(budget)" = 4000 ] || fail "job rm $id changed the budget to $(budget)"
done
ctl job throughput ../budget 5 >"$T/out" 2>&1 && fail "job throughput ../budget: exit 0"
ctl jobs ../allocation >"$T/out" 2>&1 && fail "jobs ../allocation answered: $(head -c 200 "$T/out")"
ctl jobs 'j1?x' >"$T/out" 2>&1 && fail "jobs 'j1?x' answered job j1's"
[ "$(ctl jobs | jq -r '.jobs | length')" = 1 ] || fail "the refused removals removed a job"
# Ids made of dots are ids the daemon takes: they are reached as such.
ctl job add .. --gpus 2 >/dev/null || fail "job add .."
ctl job add . --gpus 3 >/dev/null || fail "job add ."
[ "$(ctl jobs .. | jq -r .id)" = .. ] || fail "jobs .. did not answer job '..'"
ctl job throughput . 1000 >/dev/null || fail "job throughput . 1000"
ctl job rm .. >/dev/null || fail "job rm .."
ctl job rm . >/dev/null || fail "job rm ."
[ "$(ctl jobs | jq -r '[.jobs[].id] | join(",")')" = j1 ] || fail "jobs after removing . and ..: $(ctl jobs)"
[ "$(budget)" = 4000 ] || fail "the budget moved: $(budget)"

# A number option that is not a finite number is refused: "--weight nan" was taken for "not
# given" (the job registered with weight 1), "--pfi30 inf" dropped (JSON has no infinity).
for opt in "--weight nan" "--pfi30 inf" "--tokens-per-s -inf"; do
  # shellcheck disable=SC2086
  ctl job add q --gpus 4 $opt >"$T/out" 2>&1
  [ $? -eq 2 ] || fail "job add $opt: not refused: $(head -c 200 "$T/out")"
  [ "$(ctl jobs | jq -r '.jobs | length')" = 1 ] || fail "job add $opt registered a job"
done

# An option the command does not take is refused, naming it, and nothing changes: `budget set
# 5000W --gpus 0-3` set a node-wide budget (GPUs 4-7 to 550 W) and exited 0.
for args in "budget set 5000W --gpus 0-3" "decisions --since 3" "job rm j1 --weight 2" \
            "events --ttl 5s" "heartbeat extra" "caps 0=500 --ramp 5s"; do
  # shellcheck disable=SC2086
  ctl $args >"$T/out" 2>&1
  [ $? -eq 2 ] || fail "ctl $args: not refused: $(head -c 200 "$T/out")"
  w=$(echo "$args" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^--/) print $i }')
  [ -z "$w" ] || grep -q -- "$w is not an option" "$T/out" || fail "ctl $args: $(cat "$T/out")"
done
[ "$(budget)" = 4000 ] || fail "a refused option moved the budget: $(budget)"
for u in foo:bar http://127.0.0.1:99999 http://127.0.0.1:0 http://127.0.0.1:x unix:; do
  "$PFI_BIN" ctl --url "$u" health >"$T/out" 2>&1
  [ $? -eq 2 ] && grep -q -- "--url expects" "$T/out" || fail "a malformed --url $u: $(cat "$T/out")"
done
[ "$(ctl jobs | jq -r '[.jobs[].id] | join(",")')" = j1 ] || fail "a refused option changed the jobs: $(ctl jobs)"

# "job throughput" takes a finite decimal number: "1e400" and "nan" went out as an empty body
# ("this request needs a JSON body"), "0x10" as 16, "1e-400" (out of range) as 0.
for v in 1e400 nan inf 0x10 1e-400 "" 5x; do
  ctl job throughput j1 "$v" >"$T/out" 2>&1
  [ $? -eq 2 ] && grep -q "TOKENS_PER_S" "$T/out" || fail "job throughput j1 $v: $(head -c 200 "$T/out")"
done
ctl job throughput j1 1.5e3 >/dev/null || fail "job throughput j1 1.5e3"
[ "$(ctl jobs j1 | jq .observed_tokens_per_s)" = 1500 ] || fail "throughput 1.5e3 not 1500"

# ---- caps: GPU=WATTS with digits on both sides, and the epoch as given ----
# Before: "=500" went out as GPU 0 (strtol of ""), 4294967296 as GPU 0 (cast to int), and
# --epoch -3 was dropped, so the caps were applied without the epoch check.
mode() { ctl allocation | jq -r .mode; }
for arg in =500 4294967296=300 0=nan 0=inf 0=W 0=500x; do
  ctl caps "$arg" >"$T/out" 2>&1 && fail "caps $arg: exit 0: $(head -c 200 "$T/out")"
  [ "$(mode)" = local ] && [ "$(budget)" = 4000 ] || fail "caps $arg changed the node: $(mode) $(budget)"
done
for ep in -3 0 1.5 x; do
  ctl caps 0=300 --epoch "$ep" >"$T/out" 2>&1
  [ $? -eq 2 ] || fail "caps --epoch $ep: not refused: $(head -c 200 "$T/out")"
  [ "$(mode)" = local ] || fail "caps --epoch $ep was applied"
done
# An epoch as a controller numbers them (its clock in ms) is sent, and then holds.
ep=$(($(date +%s) * 1000))
ctl caps 0=300 --epoch "$ep" >"$T/out" || fail "caps --epoch $ep: $(cat "$T/out")"
[ "$(ctl allocation | jq -r .caps_epoch)" = "$ep" ] || fail "caps_epoch is not $ep"
ctl caps 0=400 --epoch 5 >"$T/out" 2>&1 && fail "a stale epoch 5 was taken after $ep"

# ---- --limit is sent as given: "decisions --limit 0" (or -5) was sent as 20 without a word ----
for l in 0 -5; do
  for c in decisions events; do
    ctl $c --limit $l >"$T/out" 2>&1
    [ $? -eq 2 ] || fail "$c --limit $l: not refused: $(head -c 200 "$T/out")"
  done
done
[ "$(ctl decisions --limit 2 | jq '.decisions | length')" = 2 ] || fail "decisions --limit 2"

# ---- the token goes with every request, reads included ----
# Before: --token-file was sent on changes only, so against a daemon with read_auth = token
# every read (pfi ctl gpus, allocation, jobs...) got a bare "HTTP 401".  A daemon whose reads
# are open ignores the Authorization header of a read: the right token, a wrong one or none
# read the same, and a token file this user cannot read costs a read nothing but a warning.
head -c 24 /dev/urandom | base64 >"$T/wrong"; chmod 600 "$T/wrong"
for tf in "$T/token" "$T/wrong" "$T/missing"; do
  "$PFI" ctl --socket "$T/n.sock" --token-file "$tf" gpus >"$T/out" 2>"$T/err" ||
    fail "an open daemon, gpus with --token-file $tf: $(cat "$T/err")"
  jq -e '.gpus | length == 8' "$T/out" >/dev/null || fail "gpus with --token-file $tf: $(head -c 200 "$T/out")"
done
grep -q "warning: .*missing.*reading without the token" "$T/err" ||
  fail "an unreadable token file, the read did not say so: $(cat "$T/err")"
"$PFI" ctl --socket "$T/n.sock" gpus >"$T/out" 2>"$T/err" || fail "an open daemon, gpus without a token"
"$PFI" ctl --socket "$T/n.sock" --token-file "$T/missing" budget clear >"$T/out" 2>&1 &&
  fail "a change with an unreadable token file went out"
stop_serve TERM; rc=$?
[ $rc -eq 0 ] || fail "pfi serve exited $rc at SIGTERM"

# read_auth = token (the same simulated node and journal): reads need the token; without it,
# or with a wrong one, they fail saying what to do, not with a bare 401; /healthz stays open.
start_serve "unix:$T/r.sock" --journal "$T/n.journal" --sample-interval 100ms --set read_auth=token
rctl() { "$PFI" ctl --socket "$T/r.sock" "$@"; }
for c in gpus allocation jobs events decisions metrics; do
  rctl --token-file "$T/token" $c >"$T/out" 2>"$T/err" ||
    fail "read_auth = token: $c with the token: $(cat "$T/err")"
  rctl $c >"$T/out" 2>"$T/err"
  rc=$?
  [ $rc = 1 ] && grep -q "HTTP 401" "$T/err" &&
    grep -q "requires its bearer token for reads.*pass --token-file FILE" "$T/err" ||
    fail "read_auth = token: $c without a token: exit $rc: $(cat "$T/err")"
  rctl --token-file "$T/wrong" $c >"$T/out" 2>"$T/err"
  rc=$?
  [ $rc = 1 ] && grep -q "refused the token in $T/wrong" "$T/err" ||
    fail "read_auth = token: $c with a wrong token: exit $rc: $(cat "$T/err")"
done
rctl --token-file "$T/token" gpus | jq -e '.gpus | length == 8' >/dev/null ||
  fail "read_auth = token: gpus with the token is not the GPUs"
PFI_SERVE_TOKEN_FILE="$T/token" rctl allocation >/dev/null 2>"$T/err" ||
  fail "read_auth = token: the token of \$PFI_SERVE_TOKEN_FILE: $(cat "$T/err")"
rctl health >/dev/null || fail "read_auth = token: health without a token"
rctl --token-file "$T/token" budget set 4kW >/dev/null || fail "read_auth = token: budget set"
[ "$(rctl --token-file "$T/token" allocation | jq -r .budget_w)" = 4000 ] ||
  fail "read_auth = token: the budget set is not read back"
rctl budget clear >"$T/out" 2>&1 && fail "read_auth = token: a change without the token went out"
grep -q "changes need the daemon's bearer token: pass --token-file" "$T/out" ||
  fail "a change without the token: $(cat "$T/out")"
# The cluster controller reads such a node with its --node-token-file (reads carry it as
# changes do); without it the node is down for want of the token, and says so.
echo '{"nodes": [{"name": "r", "gpus": 8}], "jobs": []}' >"$T/topo.json"
cst() { "$PFI" cluster status --topology "$T/topo.json" --node-url "unix:$T/%n.sock" --json "$@"; }
cst --node-token-file "$T/token" >"$T/out" 2>"$T/err" || fail "cluster status: $(cat "$T/err")"
jq -e '.nodes.nodes[0] | .up == true and .cap_sum_w > 3990 and .cap_sum_w < 4010' "$T/out" >/dev/null ||
  fail "the controller, with --node-token-file, cannot read the node: $(jq -c '.nodes.nodes[0] | del(.gpus)' "$T/out")"
cst >"$T/out" 2>"$T/err"
jq -e '.nodes.nodes[0] | .up == false and (.why | test("401: the node wants its bearer token on reads .*: pass --node-token-file"))' "$T/out" >/dev/null ||
  fail "the controller without --node-token-file: $(jq -c '.nodes.nodes[0] | del(.gpus)' "$T/out")"
echo wrong >"$T/wrong"
cst --node-token-file "$T/wrong" >"$T/out" 2>"$T/err"
jq -e '.nodes.nodes[0] | .up == false and (.why | test("401: the node refused the token of --node-token-file"))' "$T/out" >/dev/null ||
  fail "the controller with a wrong --node-token-file: $(jq -c '.nodes.nodes[0] | del(.gpus)' "$T/out")"

stop_serve TERM; rc=$?
[ $rc -eq 0 ] || fail "pfi serve exited $rc at SIGTERM"
echo "it_ctl: ok"
