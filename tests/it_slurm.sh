#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# it_slurm.sh: Slurm end to end on one machine.  A two-node Slurm cluster (munged, slurmctld, two
# slurmd with 8 GRES GPUs each, contrib/slurm/testbed.sh), the SPANK plugin in its plugstack, a
# `pfi serve` per node on simulated GPUs, and `pfi cluster serve` over them.  Jobs submitted with
# sbatch and srun and --power-sla/--power-weight must appear on their nodes' daemons through the
# plugin; a 30% site cut must reach every node with the site never over budget at any sampled
# instant and every SLA held; ended jobs must be deregistered; removing the budget must restore
# every cap; a job on a node whose daemon is down must still run; a job that ends while its
# node's daemon is down must be deregistered (the spool) before the next job on its GPUs; an SLA
# of 0.9999999 must reach the daemon as given, a step's own --power-sla must be warned of, and
# --power-log with %A_%a refused at submission.
# Needs root (slurmd, munged); installs Slurm (and curl, python3 for the checks) with apt-get
# when missing.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
PFI=${PFI_BIN:-$here/build/pfi}

skip() { echo "skip: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "needs root to run slurmd and munged"
need_install=0
for b in munged slurmctld slurmd srun sbatch scancel squeue curl python3; do
  command -v "$b" >/dev/null 2>&1 || need_install=1
done
[ -f /usr/include/slurm/spank.h ] || need_install=1
if [ $need_install -eq 1 ]; then
  command -v apt-get >/dev/null 2>&1 || skip "Slurm is not installed and there is no apt-get"
  echo "installing Slurm (slurmd slurmctld slurm-client munge libslurm-dev), curl and python3"
  # Packages' own services must not start (no config for them, and the test starts its own):
  # the standard Debian switch for that is a policy-rc.d that says no.
  policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d &&
      policy=/usr/sbin/policy-rc.d
  fi
  pkgs="slurmd slurmctld slurm-client munge libslurm-dev curl python3"
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs \
    >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs \
        >/dev/null 2>&1; }
  [ -n "$policy" ] && rm -f "$policy"
  for b in munged slurmctld slurmd srun sbatch scancel squeue curl python3; do
    command -v "$b" >/dev/null 2>&1 || skip "cannot install Slurm with apt-get ($b missing; offline?)"
  done
  [ -f /usr/include/slurm/spank.h ] || skip "cannot install libslurm-dev (no spank.h)"
fi
command -v cc >/dev/null 2>&1 || skip "no C compiler to build the SPANK plugin"
[ -x "$PFI" ] || fail "no pfi binary at $PFI"
"$PFI" serve --help >/dev/null 2>&1 || skip "this pfi has no 'serve' command (the node daemon)"
"$PFI" cluster --help >/dev/null 2>&1 || fail "this pfi has no 'cluster' command"

T=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_slurm.XXXXXX") || fail "mktemp"
pids=""
cleanup() {
  rc=$?
  touch "$T/stop-sampler"
  # Only this testbed's jobs: without our SLURM_CONF, scancel would talk to the host's Slurm.
  [ -n "${SLURM_CONF:-}" ] && [ "$SLURM_CONF" = "$T/slurm/etc/slurm.conf" ] &&
    scancel -u root >/dev/null 2>&1
  for p in $pids; do kill "$p" 2>/dev/null; done
  sleep 0.3
  for p in $pids; do kill -9 "$p" 2>/dev/null; done
  sh "$here/contrib/slurm/testbed.sh" stop "$T/slurm" >/dev/null 2>&1
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
    for f in "$T"/*.log "$T"/slurm/log/*.log; do
      [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }
    done
  fi
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The plugin, built here so the test does not depend on which build made $PFI.
cc -std=c11 -D_GNU_SOURCE -fPIC -shared -Wall -Wextra -Werror -Wno-unused-parameter \
  -o "$T/pfi_spank.so" "$here/src/slurm/pfi_spank.c" -lcurl || fail "cannot build the plugin"

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/token"
chmod 600 "$T/token"
TOK=$(cat "$T/token")

node_get() { curl -sf --max-time 5 --unix-socket "$T/$1.sock" "http://localhost$2"; }

start_serve() { # NODE: its daemon, with the node's own database (jobs are reloaded from it)
  "$PFI" serve --listen "unix:$T/$1.sock" --token-file "$T/token" \
    --db "$T/$1.db" --journal "$T/$1.journal" --sim h200x8-idle --sample-interval 0.5s \
    >>"$T/serve-$1.log" 2>&1 &
  pids="$pids $!"
}
wait_serve() {
  i=0
  until node_get $1 /healthz >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 100 ] || fail "pfi serve for $1 did not come up"; sleep 0.1
  done
}
for n in pfin1 pfin2; do start_serve $n; done
for n in pfin1 pfin2; do wait_serve $n; done

sh "$here/contrib/slurm/testbed.sh" start "$T/slurm" 2 8 \
  "required $T/pfi_spank.so url=unix:$T/%n.sock token=$T/token default_sla=0.35 spool=$T/%n.spool" ||
  fail "the Slurm testbed did not start"
SLURM_CONF=$T/slurm/etc/slurm.conf
export SLURM_CONF
cd "$T" || fail "cd"

"$PFI" cluster serve --listen 127.0.0.1:0 --port-file "$T/cluster.port" --token-file "$T/token" \
  --node-url "unix:$T/%n.sock" --node-token-file "$T/token" --heartbeat 1s --node-ttl 120s \
  --db "$T/cluster.db" >"$T/cluster.log" 2>&1 &
pids="$pids $!"
i=0
until [ -s "$T/cluster.port" ] && curl -sf "http://127.0.0.1:$(cat "$T/cluster.port")/healthz" >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -lt 100 ] || fail "pfi cluster serve did not come up"; sleep 0.1
done
CL=http://127.0.0.1:$(cat "$T/cluster.port")
cl_put() { curl -s --max-time 30 -X PUT -H "Authorization: Bearer $TOK" -d "$1" "$CL/v1/budget"; }

# ---- jobs through Slurm, registered by the plugin ----
j1=$(sbatch --parsable -N2 --gres=gpu:4 --power-sla=0.3 -o /dev/null --wrap 'sleep 600') ||
  fail "sbatch j1"
j2=$(sbatch --parsable -N1 -w pfin1 --gres=gpu:2 --power-weight=2 --power-log="$T/train \"%j\".log" \
  -o /dev/null --wrap 'sleep 600') || fail "sbatch j2"
# Numbers are decimal and in range, and the refusal says the range (a hex float was taken,
# and 2000000 was told "expected a number > 0").
for w in 0x1p-3 2000000 inf; do
  if sbatch --parsable -N1 --gres=gpu:1 --power-weight="$w" -o /dev/null --wrap true >"$T/bad-w.out" 2>&1; then
    fail "--power-weight=$w accepted: $(cat "$T/bad-w.out")"
  fi
  grep -q "expected a decimal number from 0.000001 to 1000000" "$T/bad-w.out" ||
    fail "--power-weight=$w: no range in the refusal: $(cat "$T/bad-w.out")"
done
# The SLA's range is the daemon's (and the prolog script's), [0, 1), said in their words.
for s in 0x0.1 1 -0.1; do
  if sbatch --parsable -N1 --gres=gpu:1 --power-sla=$s -o /dev/null --wrap true >"$T/bad-s.out" 2>&1; then
    fail "--power-sla=$s accepted: $(cat "$T/bad-s.out")"
  fi
  grep -qF "expected a max slowdown in [0, 1) (0.1 = at most 10% slower)" "$T/bad-s.out" ||
    fail "--power-sla=$s: not the daemon's range: $(cat "$T/bad-s.out")"
done
# A log that is not an absolute path is refused at submission.
if sbatch --parsable -N1 --gres=gpu:1 --power-log=train.log -o /dev/null --wrap true >"$T/bad-log.out" 2>&1; then
  fail "--power-log=train.log accepted: $(cat "$T/bad-log.out")"
fi
grep -q "expected an absolute path" "$T/bad-log.out" || fail "no reason for the refused --power-log: $(cat "$T/bad-log.out")"
# Nor one that only fits the daemon's 511 bytes while %j is short: 70 %j are 700 bytes with a
# 10-digit job id.
long=/tmp/x$(printf '%%j%.0s' $(seq 70))
if sbatch --parsable -N1 --gres=gpu:1 --power-log="$long" -o /dev/null --wrap true >"$T/bad-log.out" 2>&1; then
  fail "--power-log with 70 %j accepted: $(cat "$T/bad-log.out")"
fi
grep -q "once each %j is replaced" "$T/bad-log.out" || fail "no reason for the refused long --power-log: $(cat "$T/bad-log.out")"
srun -N1 -w pfin2 --gres=gpu:3 --power-sla=0.25 -J pfi-it-srun sleep 600 >/dev/null 2>&1 &
pids="$pids $!"

# What each node daemon must hold: "node job ngpus sla weight [log]".
expect="pfin1 $j1 4 0.3 1
pfin2 $j1 4 0.3 1
pfin1 $j2 2 0.35 2 $T/train \"$j2\".log"
i=0
while :; do
  j3=$(squeue -h -n pfi-it-srun -o %i 2>/dev/null)
  ok=1
  for n in pfin1 pfin2; do node_get $n /v1/jobs >"$T/jobs-$n.json" 2>/dev/null || ok=0; done
  if [ $ok -eq 1 ] && [ -n "$j3" ]; then
    all=$(printf '%s\npfin2 %s 3 0.25 1\n' "$expect" "$j3")
    missing=$(echo "$all" | while read -r n id ng sla w lg; do
      [ -n "$n" ] || continue
      python3 - "$T/jobs-$n.json" "$id" "$ng" "$sla" "$w" "$lg" <<'EOF' 2>/dev/null || echo "$n:$id"
import json, sys
d = json.load(open(sys.argv[1]))
j = [x for x in d["jobs"] if str(x["id"]) == sys.argv[2]]
assert j, "not registered"
j = j[0]
assert len(j["gpus"]) == int(sys.argv[3]), j
assert abs(j["sla"] - float(sys.argv[4])) < 1e-9, j
assert abs(j["weight"] - float(sys.argv[5])) < 1e-9, j
assert j["log"] == (sys.argv[6] or None), j
EOF
    done)
    [ -z "$missing" ] && break
  fi
  i=$((i + 1)); [ $i -lt 60 ] || fail "jobs not registered on their nodes: ${missing:-srun job not running}"
  sleep 0.5
done
echo "registered through the plugin: $j1 (2 nodes, sla 0.3), $j2 (weight 2, site sla 0.35, its log), $j3 (srun, sla 0.25)"
# The controller learns jobs when it refreshes (Slurm + node daemons): on a loaded machine its
# first refresh can predate the registrations, so make it see all three before asking it
# anything about them.
i=0
until curl -sf -X POST -H "Authorization: Bearer $TOK" "$CL/v1/refresh" >/dev/null &&
  curl -sf "$CL/v1/jobs" | python3 -c '
import json, sys
ids = {str(x["id"]) for x in json.load(sys.stdin)["jobs"] if x.get("registered")}
assert set(sys.argv[1:]) <= ids, ids
' "$j1" "$j2" "$j3" 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 60 ] || fail "the cluster controller never saw jobs $j1 $j2 $j3"
  sleep 0.5
done

# ---- bad input: nothing changes ----
for n in pfin1 pfin2; do node_get $n /v1/gpus >"$T/before-$n.json" || fail "GET gpus $n"; done
code=$(curl -s -o "$T/bad.json" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOK" \
  -d '{"budget": "cut=45%"}' "$CL/v1/budget")
if [ "$code" != 409 ] || ! grep -q "least feasible site budget" "$T/bad.json"; then
  fail "a budget below the SLAs' floor: HTTP $code $(cat "$T/bad.json")"
fi
code=$(curl -s -o "$T/bad.json" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOK" \
  -d '{"budget": "lots"}' "$CL/v1/budget")
[ "$code" = 400 ] || fail "a malformed budget: HTTP $code $(cat "$T/bad.json")"
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -d '{"budget": "90%"}' "$CL/v1/budget")
[ "$code" = 401 ] || fail "a budget without the token: HTTP $code"
for n in pfin1 pfin2; do
  node_get $n /v1/gpus | python3 -c '
import json, sys
a = [g["limit_w"] for g in json.load(sys.stdin)["gpus"]]
b = [g["limit_w"] for g in json.load(open(sys.argv[1]))["gpus"]]
assert a == b, (a, b)' "$T/before-$n.json" || fail "a refused budget changed the caps of $n"
done
echo "refused with nothing changed: infeasible (409), malformed (400), no token (401)"

# ---- a 30% site cut ----
curl -sf -X POST -H "Authorization: Bearer $TOK" "$CL/v1/refresh" >/dev/null || fail "refresh"
b30=7840
cl_put '{"budget": "cut=30%"}' >"$T/cut30.json"
python3 - "$T/cut30.json" "$b30" <<'EOF' || fail "cut 30%: $(cat "$T/cut30.json")"
import json, sys
a = json.load(open(sys.argv[1]))
assert abs(a["budget_w"] - float(sys.argv[2])) < 1e-6, a
assert a["cap_sum_w"] <= float(sys.argv[2]) + 1e-6, a
assert a["nodes_up"] == 2 and a["jobs"] == 3, a
EOF

# Sample the site's cap sum while the budget moves among values at or below the 30% cut.  Two
# nodes cannot be read at one instant, so each sample reads pfin1, pfin2, then pfin1 again, and
# counts only when pfin1's caps epoch and sum did not move in between: pfin1's sum then held
# when pfin2 was read, and their total is the site's at that instant.
alloc_of() {
  node_get "$1" /v1/allocation | tr -d ' \n' |
    grep -o '"sum_limits_w":[0-9.]*\|"caps_epoch":[0-9]*' | cut -d: -f2 | tr '\n' ' '
}
sampler() {
  while [ ! -e "$T/stop-sampler" ]; do
    a=$(alloc_of pfin1); b=$(alloc_of pfin2); c=$(alloc_of pfin1)
    # a, c: "SUM EPOCH" of pfin1; b: pfin2's
    echo "$a|$b|$c" | awk -F'|' '{split($1, x, " "); split($2, y, " "); split($3, z, " ");
      if (x[1] != "" && y[1] != "" && x[1] == z[1] && x[2] == z[2]) print x[1] + y[1];
      else print "skip"}' >>"$T/samples"
  done
}
sampler &
spid=$!
pids="$pids $spid"
for b in '{"budget": "cut=35%"}' '{"budget": "cut=32%", "ramp_s": 2}' '{"watts": 7400}' \
  '{"budget": "cut=30%"}' '{"budget": "cut=35%"}' '{"budget": "cut=30%", "ramp_s": 1}'; do
  cl_put "$b" >"$T/step.json"
  grep -q '"budget_w"' "$T/step.json" || fail "budget $b: $(cat "$T/step.json")"
  sleep 0.3
done
sleep 2.5 # the ramp and the controller's next passes
# A job starting on parked GPUs under the budget: its caps go up while the running jobs give
# watts back, the change where lowering everywhere first matters.  The controller's loop finds
# it on its own (heartbeat 1 s).
j4=$(sbatch --parsable -N1 -w pfin1 --gres=gpu:2 --power-sla=0.35 -o /dev/null --wrap 'sleep 600') ||
  fail "sbatch j4"
i=0
until curl -sf "$CL/v1/jobs" | python3 -c '
import json, sys
j = [x for x in json.load(sys.stdin)["jobs"] if x["id"] == sys.argv[1]]
assert j and j[0]["registered"] and j[0]["cap_w"] is not None and j[0]["cap_w"] > 201
' "$j4" 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 40 ] || fail "job $j4 never got a cap above its parked minimum"
  sleep 0.5
done
echo "job $j4 started under the budget: raised from its parked minimum while the others gave back"
# The sampler's pace follows the machine's load: keep it going (the budget still in force)
# until it holds 20 consistent samples, for at most a minute.
i=0
while [ "$(grep -vc skip "$T/samples" 2>/dev/null || true)" -lt 20 ] && [ $i -lt 120 ]; do
  sleep 0.5; i=$((i + 1))
done
touch "$T/stop-sampler"
wait $spid 2>/dev/null
skipped=$(grep -c skip "$T/samples")
grep -v skip "$T/samples" >"$T/samples.ok"
mv "$T/samples.ok" "$T/samples"
n_samples=$(wc -l <"$T/samples")
[ "$n_samples" -ge 20 ] || fail "only $n_samples cap samples"
over=$(awk -v b=$b30 '$1 > b + 1e-6 {n++} END {print n+0}' "$T/samples")
max=$(sort -g "$T/samples" | tail -n 1)
[ "$over" -eq 0 ] || fail "$over of $n_samples samples over the budget $b30 W (max $max W)"
echo "site cap sum sampled $n_samples times while the budget moved ($skipped reads straddled a change): max $max W <= $b30 W"

# Every node's caps, the SLAs and one cap for the two-node job.
for n in pfin1 pfin2; do node_get $n /v1/gpus >"$T/gpus-$n.json" || fail "GET gpus $n"; done
curl -sf "$CL/v1/jobs" >"$T/cl-jobs.json" || fail "GET cluster jobs"
python3 - "$T" "$j1" "$b30" <<'EOF' || fail "caps after the cut"
import json, sys
T, j1, b = sys.argv[1], sys.argv[2], float(sys.argv[3])
total = 0
caps_j1 = set()
for n in ("pfin1", "pfin2"):
    g = json.load(open(f"{T}/gpus-{n}.json"))["gpus"]
    for x in g:
        assert x["min_limit_w"] - 1e-6 <= x["limit_w"] <= x["max_limit_w"] + 1e-6, x
        total += x["limit_w"]
    jobs = json.load(open(f"{T}/jobs-{n}.json"))["jobs"]
    for j in jobs:
        if str(j["id"]) == j1:
            caps_j1.update(g[i]["limit_w"] for i in j["gpus"])
assert total <= b + 1e-6, total
assert len(caps_j1) == 1, caps_j1
for j in json.load(open(f"{T}/cl-jobs.json"))["jobs"]:
    assert j["registered"], j
    assert j["rel_tput_target"] is not None and j["sla"] is not None, j
    assert j["rel_tput_target"] >= 1 - j["sla"] - 1e-6, j
print("caps ok: sum %.0f W <= %.0f W, job %s holds %.0f W on all 8 GPUs" % (total, b, j1, caps_j1.pop()))
EOF

# ---- a node daemon that stops answering: counted at its last caps, and said so ----
serve_pid() { for p in $pids; do grep -qs "$1.sock" "/proc/$p/cmdline" && echo "$p"; done; }
p2=$(serve_pid pfin2)
[ -n "$p2" ] || fail "no pid for pfin2's daemon"
kill -STOP "$p2"
# The controller's heartbeats (every 1 s, 2 s timeout) find it silent.
i=0
until curl -sf "$CL/v1/nodes" | python3 -c '
import json, sys
n = {x["name"]: x for x in json.load(sys.stdin)["nodes"]}
assert n["pfin2"]["up"] is False' 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 40 ] || { kill -CONT "$p2"; fail "pfin2 stopped but still shown up"; }
  sleep 0.5
done
b29=7952
cl_put '{"budget": "cut=29%"}' >"$T/silent.json"
curl -sf "$CL/v1/nodes" >"$T/nodes.json" || fail "GET cluster nodes"
kill -CONT "$p2"
node_get pfin1 /v1/gpus >"$T/gpus-pfin1.json" || fail "GET gpus pfin1"
python3 - "$T" "$b29" <<'EOF2' || fail "with pfin2 silent: $(cat "$T/silent.json")"
import json, sys
T, b = sys.argv[1], float(sys.argv[2])
a = json.load(open(f"{T}/silent.json"))
assert abs(a["budget_w"] - b) < 1e-6 and a["nodes_up"] == 1, a
n = {x["name"]: x for x in json.load(open(f"{T}/nodes.json"))["nodes"]}
assert n["pfin2"]["up"] is False and n["pfin2"]["counted_at_last_caps"] is True, n["pfin2"]
assert n["pfin2"]["why"], n["pfin2"]
s1 = sum(g["limit_w"] for g in json.load(open(f"{T}/gpus-pfin1.json"))["gpus"])
assert s1 + n["pfin2"]["cap_sum_w"] <= b + 1e-6, (s1, n["pfin2"]["cap_sum_w"])
print("pfin2 silent: counted at its last caps (%.0f W, %s); site %.0f W <= %.0f W"
      % (n["pfin2"]["cap_sum_w"], n["pfin2"]["why"], s1 + n["pfin2"]["cap_sum_w"], b))
EOF2
i=0
until [ "$(curl -sf "$CL/v1/nodes" | grep -c '"up": true')" = 2 ]; do
  i=$((i + 1)); [ $i -lt 40 ] || fail "pfin2 not seen again after it answered"
  sleep 0.5
done
echo "pfin2 answers again and is managed again"

# ---- jobs end: deregistered by the epilog; budget removed: caps restored ----
scancel "$j1" "$j2" "$j3" "$j4"
i=0
while :; do
  left=0
  for n in pfin1 pfin2; do
    c=$(node_get $n /v1/jobs | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))' 2>/dev/null) || c=1
    left=$((left + c))
  done
  [ $left -eq 0 ] && break
  i=$((i + 1)); [ $i -lt 60 ] || fail "$left jobs still registered after scancel"
  sleep 0.5
done
cl_put '{"budget": null}' >"$T/none.json"
for n in pfin1 pfin2; do
  node_get $n /v1/gpus | python3 -c '
import json, sys
g = json.load(sys.stdin)["gpus"]
assert all(abs(x["limit_w"] - x["default_limit_w"]) < 1e-6 for x in g), [x["limit_w"] for x in g]
' || fail "caps of $n not restored: $(cat "$T/none.json")"
done
echo "jobs deregistered, every cap back at its default"

# ---- a node daemon down: the job still runs, the plugin says why ----
p2=$(serve_pid pfin2)
kill "$p2"
wait "$p2" 2>/dev/null
timeout 60 srun -N1 -w pfin2 --gres=gpu:1 true || fail "a job failed because pfi serve was down"
grep -q "runs without power management" "$T/slurm/log/slurmd-pfin2.log" ||
  fail "the plugin did not log why the job runs unmanaged"
# It names the socket it could not reach, not curl's stand-in "localhost port 80".
grep -q "registration failed, the job runs without power management: POST /v1/jobs at unix:$T/pfin2.sock: " \
  "$T/slurm/log/slurmd-pfin2.log" || fail "the plugin does not name the socket: $(grep 'registration failed' "$T/slurm/log/slurmd-pfin2.log" | tail -n 1)"
grep -q "localhost port 80" "$T/slurm/log/slurmd-pfin2.log" && fail "the plugin's log says localhost port 80 for a socket"
echo "job ran with its node daemon down; slurmd logged why"

# ---- a job that ends while its node's daemon is down: deregistered once it is back ----
# The daemon reloads a registered job from its database when it restarts; without the spool the
# job stayed, its GPUs kept its caps, and the next job on them was refused (409) and unmanaged.
has_job() { node_get pfin2 /v1/jobs | python3 -c '
import json, sys
sys.exit(0 if sys.argv[1] in [str(j["id"]) for j in json.load(sys.stdin)["jobs"]] else 1)' "$1"; }
start_serve pfin2
wait_serve pfin2
ja=$(sbatch --parsable -N1 -w pfin2 --gres=gpu:8 -o /dev/null --wrap 'sleep 600') || fail "sbatch ja"
i=0
until has_job "$ja" 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 60 ] || fail "job $ja not registered on pfin2"; sleep 0.5
done
p2=$(serve_pid pfin2)
kill "$p2"
wait "$p2" 2>/dev/null
scancel "$ja"
i=0
until grep -q "job $ja: deregistration failed" "$T/slurm/log/slurmd-pfin2.log"; do
  i=$((i + 1)); [ $i -lt 60 ] || fail "no failed deregistration of $ja logged"; sleep 0.5
done
[ -e "$T/pfin2.spool/$ja" ] || fail "the deregistration of $ja was not spooled: $(ls "$T/pfin2.spool" 2>&1)"
# Said as an epilog: the job has ended, its GPUs keep its caps (not "the job runs without").
grep -q "job $ja: deregistration failed, spooled: if the daemon holds the job, its GPUs keep the job's caps until the daemon takes it: DELETE /v1/jobs/$ja at unix:" \
  "$T/slurm/log/slurmd-pfin2.log" || fail "the failed deregistration's wording: $(grep "job $ja: deregistration failed" "$T/slurm/log/slurmd-pfin2.log")"
start_serve pfin2
wait_serve pfin2
has_job "$ja" || fail "job $ja not reloaded by the restarted daemon (the case this tests)"
jb=$(sbatch --parsable -N1 -w pfin2 --gres=gpu:8 -o /dev/null --wrap 'sleep 600') || fail "sbatch jb"
i=0
until has_job "$jb" 2>/dev/null; do
  i=$((i + 1))
  [ $i -lt 60 ] || fail "job $jb not registered on pfin2 (still holding: $(node_get pfin2 /v1/jobs))"
  sleep 0.5
done
has_job "$ja" && fail "job $ja still registered after $jb's prolog"
[ -e "$T/pfin2.spool/$ja" ] && fail "$ja still spooled after it was deregistered"
scancel "$jb"
i=0
while has_job "$jb" 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 60 ] || fail "job $jb still registered after scancel"; sleep 0.5
done
echo "job $ja ended with its daemon down: deregistered at the next job's prolog, $jb registered"

# ---- required=1: a daemon that answers no (409, GPUs held) does not fail the prolog ----
# (slurmd reads plugstack.conf again for each job prolog.)
sed -i 's/$/ required=1/' "$T/slurm/etc/plugstack.conf"
curl -sf --max-time 5 --unix-socket "$T/pfin2.sock" -H "Authorization: Bearer $TOK" \
  -H 'Content-Type: application/json' -d '{"id":"blocker","gpus":[0,1,2,3,4,5,6,7]}' \
  http://localhost/v1/jobs >/dev/null || fail "could not register the blocking job on pfin2"
jc=$(sbatch --parsable -N1 -w pfin2 --gres=gpu:2 -o "$T/jc.out" --wrap 'echo ran') || fail "sbatch jc"
i=0
until [ -s "$T/jc.out" ] || sinfo -h -n pfin2 -o %T | grep -q drain; do
  i=$((i + 1)); [ $i -lt 60 ] || fail "job $jc did not run: $(squeue -h -j "$jc")"; sleep 0.5
done
st=$(sinfo -h -n pfin2 -o %T)
case "$st" in drain*) fail "a 409 under required=1 drained pfin2: $(scontrol show node pfin2 | grep Reason)" ;; esac
grep -q ran "$T/jc.out" || fail "job $jc did not run"
grep -q "job $jc: registration refused, the job runs without power management.*HTTP 409" \
  "$T/slurm/log/slurmd-pfin2.log" || fail "the refusal of $jc was not logged with its reason"
curl -sf --max-time 5 --unix-socket "$T/pfin2.sock" -H "Authorization: Bearer $TOK" \
  -X DELETE http://localhost/v1/jobs/blocker >/dev/null || fail "could not remove the blocking job"
echo "required=1: job $jc refused by its daemon (409) ran unmanaged, pfin2 stayed in service"
# ---- what was accepted is what is sent; a step's options; log patterns ----
# 0.9999999 passed the check (< 1) and went out as 1 (%.6g), which the daemon refuses; a step's
# --power-sla was dropped without a word; --power-log kept %A_%a as it was.
jd=$(sbatch --parsable -N1 -w pfin1 --gres=gpu:1 --power-sla=0.9999999 -o "$T/jd.out" \
  --wrap 'srun --power-sla=0.9999999 true; srun --power-sla=0.05 true; sleep 600') || fail "sbatch jd"
i=0
until node_get pfin1 /v1/jobs | python3 -c '
import json, sys
j = [x for x in json.load(sys.stdin)["jobs"] if str(x["id"]) == sys.argv[1]]
assert j and abs(j[0]["sla"] - 0.9999999) < 1e-12, j' "$jd" 2>/dev/null; do
  i=$((i + 1))
  [ $i -lt 60 ] || fail "job $jd not registered with sla 0.9999999: $(node_get pfin1 /v1/jobs) $(grep "job $jd" "$T/slurm/log/slurmd-pfin1.log")"
  sleep 0.5
done
i=0
until grep -qF "pfi: warning: --power-sla=0.05 is ignored on a step of job $jd (the job keeps --power-sla=0.9999999)" "$T/jd.out" 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 60 ] || fail "no warning for a step's --power-sla: $(cat "$T/jd.out")"; sleep 0.5
done
[ "$(grep -c 'pfi: warning' "$T/jd.out")" = 1 ] || fail "a warning for the job's own value: $(cat "$T/jd.out")"
scancel "$jd"
if sbatch --parsable --array=1-2 -N1 --gres=gpu:1 --power-log='/scratch/train-%A_%a.log' -o /dev/null --wrap true >"$T/bad-log.out" 2>&1; then
  fail "--power-log with %A_%a accepted: $(cat "$T/bad-log.out")"
fi
grep -qF "'%A' is not expanded: only %j (the job id; each array task has its own) and %% (a %) are" "$T/bad-log.out" ||
  fail "no reason for the refused %A: $(cat "$T/bad-log.out")"
echo "job $jd registered with sla 0.9999999 as given; its step's --power-sla=0.05 warned of; %A_%a refused"
echo "it_slurm: ok"
