#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# it_cluster_cli.sh: `pfi cluster` one-shot subcommands as an operator runs them, without Slurm
# (PATH holds no sinfo here, so anything that asks Slurm fails): `topology --topology FILE`
# shows that file's nodes and jobs, as text and as JSON, the same the controller works from; a
# stray argument or a --budget where it means nothing is refused (exit 2, nothing done) rather
# than ignored.
# Needs $PFI_BIN.
set -u
PFI=${PFI_BIN:?PFI_BIN not set}
T=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_cluster_cli.XXXXXX")
trap 'rm -rf "$T"' EXIT
trap 'exit 1' INT TERM
fail() { echo "it_cluster_cli: FAIL: $*"; exit 1; }
command -v jq >/dev/null || fail "jq is needed (scripts/install-deps.sh)"
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
echo "it_cluster_cli: ok"
