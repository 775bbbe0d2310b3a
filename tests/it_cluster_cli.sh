#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# it_cluster_cli.sh: `pfi cluster` one-shot subcommands as an operator runs them, without Slurm
# (PATH holds no sinfo here, so anything that asks Slurm fails): `topology --topology FILE`
# shows that file's nodes and jobs, as text and as JSON, the same the controller works from; a
# stray argument or a --budget where it means nothing is refused (exit 2, nothing done) rather
# than ignored.  `serve --read-auth token` wants the bearer token on every read but /healthz
# (401 without it or with a wrong one, as a node daemon's read_auth = token); without the option
# reads stay open (a token sent with one, right or wrong, is ignored); the option without
# --token-file, or with a value other than none or token, is refused at start (exit 2).
# `pfi event --url` sends its --token-file on every request, so it reads such a controller;
# without the token its reads fail saying to pass --token-file.
# Needs $PFI_BIN.
set -u
PFI=${PFI_BIN:?PFI_BIN not set}
T=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_cluster_cli.XXXXXX")
trap 'rm -rf "$T"' EXIT
trap 'exit 1' INT TERM
fail() { echo "it_cluster_cli: FAIL: $*"; exit 1; }
command -v jq >/dev/null || fail "jq is needed (scripts/install-deps.sh)"
command -v curl >/dev/null || fail "curl is needed (scripts/install-deps.sh test)"
# A PATH where sinfo and squeue fail, as on a machine without Slurm.
mkdir "$T/bin"
for c in sinfo squeue; do printf '#!/bin/sh\nexit 1\n' >"$T/bin/$c"; chmod +x "$T/bin/$c"; done
export PATH="$T/bin:$PATH"

cat >"$T/topo.json" <<'TOPO'
{"nodes": [{"name": "n1", "gpus": 8}, {"name": "n2", "gpus": 4}],
 "jobs": [{"id": "j1", "parts": [{"node": "n1", "gpus": [0,1,2]}, {"node": "n2", "gpus": [0,1]}]}]}
TOPO
"$PFI" cluster topology --topology "$T/topo.json" >"$T/out" 2>"$T/err" ||
  fail "cluster topology --topology: exit $? ($(cat "$T/err"))"
grep -q '^node n1 *8 GPUs' "$T/out" && grep -q '^node n2 *4 GPUs' "$T/out" &&
  grep -q '^job  j1 *n1:3 n2:2$' "$T/out" || fail "cluster topology --topology: $(cat "$T/out")"
"$PFI" cluster topology --topology "$T/topo.json" --json >"$T/out.json" 2>"$T/err" ||
  fail "cluster topology --topology --json: exit $? ($(cat "$T/err"))"
jq -e '[.nodes[].name] == ["n1","n2"] and .jobs[0].id == "j1" and
       .jobs[0].parts[1].gpus == [0,1]' "$T/out.json" >/dev/null ||
  fail "cluster topology --json: $(cat "$T/out.json")"
"$PFI" cluster topology --topology "$T/none.json" >/dev/null 2>"$T/err"
rc=$?
[ $rc = 1 ] && grep -q "cannot open topology $T/none.json" "$T/err" ||
  fail "cluster topology of a missing file: exit $rc ($(cat "$T/err"))"
# Refused before anything is asked of Slurm or a node: exit 2 and the word named.
refused() { # WHAT-TO-FIND ARGS...
  want=$1; shift
  timeout 20 "$PFI" cluster "$@" --topology "$T/topo.json" --node-url "unix:$T/%n.sock" \
    >"$T/out" 2>"$T/err"
  rc=$?
  [ $rc = 2 ] && grep -qF -- "$want" "$T/err" && [ ! -s "$T/out" ] ||
    fail "cluster $*: exit $rc, out '$(cat "$T/out")', err '$(cat "$T/err")'"
}
refused "unexpected argument '70%'" status 70%
refused "unexpected argument 'extra'" topology extra
refused "unexpected argument 'extra'" serve extra --heartbeat 0 --listen 127.0.0.1:0
refused "--budget is the initial budget of serve" budget 9000W --budget 8000W
refused "--budget is the initial budget of serve" status --budget 8000W
refused "give one budget" budget 9000W 8000W
# watchdogs a node refuses (over a day) or that trip between two heartbeats
refused "--node-ttl: at most 86400 s" serve --node-ttl 25h --listen 127.0.0.1:0
refused "--heartbeat 5 s must be shorter than --node-ttl 2 s" serve --heartbeat 5s --node-ttl 2s --listen 127.0.0.1:0
refused "--heartbeat 30 s must be shorter than --node-ttl 30 s" serve --heartbeat 30s --listen 127.0.0.1:0
head -c 24 /dev/urandom | base64 >"$T/token"
chmod 600 "$T/token"
# Refused before the controller opens its database (or asks a node).
refused "--read-auth token needs --token-file" serve --read-auth token --listen 127.0.0.1:0 \
  --db "$T/refused.db"
refused "--read-auth: expected none or token, got 'yes'" serve --read-auth yes \
  --token-file "$T/token" --listen 127.0.0.1:0 --db "$T/refused.db"
refused "--read-auth: expected none or token, got 'Token'" serve --read-auth Token \
  --token-file "$T/token" --listen 127.0.0.1:0 --db "$T/refused.db"
[ -e "$T/refused.db" ] && fail "--read-auth refused, the controller still opened its database"

# The controller's reads, with and without --read-auth token (its node answers nothing here:
# what matters is who may read what the controller says of it).
serve_pid=
stop_serve() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid"
  serve_pid=
}
trap 'stop_serve; rm -rf "$T"' EXIT
serve() { # ARGS...: starts pfi cluster serve; sets CL
  rm -f "$T/port"
  "$PFI" cluster serve --topology "$T/topo.json" --node-url "unix:$T/%n.sock" --heartbeat 1s \
    --listen 127.0.0.1:0 --port-file "$T/port" --token-file "$T/token" --db "$T/cl.db" "$@" \
    >"$T/serve.out" 2>"$T/serve.err" &
  serve_pid=$!
  i=0
  until [ -s "$T/port" ]; do
    i=$((i + 1))
    [ $i -gt 200 ] && fail "cluster serve $* did not start: $(cat "$T/serve.err")"
    kill -0 "$serve_pid" 2>/dev/null || fail "cluster serve $* exited: $(cat "$T/serve.err")"
    sleep 0.05
  done
  CL=http://127.0.0.1:$(cat "$T/port")
}
body() { head -c 300 "$T/body"; }
code() { # PATH [TOKEN]: the status of a GET, its body in $T/body
  if [ $# -gt 1 ]; then
    curl -s -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer $2" "$CL$1"
  else
    curl -s -o "$T/body" -w '%{http_code}' "$CL$1"
  fi
}
reads="/ /v1/nodes /v1/jobs /v1/allocation /v1/history /v1/decisions /v1/grid/events /metrics"
head -c 24 /dev/urandom | base64 >"$T/wrong"
chmod 600 "$T/wrong"
# pfi event (a client of the controller) sends its token on every request, reads included;
# a controller whose reads are open ignores the token of a read: the right one, a wrong one or
# none read the same.
event() { "$PFI" event --url "$CL" "$@" >"$T/out" 2>"$T/err"; }
serve --read-auth none
for p in $reads /healthz; do
  c=$(code "$p")
  [ "$c" = 200 ] || fail "--read-auth none: GET $p without a token: $c $(body)"
  c=$(code "$p" "$(cat "$T/token")")
  [ "$c" = 200 ] || fail "--read-auth none: GET $p with the token: $c $(body)"
  c=$(code "$p" not-the-token)
  [ "$c" = 200 ] || fail "--read-auth none: GET $p with a wrong token: $c $(body)"
done
for tf in "" "$T/token" "$T/wrong"; do
  event ${tf:+--token-file "$tf"} list || fail "--read-auth none: event list, token '$tf': $(cat "$T/err")"
  jq -e '.events | length == 0' "$T/out" >/dev/null || fail "--read-auth none: event list: $(cat "$T/out")"
done
stop_serve
serve --read-auth token
for p in $reads; do
  c=$(code "$p")
  [ "$c" = 401 ] && jq -e '.error | test("missing or wrong bearer token")' "$T/body" >/dev/null ||
    fail "--read-auth token: GET $p without a token: $c $(body)"
  c=$(code "$p" not-the-token)
  [ "$c" = 401 ] || fail "--read-auth token: GET $p with a wrong token: $c $(body)"
  c=$(curl -s -o /dev/null -w '%{http_code}' -I "$CL$p")
  [ "$c" = 401 ] || fail "--read-auth token: HEAD $p without a token: $c"
  c=$(code "$p" "$(cat "$T/token")")
  [ "$c" = 200 ] || fail "--read-auth token: GET $p with the token: $c $(body)"
done
c=$(code /healthz)
[ "$c" = 200 ] || fail "--read-auth token: GET /healthz without a token: $c $(body)"
# Before: pfi event sent --token-file on changes only, so its reads of such a controller got a
# bare "HTTP 401".
event --token-file "$T/token" list || fail "--read-auth token: event list with the token: $(cat "$T/err")"
jq -e '.events | length == 0' "$T/out" >/dev/null ||
  fail "--read-auth token: event list with the token: $(cat "$T/out")"
event list
rc=$?
[ $rc = 1 ] && grep -q "HTTP 401" "$T/err" &&
  grep -q "requires its bearer token for reads.*pass --token-file FILE" "$T/err" ||
  fail "--read-auth token: event list without a token: exit $rc: $(cat "$T/err")"
event --token-file "$T/wrong" list
rc=$?
[ $rc = 1 ] && grep -q "refused the token in $T/wrong" "$T/err" ||
  fail "--read-auth token: event list with a wrong token: exit $rc: $(cat "$T/err")"
stop_serve

# The name a controller gives the nodes (a node held by one refuses another) is the same
# whether its --db exists yet or not: a relative --db named a first start otherwise than its
# restart, and the nodes refused the restarted controller for a minute.
echo '{"nodes": [], "jobs": []}' >"$T/empty.json"
name_of() { (cd "$T" && "$PFI" cluster status --json --topology empty.json --db "$1" | jq -r .allocation.controller); }
n1=$(name_of cl.db)
: >"$T/cl.db"
n2=$(name_of cl.db)
n3=$(name_of "$T/cl.db")
case "$n1" in pfi-cluster@*'#'*) ;; *) fail "controller name: '$n1'" ;; esac
[ "$n1" = "$n2" ] && [ "$n2" = "$n3" ] ||
  fail "the controller's name changes with its database: '$n1' before it exists, '$n2' after, '$n3' by its absolute path"
[ "$(name_of other.db)" != "$n1" ] || fail "two databases give one controller name"

echo "it_cluster_cli: ok"
