#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# it_slurm_prolog.sh: the alternative to the SPANK plugin, contrib/slurm/pfi-prolog.sh and
# pfi-epilog.sh as slurmd's Prolog/Epilog, on a one-node Slurm testbed with one `pfi serve`:
# a job's GPUs, SLA and weight (from its --comment) registered, the site default SLA for a job
# that gives none, both deregistered when they end, a job still running when the daemon is
# down, and a job that ends while the daemon is down: its epilog spools the deregistration, the
# restarted daemon reloads the job from its database, and the next job's prolog deregisters it
# before registering itself on the same GPUs.  First, without Slurm, the scripts run through a
# link and as copies (below).  Needs root; skips when Slurm is not installed (tests/it_slurm.sh installs it).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
PFI=${PFI_BIN:-$here/build/pfi}

skip() { echo "skip: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

# Without Slurm: the scripts as a site links them into a prolog.d or copies them.  Each finds
# its pfi-slurm-lib.sh through the link, or at the path `make install` wrote into it; a copy
# that finds none exits 0 saying why (dash's status 2 for a missing `.` file drained the
# node), or 1 with PFI_REQUIRED=1.  No daemon listens: a lib found says the job runs unmanaged.
L=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_slurm_prolog_links.XXXXXX") || fail "mktemp"
trap 'rm -rf "$L"' EXIT
printf 'PFI_URL=unix:%s/none.sock\nPFI_SPOOL=%s/spool\n' "$L" "$L" >"$L/conf"
mkdir -p "$L/pd" "$L/inst"
for w in prolog epilog; do
  ln -s "$here/contrib/slurm/pfi-$w.sh" "$L/pd/50-pfi-$w"
  cp "$here/contrib/slurm/pfi-$w.sh" "$L/pd/copy-$w.sh"
  # As installed: the lib's folder written in (make install), the script copied elsewhere.
  sed "s|@PKGLIBEXECDIR@|$here/contrib/slurm|g" "$here/contrib/slurm/pfi-$w.sh" >"$L/inst/pfi-$w.sh"
  cp "$L/inst/pfi-$w.sh" "$L/pd/inst-copy-$w.sh"
done
run_script() { # SCRIPT [VAR=VALUE...]: its exit status in rc, its messages in $L/out
  s=$1
  shift
  env -i PATH="$PATH" PFI_SLURM_CONF="$L/conf" SLURMD_NODENAME=n1 SLURM_JOB_ID=7 SLURM_JOB_GPUS=0 \
    "$@" sh "$s" >"$L/out" 2>&1
  rc=$?
}
for s in 50-pfi-prolog inst-copy-prolog.sh; do
  run_script "$L/pd/$s"
  [ $rc = 0 ] && grep -q "job 7: registration failed, the job runs without power management" "$L/out" ||
    fail "prolog run as $s: exit $rc: $(cat "$L/out")"
done
# With no PFI_URL the prolog goes to the packaged daemon's socket, as the plugin does and as
# the example serve.conf listens (it went to 127.0.0.1:9455, where nothing listened).
printf 'PFI_SPOOL=%s/spool\n' "$L" >"$L/conf.nourl"
run_script "$L/pd/50-pfi-prolog" PFI_SLURM_CONF="$L/conf.nourl"
grep -q "POST /v1/jobs at unix:/run/pfi/serve.sock" "$L/out" || fail "the prolog's default PFI_URL: $(cat "$L/out")"
for s in 50-pfi-epilog inst-copy-epilog.sh; do
  rm -rf "$L/spool"
  run_script "$L/pd/$s"
  [ $rc = 0 ] && [ -f "$L/spool/7" ] || fail "epilog run as $s: exit $rc, spool $(ls "$L/spool" 2>&1): $(cat "$L/out")"
done
for w in prolog epilog; do
  run_script "$L/pd/copy-$w.sh"
  [ $rc = 0 ] && grep -q "pfi-slurm-lib.sh not found beside its file" "$L/out" ||
    fail "a copied $w without its lib: exit $rc (expected 0, saying why): $(cat "$L/out")"
  run_script "$L/pd/copy-$w.sh" PFI_REQUIRED=1
  [ $rc = 1 ] && grep -q "failing the $w (PFI_REQUIRED=1)" "$L/out" ||
    fail "a copied $w without its lib, PFI_REQUIRED=1: exit $rc (expected 1): $(cat "$L/out")"
done
# The token never on curl's command line (ps shows every user a process's arguments): a curl
# on PATH that writes down its arguments and its stdin, and answers 201.
mkdir -p "$L/bin"
printf '%s\n' '#!/bin/sh' "printf '%s\\n' \"\$@\" >'$L/curl.args'" "cat >'$L/curl.stdin'" \
  "printf 'HTTP/1.1 201 Created\\r\\n\\r\\n{}'" >"$L/bin/curl"
chmod +x "$L/bin/curl"
printf 'secret-token-0123456789abcdef\n' >"$L/token"
chmod 600 "$L/token"
printf 'PFI_URL=unix:%s/none.sock\nPFI_SPOOL=%s/spool\nPFI_TOKEN_FILE=%s/token\n' "$L" "$L" "$L" \
  >"$L/conf.tok"
env -i PATH="$L/bin:$PATH" PFI_SLURM_CONF="$L/conf.tok" SLURMD_NODENAME=n1 SLURM_JOB_ID=7 \
  SLURM_JOB_GPUS=0 sh "$L/pd/50-pfi-prolog" >"$L/out" 2>&1 || fail "prolog with a token: $(cat "$L/out")"
[ -s "$L/curl.args" ] || fail "the prolog did not run curl: $(cat "$L/out")"
grep -q secret-token "$L/curl.args" && fail "the token is on curl's command line: $(cat "$L/curl.args")"
grep -qx 'Authorization: Bearer secret-token-0123456789abcdef' "$L/curl.stdin" ||
  fail "the token is not on curl's stdin: $(cat "$L/curl.stdin")"
# An epilog whose environment lists no GPU (Slurm after a slurmctld restart) still sends the
# DELETE: it exited 0 before any request, and the job stayed registered for good.
rm -f "$L/curl.args"
env -i PATH="$L/bin:$PATH" PFI_SLURM_CONF="$L/conf.tok" SLURMD_NODENAME=n1 SLURM_JOB_ID=7 \
  sh "$L/pd/50-pfi-epilog" >"$L/out" 2>&1 || fail "epilog without SLURM_JOB_GPUS: $(cat "$L/out")"
grep -qx DELETE "$L/curl.args" && grep -q '/v1/jobs/7$' "$L/curl.args" ||
  fail "the epilog of a job whose GPUs Slurm did not list sent no DELETE: $(cat "$L/curl.args" 2>&1)"
# ...a best effort: with no daemon answering (a CPU node), no failure even with PFI_REQUIRED=1
# (it drained the node) and nothing spooled (every CPU job's id, for ever).
rm -rf "$L/spool"
env -i PATH="$PATH" PFI_SLURM_CONF="$L/conf" SLURMD_NODENAME=n1 SLURM_JOB_ID=8 PFI_REQUIRED=1 \
  sh "$L/pd/50-pfi-epilog" >"$L/out" 2>&1 || fail "epilog of a CPU-only job, no daemon, PFI_REQUIRED=1: exit $?: $(cat "$L/out")"
[ -e "$L/spool/8" ] && fail "the epilog of a CPU-only job spooled its id"
rm -rf "$L"
echo "prolog and epilog run through a link and as installed copies; a copy without its lib exits 0 (1 with PFI_REQUIRED=1); the token goes on curl's stdin"

[ "$(id -u)" -eq 0 ] || skip "needs root to run slurmd and munged"
for b in munged slurmctld slurmd sbatch scancel squeue curl python3; do
  command -v "$b" >/dev/null 2>&1 || skip "$b not installed (apt-get install slurmd slurmctld slurm-client munge curl)"
done
[ -x "$PFI" ] || fail "no pfi binary at $PFI"
"$PFI" serve --help >/dev/null 2>&1 || skip "this pfi has no 'serve' command (the node daemon)"

T=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_slurm_prolog.XXXXXX") || fail "mktemp"
spid=""
cleanup() {
  rc=$?
  [ -n "${SLURM_CONF:-}" ] && [ "$SLURM_CONF" = "$T/slurm/etc/slurm.conf" ] &&
    scancel -u root >/dev/null 2>&1
  [ -n "$spid" ] && kill "$spid" 2>/dev/null
  sh "$here/contrib/slurm/testbed.sh" stop "$T/slurm" >/dev/null 2>&1
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
    for f in "$T"/*.log "$T"/slurm/log/slurmd-*.log; do
      [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }
    done
  fi
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/token"
chmod 600 "$T/token"
node_get() { curl -sf --max-time 5 --unix-socket "$T/pfin1.sock" "http://localhost$1"; }
serve() {
  "$PFI" serve --listen "unix:$T/pfin1.sock" --token-file "$T/token" --db "$T/n.db" \
    --journal "$T/n.journal" --sim h200x8-idle >>"$T/serve.log" 2>&1 &
  spid=$!
  i=0
  until node_get /healthz >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 100 ] || fail "pfi serve did not come up"; sleep 0.1
  done
}
# The daemon's jobs as "id:ngpus" words, sorted.
node_jobs() {
  node_get /v1/jobs | python3 -c 'import json,sys
print(" ".join(sorted("%s:%d" % (j["id"], len(j["gpus"])) for j in json.load(sys.stdin)["jobs"])))'
}
serve

# The scripts as a site installs them, their settings in a file (slurmd gives prologs a bare
# environment), wrapped only to point at this test's settings file.
cat >"$T/pfi-slurm" <<EOF
PFI_URL=unix:$T/pfin1.sock
PFI_TOKEN_FILE=$T/token
PFI_DEFAULT_SLA=0.3
PFI_READ_COMMENT=1
PFI_LOG_FILE=$T/pfi-slurm.log
PFI_SPOOL=$T/spool
SLURM_CONF=$T/slurm/etc/slurm.conf
export SLURM_CONF
EOF
for w in prolog epilog; do
  printf '#!/bin/sh\nPFI_SLURM_CONF=%s exec sh %s "$@"\n' "$T/pfi-slurm" \
    "$here/contrib/slurm/pfi-$w.sh" >"$T/$w.sh"
  chmod 755 "$T/$w.sh"
done
PFI_TESTBED_EXTRA="Prolog=$T/prolog.sh
Epilog=$T/epilog.sh" sh "$here/contrib/slurm/testbed.sh" start "$T/slurm" 1 8 "" ||
  fail "the Slurm testbed did not start"
SLURM_CONF=$T/slurm/etc/slurm.conf
export SLURM_CONF
cd "$T" || fail "cd"

j1=$(sbatch --parsable --gres=gpu:3 --comment "pfi:sla=0.15, weight=3" -o /dev/null --wrap 'sleep 600') ||
  fail "sbatch j1"
j2=$(sbatch --parsable --gres=gpu:2 -o /dev/null --wrap 'sleep 600') || fail "sbatch j2"
i=0
until node_get /v1/jobs >"$T/jobs.json" && python3 - "$T/jobs.json" "$j1" "$j2" <<'EOF' 2>/dev/null
import json, sys
d = {str(j["id"]): j for j in json.load(open(sys.argv[1]))["jobs"]}
a, b = d[sys.argv[2]], d[sys.argv[3]]
assert len(a["gpus"]) == 3 and abs(a["sla"] - 0.15) < 1e-9 and abs(a["weight"] - 3) < 1e-9, a
assert len(b["gpus"]) == 2 and abs(b["sla"] - 0.3) < 1e-9 and abs(b["weight"] - 1) < 1e-9, b
assert not set(a["gpus"]) & set(b["gpus"]), (a, b)
EOF
do
  i=$((i + 1)); [ $i -lt 60 ] || fail "jobs not registered by the prolog: $(cat "$T/jobs.json")"
  sleep 0.5
done
echo "prolog registered $j1 (3 GPUs, sla 0.15 and weight 3 from --comment) and $j2 (site sla 0.3)"

scancel "$j1" "$j2"
i=0
until [ "$(node_get /v1/jobs | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))' 2>/dev/null)" = 0 ]; do
  i=$((i + 1)); [ $i -lt 60 ] || fail "jobs still registered after the epilog"
  sleep 0.5
done
echo "epilog deregistered both"

# PFI_REQUIRED=1 fails the prolog only when the daemon cannot be told.  A comment out of range
# is logged and not used (the job registers with the site SLA); a daemon that refuses the job
# (409: its GPUs belong to another job) leaves it running unmanaged, the node in service.
echo "PFI_REQUIRED=1" >>"$T/pfi-slurm"
in_service() {
  st=$(sinfo -h -n pfin1 -o %T 2>/dev/null)
  case "$st" in drain*|down*|fail*) fail "node pfin1 $st: $(scontrol show node pfin1 | grep -i reason)" ;; esac
}
ja=$(sbatch --parsable --gres=gpu:2 --comment "pfi:sla=5, weight=0" -o /dev/null --wrap 'sleep 600') ||
  fail "sbatch ja"
i=0
until [ "$(node_jobs 2>/dev/null)" = "$ja:2" ]; do
  i=$((i + 1)); [ $i -lt 60 ] || { in_service; fail "job $ja (bad comment) not registered: $(node_jobs)"; }
  sleep 0.5
done
node_get /v1/jobs | python3 -c 'import json,sys
j = json.load(sys.stdin)["jobs"][0]
assert abs(j["sla"] - 0.3) < 1e-9 and j["weight"] == 1, j' || fail "job $ja: not the site SLA and weight 1"
grep -q "job $ja: comment sla=5 ignored" "$T/pfi-slurm.log" || fail "bad sla in the comment not logged"
grep -q "job $ja: comment weight=0 ignored" "$T/pfi-slurm.log" || fail "bad weight in the comment not logged"
scancel "$ja"
i=0
until [ -z "$(node_jobs 2>/dev/null)" ]; do
  i=$((i + 1)); [ $i -lt 60 ] || fail "job $ja still registered after its epilog: $(node_jobs)"
  sleep 0.5
done
curl -sf --max-time 5 --unix-socket "$T/pfin1.sock" -H "Authorization: Bearer $(cat "$T/token")" \
  -H 'Content-Type: application/json' -d '{"id":"blocker","gpus":[0,1,2,3,4,5,6,7]}' \
  http://localhost/v1/jobs >/dev/null || fail "could not register the blocking job"
jb=$(sbatch --parsable --gres=gpu:2 -o "$T/jb.out" --wrap 'echo ran') || fail "sbatch jb"
i=0
until [ "$(squeue -h 2>/dev/null | wc -l)" = 0 ]; do
  i=$((i + 1)); [ $i -lt 60 ] || fail "job $jb did not finish: $(squeue -h)"
  sleep 0.5
done
grep -q ran "$T/jb.out" || { in_service; fail "job $jb refused by the daemon (409) did not run"; }
in_service
grep -q "job $jb: registration refused, the job runs without power management.*HTTP 409: GPU [0-9] already belongs to job blocker (if it has ended: pfi ctl job rm blocker)" \
  "$T/pfi-slurm.log" || fail "the daemon's 409 reason not logged: $(tail -n 2 "$T/pfi-slurm.log")"
curl -sf --max-time 5 --unix-socket "$T/pfin1.sock" -H "Authorization: Bearer $(cat "$T/token")" \
  -X DELETE http://localhost/v1/jobs/blocker >/dev/null || fail "could not remove the blocking job"
sed -i '/^PFI_REQUIRED=1$/d' "$T/pfi-slurm"
echo "PFI_REQUIRED=1: bad comment values ignored ($ja registered with the site SLA); a 409 ($jb) runs unmanaged, node in service"

# A job that ends while the daemon is down (its epilog fails), and one that starts then.
j4=$(sbatch --parsable --gres=gpu:4 -o /dev/null --wrap 'sleep 600') || fail "sbatch j4"
i=0
until [ "$(node_jobs 2>/dev/null)" = "$j4:4" ]; do
  i=$((i + 1)); [ $i -lt 60 ] || fail "job $j4 not registered: $(node_jobs)"
  sleep 0.5
done
kill "$spid"; wait "$spid" 2>/dev/null; spid=""
scancel "$j4"
j3=$(sbatch --parsable --gres=gpu:1 -o "$T/j3.out" --wrap 'echo ran') || fail "sbatch j3"
i=0
until [ "$(squeue -h 2>/dev/null | wc -l)" = 0 ]; do
  i=$((i + 1)); [ $i -lt 60 ] || fail "jobs $j3, $j4 did not finish with the daemon down"
  sleep 0.5
done
grep -q ran "$T/j3.out" || fail "job $j3 did not run with the daemon down"
grep -q "runs without power management" "$T/pfi-slurm.log" ||
  fail "the prolog did not log why the job runs unmanaged"
echo "job ran with the daemon down; the prolog logged why"
[ -f "$T/spool/$j4" ] || fail "the epilog of $j4 did not spool its deregistration: $(ls "$T/spool" 2>&1)"
grep -q "job $j4: deregistration failed: DELETE /v1/jobs/$j4 at unix:.*curl: (7)" "$T/pfi-slurm.log" ||
  fail "the epilog did not log curl's reason"
grep -qx '000' "$T/pfi-slurm.log" && fail "a stray 000 line in the log"
echo "the epilog of $j4 (daemon down) spooled its deregistration and logged why"

# The restarted daemon reloads $j4 from its database: its 4 GPUs are still taken.  The next
# job's prolog sends the spooled DELETEs first ($j4; $j3, which the daemon never knew: 404), so
# a job wanting all 8 GPUs registers.
serve
[ "$(node_jobs)" = "$j4:4" ] || fail "the restarted daemon did not reload $j4: $(node_jobs)"
j5=$(sbatch --parsable --gres=gpu:8 -o /dev/null --wrap 'sleep 600') || fail "sbatch j5"
i=0
until [ "$(node_jobs 2>/dev/null)" = "$j5:8" ]; do
  i=$((i + 1)); [ $i -lt 60 ] || fail "job $j5 not registered alone on 8 GPUs: $(node_jobs); $(tail -n 3 "$T/pfi-slurm.log")"
  sleep 0.5
done
[ -z "$(ls "$T/spool")" ] || fail "spool not emptied: $(ls "$T/spool")"
grep -q "job $j4: deregistered (spooled" "$T/pfi-slurm.log" || fail "the spooled retry was not logged"
echo "the next prolog deregistered $j4 and $j3 from the spool; $j5 registered on all 8 GPUs"
scancel "$j5"
echo "it_slurm_prolog: ok"
