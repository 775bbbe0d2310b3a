#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# it_cli_names.sh: one name per idea.  pfi sim job and pfi sim demo replace simjob and demo, the
# pfi runs family (list, show, export) replaces show and export, and --db, --log-format,
# --token-file, --node-token-file, --seed replace --from-db, --format (a log's), --token,
# --node-token, --fleet-seed.  A former name still works, prints the same output and one line on
# stderr naming what replaces it, and is left out of --help.  pfi restore refuses --read-only;
# pfi runs export --out writes files as creat(2) would under the umask (was 0600).  One spelling
# per meaning: runs export --out (was --output), log --gpu-count (was --gpus, elsewhere a list),
# sim job --interval a duration; event --cut cut=25% is tested in it_grid.sh.
set -u
PFI=${PFI_BIN:?PFI_BIN not set}
here=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_cli_names.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export PFI_BACKEND=sim PFI_STATE_DIR="$T" PFI_SIM_STATE="$T/sim.state" PFI_DB="$T/pfi.db"
unset PFI_READ_ONLY

# same OLD NEW WANT_NOTICE -- ARGS: `pfi OLD ARGS` and `pfi NEW ARGS` print the same stdout; the
# old one's stderr is exactly the notice, the new one's empty.
same() {
  old=$1 new=$2 notice=$3; shift 4
  # shellcheck disable=SC2086
  "$PFI" $old "$@" >"$T/o1" 2>"$T/e1"; s1=$?
  # shellcheck disable=SC2086
  "$PFI" $new "$@" >"$T/o2" 2>"$T/e2"; s2=$?
  [ $s1 = $s2 ] || fail "pfi $old / $new $*: exit $s1 / $s2 ($(cat "$T/e1" "$T/e2"))"
  cmp -s "$T/o1" "$T/o2" || fail "pfi $old / $new $*: different output"
  [ "$(cat "$T/e1")" = "$notice" ] || fail "pfi $old $*: stderr '$(cat "$T/e1")', expected '$notice'"
  [ ! -s "$T/e2" ] || fail "pfi $new $*: stderr $(cat "$T/e2")"
}
cmdnote() { echo "pfi: 'pfi $1' is deprecated; use 'pfi $2'"; }
optnote() { echo "pfi: --$1 is deprecated; use --$2"; }

# ---- commands ----
same simjob "sim job" "$(cmdnote simjob 'sim job')" -- --truth 700,500 --json
grep -q '"tokens_per_s"' "$T/o2" || fail "pfi sim job --truth: $(cat "$T/o2")"
same demo "sim demo" "$(cmdnote demo 'sim demo')" -- --caps 700:600:100 --hold 2s --no-pace
grep -q '^pfi sim demo: ' "$T/o2" || fail "pfi sim demo: $(head -2 "$T/o2")"
mkdir "$T/plo"
printf 'start_time,window_name,elapsed_time,gpu0_energy\n1,__GlobalPowerLimitOptimizer_300,30,9000\n2,__GlobalPowerLimitOptimizer_250,33,7800\n3,__GlobalPowerLimitOptimizer_200,38,6600\n' \
  >"$T/plo/A40+resnet+gpu0.csv"
"$PFI" import zeus-plo "$T/plo" >/dev/null || fail "import"
same runs "runs list" "" -- --json
grep -q '"runs"' "$T/o2" || fail "pfi runs list: $(cat "$T/o2")"
same show "runs show" "$(cmdnote show 'runs show')" -- 1
same export "runs export" "$(cmdnote export 'runs export')" -- --format json
grep -q 'resnet' "$T/o2" || fail "pfi runs export: $(cat "$T/o2")"
"$PFI" --help >"$T/o1" || fail "pfi --help"
for c in simjob demo show export; do
  if grep -q "^  $c " "$T/o1"; then fail "pfi --help lists the former command $c"; fi
done
"$PFI" help simjob | grep -q '^usage: pfi sim job' || fail "pfi help simjob"
"$PFI" sim --help | grep -q '^  job ' || fail "pfi sim --help has no job"
"$PFI" runs --help | grep -q '^  export ' || fail "pfi runs --help has no export"

# ---- options ----
log="$here/fixtures/logs/hf.log"
same "log $log --format hf" "log $log --log-format hf" "$(optnote format log-format)" -- --json
"$PFI" study --fleet small --from-db x.db >/dev/null 2>"$T/e1" && fail "study --fleet --from-db accepted"
grep -qx "$(optnote from-db db)" "$T/e1" && grep -q 'exclude each other' "$T/e1" ||
  fail "study --from-db: $(cat "$T/e1")"
# The former spellings are left out of help (and so of the manual and completion).
nohelp() { # CMD OPTION
  "$PFI" help $1 >"$T/h" || fail "pfi help $1"
  if grep -q -- "^  --$2 " "$T/h"; then fail "pfi $1 --help still lists --$2"; fi
}
nohelp sweep format; nohelp log format; nohelp study from-db; nohelp index fleet-seed
nohelp cluster token; nohelp cluster node-token; nohelp restore read-only
"$PFI" help cluster | grep -q -- '^  --node-token-file ' || fail "cluster: no --node-token-file"
"$PFI" help sweep | grep -q -- '^  --log-format ' || fail "sweep: no --log-format"
"$PFI" help monitor | grep -q -- '^  --format table|csv|jsonl' || fail "monitor: --format gone"
"$PFI" help --man cluster | grep -q 'node\\-token\\-file' || fail "cluster man page"
if "$PFI" help --man cluster | grep -q 'B \\-\\-token \|node\\-token \\f'; then
  fail "the cluster man page lists a former spelling"; fi

# Every example of every help (each command's and each subcommand's) is written with today's
# names: its options, given back to pfi with --help last (before a program's "--"), are taken
# with no notice and no error.  Comments, pipes and redirections are left out.
examples() { # CMD...: the example lines of `pfi CMD... --help`
  "$PFI" "$@" --help | awk '$0 == "examples:" { on = 1; next } on && /^  / { print; next } { on = 0 }'
}
for c in $(sed -n 's/^PFI_COMMAND.\([a-z]*\),.*/\1/p' "$here/../src/cli/commands.def"); do
  examples "$c"
  for s in $("$PFI" "$c" --help | awk '$0 == "subcommands:" { on = 1; next } on && /^$/ { exit } on { print $1 }'); do
    examples "$c" "$s"
  done
done | sed 's/  *#.*//; s/ *[|>].*//; s/ -- .*//' >"$T/examples"
[ "$(wc -l <"$T/examples")" -ge 40 ] || fail "only $(wc -l <"$T/examples") examples in the help"
while read -r line; do
  set -f; eval "set -- $line"; set +f
  while [ $# -gt 0 ] && [ "$1" != pfi ] && [ "${1#*=}" != "$1" ]; do shift; done # VAR=value
  [ "${1:-}" = pfi ] || fail "an example that is not a pfi command: $line"
  shift
  "$PFI" "$@" --help >/dev/null 2>"$T/e1"; st=$?
  [ $st = 0 ] && [ ! -s "$T/e1" ] || fail "the example '$line' (with --help): exit $st, $(cat "$T/e1")"
done <"$T/examples"

# ---- pfi evaluate: research settings behind --set KEY=VALUE, documented in its help ----
"$PFI" evaluate --fleet small --cuts 0.3 --save-db "$T/fleet.db" >/dev/null || fail "evaluate --save-db"
ev() { "$PFI" evaluate --db "$T/fleet.db" --cuts 0.3,0.4 --json "$@"; }
ev --set probe-k=3 --set draw-weight=1 --set tier-gpus=0 --set group-out=1 >"$T/o2" 2>"$T/e2" ||
  fail "evaluate --set: $(cat "$T/e2")"
[ ! -s "$T/e2" ] || fail "evaluate --set: stderr $(cat "$T/e2")"
ev --probe-k 3 --draw-weight 1 --tier-gpus 0 --group-out >"$T/o1" 2>"$T/e1" || fail "evaluate old flags"
cmp -s "$T/o1" "$T/o2" || fail "evaluate: --set and the former flags differ"
[ "$(cat "$T/e1")" = "$(optnote probe-k 'set probe-k=N'; optnote draw-weight 'set draw-weight=W'
  optnote tier-gpus 'set tier-gpus=0|1'; optnote group-out 'set group-out=1')" ] ||
  fail "evaluate former flags: $(cat "$T/e1")"
ev >"$T/o3" || fail "evaluate"
if cmp -s "$T/o2" "$T/o3"; then fail "evaluate: --set changed nothing"; fi
ev --set amplitude=1 >"$T/o4" || fail "evaluate --set amplitude=1"
if cmp -s "$T/o3" "$T/o4"; then fail "evaluate: --set amplitude=1 changed nothing"; fi
ev --set amplitude=0 >"$T/o5" || fail "evaluate --set amplitude=0"
cmp -s "$T/o3" "$T/o5" || fail "evaluate: amplitude 0 is not the default walk"
ev --set near-votes=1 >"$T/o6" || fail "evaluate --set near-votes=1"
if cmp -s "$T/o3" "$T/o6"; then fail "evaluate: --set near-votes=1 changed nothing"; fi
ev --set near-votes=0 >"$T/o7" || fail "evaluate --set near-votes=0"
cmp -s "$T/o3" "$T/o7" || fail "evaluate: near-votes 0 is not the default walk"
ev --set time-walk=1 >"$T/o8" || fail "evaluate --set time-walk=1"
if cmp -s "$T/o3" "$T/o8"; then fail "evaluate: --set time-walk=1 changed nothing"; fi
grep -q 'extra time' "$T/o8" || fail "evaluate --set time-walk=1: the note does not say so"
ev --set time-walk=0 >"$T/o9" || fail "evaluate --set time-walk=0"
cmp -s "$T/o3" "$T/o9" || fail "evaluate: time-walk 0 is not the default walk"
ev --set p0-weight=1 >"$T/o10" || fail "evaluate --set p0-weight=1"
if cmp -s "$T/o3" "$T/o10"; then fail "evaluate: --set p0-weight=1 changed nothing"; fi
grep -q 'baseline draw share weight 1' "$T/o10" || fail "evaluate --set p0-weight=1: the note does not say so"
ev --set p0-weight=0 >"$T/o11" || fail "evaluate --set p0-weight=0"
cmp -s "$T/o3" "$T/o11" || fail "evaluate: p0-weight 0 is not the default"
ev --set hedge=1 >"$T/o12" || fail "evaluate --set hedge=1"
if cmp -s "$T/o3" "$T/o12"; then fail "evaluate: --set hedge=1 changed nothing"; fi
grep -q 'hedged: the mean of six readings' "$T/o12" || fail "evaluate --set hedge=1: the note does not say so"
ev --set hedge=1 --set amplitude=1 --set time-walk=1 >"$T/o13" || fail "evaluate --set hedge=1 amplitude time-walk"
sed 's/, their shape rescaled[^,"]*//; s/, their steps in extra time//' "$T/o13" | cmp -s "$T/o12" - ||
  fail "evaluate: with hedge=1 the amplitude and time-walk still count"
ev --set hedge=0 >"$T/o14" || fail "evaluate --set hedge=0"
cmp -s "$T/o3" "$T/o14" || fail "evaluate: hedge 0 is not the default"
ev --set hedge=2 >"$T/o15" || fail "evaluate --set hedge=2"
if cmp -s "$T/o12" "$T/o15" || cmp -s "$T/o3" "$T/o15"; then fail "evaluate: --set hedge=2 is the hedge or the default"; fi
grep -q 'stacked: six readings of their steps weighted' "$T/o15" || fail "evaluate --set hedge=2: the note does not say so"
for bad in bogus=1 probe-k probe-k=x probe-k=2.5 group-out=2 committee=-1 draw-weight=nan \
  amplitude=1.5 amplitude=-0.5 near-votes=2 near-votes=0.5 time-walk=2 time-walk=-1 time-walk=0.5 \
  p0-weight=-1 p0-weight=x hedge=3 hedge=-1 hedge=0.5 nest-per-cut=2 nest-per-cut=-1 nest-per-cut=0.5; do
  ev --set "$bad" >/dev/null 2>"$T/e1"; st=$?
  [ $st = 2 ] || fail "evaluate --set $bad: exit $st ($(cat "$T/e1"))"
done
ev --set bogus=1 2>&1 >/dev/null | grep -q 'KEY one of probe-k, draw-weight' || fail "evaluate --set: keys not named"
"$PFI" help --man evaluate >"$T/man" || fail "evaluate man page"
for k in probe-k draw-weight amplitude near-votes time-walk p0-weight hedge tier-gpus committee probe-cv-top \
  group-out cv-seeds nest-per-cut; do
  "$PFI" help evaluate | grep -q "^  $k=" || fail "evaluate --help does not document $k"
  grep -q "^  $(echo "$k" | sed 's/-/\\\\-/g')=" "$T/man" || fail "the evaluate manual does not document $k"
  nohelp evaluate "$k"
done

# ---- one spelling per meaning: --out for an output file, --gpus for a list of GPUs ----
same "runs export --format json --output" "runs export --format json --out" "$(optnote output out)" -- "$T/x.json"
grep -q 'resnet' "$T/x.json" || fail "pfi runs export --out: $(cat "$T/x.json")"
nohelp "runs export" output
"$PFI" help runs export | grep -q -- '^  --out FILE .*--output' || fail "runs export --help: --out and its former name"
tt="$here/fixtures/logs/torchtitan.log" # tokens/s per GPU
same "log $tt --gpus 8" "log $tt --gpu-count 8" "$(optnote gpus gpu-count)" -- --json --quiet
grep -q '"unit": "tokens/s",' "$T/o2" || fail "pfi log --gpu-count 8: $(head -5 "$T/o2")"
"$PFI" log "$tt" --json --quiet >"$T/o3" || fail "pfi log"
if cmp -s "$T/o2" "$T/o3"; then fail "pfi log: --gpu-count changed nothing"; fi
nohelp log gpus
# pfi sim job --interval is a duration as everywhere else; a bare number is still seconds.
for iv in 500ms 0.5 0.5s; do
  PFI_SIM_STATE="$T/iv-$iv.sim" "$PFI" sim job --duration 2s --interval "$iv" >"$T/o1" || fail "sim job --interval $iv"
  [ "$(wc -l <"$T/o1")" = 5 ] || fail "sim job --interval $iv: $(cat "$T/o1")"
done
"$PFI" sim job --interval 5x >/dev/null 2>"$T/e1"; st=$?
[ $st = 2 ] && grep -q "bad duration unit in '5x'" "$T/e1" || fail "sim job --interval 5x: exit $st $(cat "$T/e1")"

# ---- pfi restore --read-only: refused, nothing done ----
"$PFI" restore --read-only >"$T/o1" 2>"$T/e1"; st=$?
[ $st = 2 ] && grep -q 'read-only is not an option of restore' "$T/e1" ||
  fail "restore --read-only: exit $st $(cat "$T/e1")"

# ---- pfi runs export --out: the usual mode, from the umask ----
for m in 022:644 077:600 002:664; do
  (umask "${m%:*}" && "$PFI" runs export --out "$T/x.csv") || fail "export --out"
  got=$(stat -c %a "$T/x.csv")
  [ "$got" = "${m#*:}" ] || fail "export --out under umask ${m%:*}: mode $got, expected ${m#*:}"
  rm -f "$T/x.csv"
done

# One slowdown grammar: 0.1 and 10% are the same SLA in ctl, study and allocate; a bad one is a
# usage error (exit 2) naming the slowdown, before anything is asked of a daemon.
"$PFI" ctl --url http://127.0.0.1:1 job add j1 --gpus 0 --sla 10% >"$T/o" 2>"$T/e"; st=$?
[ $st = 1 ] && grep -q "is pfi serve running" "$T/e" || fail "ctl --sla 10%: exit $st: $(cat "$T/e")"
for bad in 150% 1 -5% 10%x nan; do
  "$PFI" ctl --url http://127.0.0.1:1 job add j1 --gpus 0 --sla "$bad" >"$T/o" 2>"$T/e"; st=$?
  [ $st = 2 ] && grep -q "slowdown '$bad'" "$T/e" || fail "ctl --sla $bad: exit $st: $(cat "$T/e")"
  "$PFI" study --fleet small --sla "$bad" --out "$T/st" >"$T/o" 2>"$T/e"; st=$?
  [ $st = 2 ] && grep -q "slowdown '$bad'" "$T/e" || fail "study --sla $bad: exit $st: $(cat "$T/e")"
  [ ! -e "$T/st" ] || fail "study --sla $bad wrote $T/st"
done
JOBS="$here/../docs/examples/jobs.json"
"$PFI" allocate --jobs "$JOBS" --budget 90% --sla 10% --json >"$T/a1" || fail "allocate --sla 10%"
"$PFI" allocate --jobs "$JOBS" --budget 90% --sla 0.1 --json >"$T/a2" || fail "allocate --sla 0.1"
cmp -s "$T/a1" "$T/a2" || fail "allocate: --sla 10% and --sla 0.1 differ"
"$PFI" allocate --jobs "$JOBS" --budget 90% --sla 150% >"$T/o" 2>"$T/e"; st=$?
[ $st != 0 ] && grep -q "slowdown '150%'" "$T/e" || fail "allocate --sla 150%: exit $st: $(cat "$T/e")"
echo "it_cli_names: ok"
