#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# it_cluster_cli.sh: `pfi cluster` one-shot subcommands as an operator runs them, without Slurm
# (PATH holds no sinfo here, so anything that asks Slurm fails): `topology --topology FILE`
# shows that file's nodes and jobs, as text and as JSON, the same the controller works from.
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
echo "it_cluster_cli: ok"
