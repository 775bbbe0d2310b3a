#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Integration test of conventions every command shares: exit statuses (0 ok, 1 runtime
# failure, 2 bad input: an unknown option, a malformed value or a value out of range).
set -u
PFI=${PFI_BIN:?PFI_BIN not set}
T=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_cli.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
bad=0
# Runs pfi with the given arguments (in $T, its own simulator state, on the simulator: the
# default backend is NVML, it_nvml checks it) and checks the status.
want() {
  code=$1; shift
  (cd "$T" && PFI_BACKEND=sim PFI_STATE_DIR="$T" PFI_SIM_STATE="$T/sim.state" PFI_DB="$T/pfi.db" \
     "$PFI" "$@" > "$T/out" 2> "$T/err")
  got=$?
  [ "$got" -eq "$code" ] ||
    { echo "FAIL: pfi $*: exit $got, expected $code ($(head -c 300 "$T/err"))"; bad=1; }
}
JOBS="$T/jobs.json"
cat > "$JOBS" <<'EOF'
{"jobs": [{"id": "a", "gpus": 8, "predicted_curve": {"cap_w": [200, 450, 700],
                                           "tput": [50000, 90000, 100000]}}]}
EOF
want 0 allocate --budget 70% --jobs "$JOBS"
# Tables are read digit by digit: fixed notation, never 9.5e+04 (JSON keeps full precision).
sci() { if grep -E '[0-9]e[+-][0-9]' "$T/out"; then fail "$1 prints scientific notation"; fi; }
sci "pfi allocate"
grep -q '^a  *8 ' "$T/out" || fail "pfi allocate table: $(cat "$T/out")"
want 0 evaluate --fleet small --cuts 0.3 --save-db "$T/fleet.db"
sci "pfi evaluate"
grep -Eq '30% +pfi +[0-9]{7} ' "$T/out" || fail "pfi evaluate total: $(cat "$T/out")"
# What a PFI30 costs: one probe and 2-6 level parts of every simulated sweep, scored.
want 0 evaluate --fleet small --cost
sci "pfi evaluate --cost"
grep -Eq '^4 levels +12 +0 +0\.[0-9]{4} +0\.[0-9]{4} +[0-9.]+% ' "$T/out" || fail "pfi evaluate --cost: $(cat "$T/out")"
# A --source typo is refused with the names pfi knows (was read as "no runs").
want 2 evaluate --fleet small --source sim,bogus --cuts 0.3
grep -q "unknown source 'bogus' (sweep, sim, " "$T/err" || fail "evaluate --source: $(cat "$T/err")"
want 0 runs --db "$T/fleet.db"
sci "pfi runs"
want 0 runs show 1 --db "$T/fleet.db"
sci "pfi show"
want 0 index --db "$T/fleet.db" --boot 0
sci "pfi index"
# Run names are never cut silently: the column widens to the longest (51 characters here)...
grep -qF "h200/main/000 qwen2.5-1.5b pretrain 8gpu dp8tp1pp1 " "$T/out" ||
  fail "pfi index cut a run name: $(head -3 "$T/out")"
# ...up to 64; a longer one shows both ends around a visible "...".
long=transformer-with-a-very-long-workload-name-for-the-table-test
mkdir "$T/plo"
printf 'start_time,window_name,elapsed_time,gpu0_energy\n1,__GlobalPowerLimitOptimizer_300,30,9000\n2,__GlobalPowerLimitOptimizer_250,33,7800\n3,__GlobalPowerLimitOptimizer_200,38,6600\n4,__GlobalPowerLimitOptimizer_150,46,5600\n' \
  > "$T/plo/A40+$long+gpu0.csv"
want 0 import zeus-plo "$T/plo" --db "$T/long.db"
want 0 index --db "$T/long.db" --boot 0
grep -Eq '^zeus-plo/A40/transformer-with-\.\.\..*table-test x1 +A40 ' "$T/out" ||
  fail "pfi index: a long name is not ellipsized visibly: $(cat "$T/out")"

# Malformed and out of range are the same kind of mistake: both 2.
want 2 allocate --budget abc --jobs "$JOBS"
want 2 allocate --budget 150% --jobs "$JOBS"
want 2 allocate --budget 0W --jobs "$JOBS"
want 2 allocate --budget 70% --sla nosuchjob=5% --jobs "$JOBS"
want 2 sim curve --caps x
want 2 sim curve --caps 2000:100:50
want 2 sim run --cap 5000 --duration 1s
want 2 monitor --gpus 12 --count 1
want 2 sweep --levels abc -- true
want 2 sweep --levels 150% -- true
want 2 sweep --levels 10% -- true
want 2 sweep --caps 2000:100:50 -- true
want 2 sweep --gpus 9 -- true
# Numbers the sweep used to take silently (a negative CI bound, sequence length, speed).
want 2 sweep --rel-ci -1 -- true
want 2 sweep --rel-ci 0 -- true
want 2 sweep --seq-len -4 -- true
want 2 sweep --tokens-per-step 0 -- true
want 2 sweep --batch-size -1 -- true
want 2 sweep --speed -1 -- true
# 0 s would end every level, or the sweep, before the job printed a line: refused, not run.
want 2 sweep --timeout 0 -- true
want 2 sweep --max-dwell 0s -- true
want 2 sweep --min-window 0ms -- true
# Empty paths and names: refused before the job runs (--db "" was SQLite's private temporary
# file: the run was stored there and lost).
for o in db journal name log; do
  want 2 sweep "--$o" "" -- true
  grep -q "^pfi sweep: --$o is empty" "$T/err" || fail "sweep --$o '': $(cat "$T/err")"
done
# --speed is simulated time's: named when out of range (not as the variable it is passed on
# as), refused on a backend without simulated time rather than ignored.
want 2 sweep --speed 1e9 -- true
grep -q "^pfi sweep: --speed 1e+09 is not a speed-up" "$T/err" || fail "sweep --speed 1e9: $(cat "$T/err")"
want 2 sweep --backend nvml --speed 5 -- true
grep -q "speed goes with --backend sim" "$T/err" || fail "sweep --backend nvml --speed: $(cat "$T/err")"
# A real program under a sped-up simulator: its lines timed on the simulator's clock read its
# tokens/s 20 times too small (review, 2026-12-06): refused, nothing run.
want 2 sweep --backend sim --speed 20 -- sh -c "echo ran >'$T/ran'"
grep -q "^pfi sweep: --speed 20 with a real program" "$T/err" && [ ! -e "$T/ran" ] ||
    fail "sweep --backend sim --speed 20 with a real program: $(cat "$T/err")"
# ... but pfi's own simulated job is taken under another name of the same binary (a symlink).
ln -s "$PFI" "$T/pfi-dev"
"$PFI" sweep --backend sim --speed 40 --levels 100% --db "$T/speed.db" --journal "$T/speed.journal" \
    --quiet -- "$T/pfi-dev" sim job --log-format megatron >/dev/null 2>"$T/err" ||
    fail "sweep --speed 40 of pfi sim job through a symlink pfi-dev: $(tail -3 "$T/err")"
# --nvml-lib names the library the NVML backend loads: with the simulator it was dropped
# silently; refused, nothing read or changed (PFI_BACKEND=sim here, as --backend sim).
want 2 gpus --nvml-lib /nonexistent/libnvidia-ml.so.1
grep -q "nvml-lib goes with --backend nvml or auto (the backend is sim)" "$T/err" ||
  fail "gpus --nvml-lib on sim: $(cat "$T/err")"
want 2 sweep --backend sim --nvml-lib /nonexistent/libnvidia-ml.so.1 -- true
grep -q "nvml-lib goes with" "$T/err" || fail "sweep --nvml-lib on sim: $(cat "$T/err")"
# --order-seed seeds the shuffle of --order random and nothing else (--seed elsewhere is the
# seed of the simulator's draws): refused where it would do nothing, with what it is for; the
# former spelling --seed still taken with --order random, saying it is deprecated.
want 2 sweep --order-seed 3 -- true
grep -q "order-seed goes with --order random" "$T/err" || fail "sweep --order-seed alone: $(cat "$T/err")"
want 2 sweep --seed 3 -- true
grep -q "order-seed goes with --order random" "$T/err" || fail "sweep --seed alone: $(cat "$T/err")"
want 2 sweep --order random --order-seed -18446744073709551615 -- true  # strtoull wraps it to 1
want 2 sweep --order random --order-seed 4294967296 -- true
want 2 sweep --order random --order-seed 3x -- true
want 1 sweep --no-log --order random --seed 3 --timeout 1s -- true
grep -q "seed is deprecated; use --order-seed" "$T/err" || fail "sweep --seed: $(cat "$T/err")"
want 2 bench pergpu --variation -0.5
# pfi bench allocate named the bad argument (it said "bad arguments (see --help)" for all)
while IFS='|' read -r args msg; do
  # shellcheck disable=SC2086
  want 2 bench allocate $args
  grep -qF "pfi bench allocate: $msg" "$T/err" || { echo "FAIL: bench allocate $args: $(cat "$T/err")"; bad=1; }
done <<'LIST'
--cut 1|--cut 1: a cut is a fraction of the baseline draw in (0, 1)
--reps 0|--reps 0: give 1-1000 timed allocations
--policy foo|--policy foo: not a policy (equal, pfi, oracle, proportional-to-pfi)
--gpus-per-job 5-1|--gpus-per-job 5-1: give N or LO-HI with 1 <= LO <= HI
--jobs 0|--jobs 0: give 1 or more
extra|unexpected argument 'extra'
LIST
want 2 bench pergpu --step 0.5
grep -qF "pfi bench pergpu: --step 0.5: the cap grid is 1 W or more" "$T/err" || { echo "FAIL: bench pergpu --step 0.5: $(cat "$T/err")"; bad=1; }
# Tags that are numbers are range-checked (were read with atoi: 99999999999 wrapped).
want 2 sweep --tag dp=99999999999 -- true
grep -q "dp: expected an integer" "$T/err" || fail "sweep --tag dp: $(cat "$T/err")"
want 2 sweep --tag params_b=lots -- true
# allocate: a weight of 0 or 1e308 and a cap grid far above the caps are refused with a message.
for w in 0 1e308; do
  printf '{"jobs":[{"id":"w","gpus":1,"weight":%s,"curve":{"cap_w":[300,700],"tput":[1,2]}}]}' \
    "$w" > "$T/w.json"
  want 2 allocate --budget 70% --policy oracle --jobs "$T/w.json"
  grep -q 'job w: "weight"' "$T/err" || fail "allocate weight $w: $(cat "$T/err")"
done
want 2 allocate --budget 70% --jobs "$JOBS" --step 1e308
grep -q "grid" "$T/err" || fail "allocate --step 1e308: $(cat "$T/err")"

# --seed is the fleet's seed in every command that builds a fleet (index too); --fleet-seed is
# its alias, the bootstrap's own is --boot-seed.
want 0 index --fleet small --seed 2 --boot 0 --json
cp "$T/out" "$T/seed2"
want 0 index --fleet small --fleet-seed 2 --boot 0 --json
cmp -s "$T/out" "$T/seed2" || fail "pfi index: --seed 2 and --fleet-seed 2 differ"
want 0 index --fleet small --boot 0 --json
cmp -s "$T/out" "$T/seed2" && fail "pfi index: --seed 2 builds the same fleet as seed 1"
want 0 index --fleet small --boot 50 --boot-seed 3 --json
want 2 index --fleet small --seed 2 --fleet-seed 3
want 2 index --db "$T/fleet.db" --seed 2
grep -q "boot-seed" "$T/err" || fail "pfi index --seed without --fleet: $(cat "$T/err")"
# --seed is a fleet's seed wherever a fleet is drawn: refused when negative (it was cast to
# 2^64-1, and pfi sim fleet printed "seed": -1) and where the runs come from a store instead
# (it changed nothing, in silence).
for c in "sim fleet --fleet small" "evaluate --fleet small" "index --fleet small" \
         "model eval --fleet small" "model train --fleet small" "study --fleet small"; do
  # shellcheck disable=SC2086
  want 2 $c --seed -1
  grep -q "seed must be a whole number >= 0, got -1" "$T/err" || fail "$c --seed -1: $(cat "$T/err")"
done
for c in evaluate "model eval" "model train" study; do
  # shellcheck disable=SC2086
  want 2 $c --db "$T/none.db" --seed 3
  grep -q "seed is the seed of a simulated fleet" "$T/err" || fail "$c --db --seed: $(cat "$T/err")"
done
want 0 sim fleet --fleet small --seed 3 --json
grep -q '"seed": 3,' "$T/out" || fail "sim fleet --seed 3: $(head -c 200 "$T/out")"

# A usage error names the command as typed: every subcommand of a family (pfi model train, not
# "pfi train"; pfi bench allocate, not "pfi allocate"), and a former name the command of today.
here=$(cd "$(dirname "$0")" && pwd)
for c in $(sed -n 's/^PFI_COMMAND.\([a-z]*\),.*/\1/p' "$here/../src/cli/commands.def"); do
  for s in $("$PFI" "$c" --help | awk '$0 == "subcommands:" { on = 1; next } on && /^$/ { exit } on { print $1 }'); do
    want 2 "$c" "$s" --bogus
    [ "$(cat "$T/err")" = "pfi $c $s: unknown option '--bogus' (see --help)" ] ||
      { echo "FAIL: pfi $c $s --bogus: $(cat "$T/err")"; bad=1; }
  done
done
for old in "show runs show" "export runs export" "simjob sim job" "demo sim demo"; do
  set -- $old
  want 2 "$1" --bogus
  [ "$(tail -n 1 "$T/err")" = "pfi $2 $3: unknown option '--bogus' (see --help)" ] ||
    { echo "FAIL: pfi $1 --bogus: $(cat "$T/err")"; bad=1; }
done

# A file named on the command line that is absent or a directory cannot be read: a runtime
# failure (1) naming it, from every command that reads one; a directory was read as an empty
# file ("'[' or '{' expected near end of file", exit 2, from allocate and predict) or failed
# with a message that did not say why ("reading DIR failed", "unable to open database file").
mkdir "$T/adir"
for f in "$T/nosuch" "$T/adir"; do
  for c in "allocate --budget 70% --jobs" "cluster budget 70% --topology" "serve --config" "log" \
           "sim curve --sim" "runs --db" "index --db" "predict --live --model" "serve --model" \
           "ctl --url http://127.0.0.1:1 budget set 70% --token-file"; do
    # shellcheck disable=SC2086
    want 1 $c "$f"
    grep -qF "$f" "$T/err" || { echo "FAIL: pfi $c $f: the message does not name it: $(cat "$T/err")"; bad=1; }
    # and says why, as every reader does ("cannot read DIR: Is a directory")
    case $f in */adir) grep -qE "cannot read (token file )?$f: Is a directory" "$T/err" ||
      { echo "FAIL: pfi $c $f: the message does not say it is a directory: $(cat "$T/err")"; bad=1; } ;; esac
  done
done
want 1 restore --journal "$T/adir"
grep -qF "cannot read $T/adir: Is a directory" "$T/err" || { echo "FAIL: restore --journal DIR: $(cat "$T/err")"; bad=1; }

# pfi sweep: options that act only under another, or that another overrides, and values out of
# their range (docs/sweep.md, "What the options take") were taken in silence: a fixed --dwell
# ignored --max-dwell, --rel-ci 5 called every level steady at once, --settle 3m left the
# default 120 s --max-dwell nothing to measure (exit 1 once the limits had moved).  Each is now
# refused: exit 2 with a message naming the options, before the job ran (it would leave
# $T/ran), before any journal or store was written, the limits as they were.
printf '#!/bin/sh\n: > "%s/ran"\n' "$T" > "$T/job.sh"
chmod +x "$T/job.sh"
: > "$T/quiet.log"
limits() { (cd "$T" && PFI_SIM_STATE="$T/sim.state" "$PFI" gpus --backend sim --json) | grep '"limit_w"'; }
refused() { # MESSAGE sweep-args...
  msg=$1; shift
  before=$(limits)
  want 2 sweep --journal "$T/refused.journal" --db "$T/refused.db" "$@"
  grep -qF -- "$msg" "$T/err" || { echo "FAIL: pfi sweep $*: no '$msg' in: $(cat "$T/err")"; bad=1; }
  for f in ran refused.journal refused.db sim.state.journal; do
    [ ! -e "$T/$f" ] || { echo "FAIL: pfi sweep $*: $f was written"; bad=1; rm -f "$T/$f"; }
  done
  [ "$(limits)" = "$before" ] || { echo "FAIL: pfi sweep $*: the limits changed"; bad=1; }
}
J="$T/job.sh"
RE='tokens=([0-9]+)'
refused "--max-dwell and --dwell 10s cannot be used together: only --dwell auto" --dwell 10s --max-dwell 30s -- "$J"
refused "--min-window and --dwell 10s cannot be used together" --dwell 10s --min-window 3s -- "$J"
refused "--rel-ci and --dwell 10s cannot be used together" --dwell 10s --rel-ci 0.02 -- "$J"
refused "--no-log and --log job.log cannot be used together" --no-log --log job.log -- "$J"
refused "--no-log and --log quiet.log cannot be used together" --attach --log quiet.log --no-log --timeout 1s
refused "--restart and --attach cannot be used together" --restart --attach --log quiet.log --timeout 1s
refused "--levels and --caps cannot be used together" --levels 100% --caps 700:300:100 -- "$J"
refused "--throughput-regex and --log-format megatron cannot be used together" \
  --log-format megatron --throughput-regex "$RE" --unit tokens -- "$J"
refused "--seq-len and --unit tokens/s cannot be used together" --throughput-regex "$RE" --unit tokens/s --seq-len 4096 -- "$J"
refused "--tokens-per-step and --unit tokens cannot be used together" --throughput-regex "$RE" --unit tokens --tokens-per-step 100 -- "$J"
refused "--batch-size and --unit samples/s cannot be used together" --throughput-regex "$RE" --unit samples/s --batch-size 8 -- "$J"
refused "--batch-size and --tokens-per-step cannot be used together" --tokens-per-step 65536 --batch-size 16 -- "$J"
refused "--rel-ci 5 is out of range: a CI half-width over the mean in (0, 0.5]" --rel-ci 5 -- "$J"
refused "--seq-len 0.5 is out of range: tokens per sample in [1, 2147483647]" --seq-len 0.5 -- "$J"
refused "--seq-len 1.5 is not a whole number" --seq-len 1.5 -- "$J"
refused "--batch-size 2.5 is not a whole number" --batch-size 2.5 --seq-len 2048 -- "$J"
refused "level 0.5% is" --levels 0.5,100% -- "$J"
refused "--batch-size 3e+09 is out of range: samples per step in [1, 2147483647]" --batch-size 3e9 -- "$J"
refused "--tokens-per-step 1e+16 is out of range: tokens per step in [1, 9007199254740992]" --tokens-per-step 1e16 -- "$J"
refused "--dwell 25h is longer than 24 h" --dwell 25h -- "$J"
refused "--timeout 25h is longer than 24 h" --timeout 25h -- "$J"
refused "--settle 2h plus --dwell 23h is longer than 24 h" --settle 2h --dwell 23h -- "$J"
refused "--max-dwell 7s is shorter than --settle 3s (the default) plus --min-window 5s (the default)" --max-dwell 7s -- "$J"
refused "--max-dwell 120s (the default) is shorter than --settle 3m plus --min-window 5s (the default)" --settle 3m -- "$J"
refused "--max-dwell 120s (the default) is shorter than --settle 3s (the default) plus --min-window 2m" --min-window 2m -- "$J"
# At the bounds and in the combinations that make sense, still taken: the job runs (and exits at
# once, a runtime failure).
for a in "--rel-ci 0.5" "--max-dwell 8s" "--settle 0" "--dwell auto --max-dwell 30s --rel-ci 0.02" \
         "--dwell 10s --settle 1s" "--seq-len 1 --batch-size 1" "--tokens-per-step 9007199254740992" \
         "--throughput-regex $RE --unit samples/s --seq-len 4096" \
         "--throughput-regex $RE --unit it/s --seq-len 4096 --batch-size 8" \
         "--log-format regex --throughput-regex $RE --unit tokens"; do
  # shellcheck disable=SC2086
  want 1 sweep --no-log --timeout 1s $a -- "$J"
  [ -e "$T/ran" ] || { echo "FAIL: pfi sweep $a: refused ($(cat "$T/err"))"; bad=1; }
  rm -f "$T/ran"
done

# A runtime failure stays 1: the input is fine, the world is not.
want 1 runs show 1 --db "$T/none.db"
want 1 sweep --caps 700:600:100 --timeout 1s -- false

# An empty value is bad input, said by the option's name, from every option of every command
# and subcommand that takes a value, before anything runs: --db "" was the default store to
# pfi runs ("no database at 'pfi.db'"), "no store at :" to pfi index, a file named "" to others.
# (A number's option says so as it does of any other text: "expects a number, got ''".)
n_empty=0
for c in $(sed -n 's/^PFI_COMMAND.\([a-z]*\),.*/\1/p' "$here/../src/cli/commands.def"); do
  for w in "$c" $("$PFI" "$c" --help | awk -v c="$c" '$0 == "subcommands:" { on = 1; next }
                                                   on && /^$/ { exit } on { print c "/" $1 }'); do
    # shellcheck disable=SC2046
    set -- $(echo "$w" | tr / ' ')
    # "  --name META   help": the options that take a value (a flag has no META).
    for o in $("$PFI" "$@" --help | sed -n 's/^  \(--[a-z0-9-]*\) [^ ].*/\1/p'); do
      (cd "$T" && PFI_BACKEND=sim PFI_SIM_STATE="$T/sim.state" PFI_DB="$T/pfi.db" \
         timeout 20 "$PFI" "$@" "$o" "" > "$T/out" 2> "$T/err")
      got=$?
      n_empty=$((n_empty + 1))
      [ $got -eq 2 ] && [ ! -s "$T/out" ] &&
        grep -qxE "pfi $*: ($o is empty|$o expects (a number|an integer), got '')" "$T/err" ||
        { echo "FAIL: pfi $* $o '': exit $got, expected 2 and '$o is empty' ($(head -c 300 "$T/err"))"; bad=1; }
    done
  done
done
[ $n_empty -ge 100 ] || { echo "FAIL: only $n_empty options take a value?"; bad=1; }
# --name=VALUE is the same option: empty, refused the same.
want 2 runs --db=
grep -qx "pfi runs: --db is empty" "$T/err" || { echo "FAIL: pfi runs --db=: $(cat "$T/err")"; bad=1; }
# An empty PFI_DB is not a --db: as unset, the default (pfi.db, absent here: exit 1, named).
mkdir "$T/nodb"
(cd "$T/nodb" && PFI_DB= "$PFI" runs > "$T/out" 2> "$T/err")
[ $? -eq 1 ] && grep -q "no database at 'pfi.db'" "$T/err" ||
  { echo "FAIL: PFI_DB= pfi runs: $(cat "$T/err")"; bad=1; }

# pfi help COMMAND ACTION, as git help and docker help read it, for the commands that take an
# action (not a subcommand of their own): what pfi COMMAND ACTION --help prints; another word
# is refused, naming the actions, and each action's list is the one the command itself names
# (was: "unexpected argument 'serve' after 'cluster'").
for ca in "cluster serve" "event add" "ctl job"; do
  # shellcheck disable=SC2086
  want 0 help $ca
  grep -q "^usage: pfi ${ca% *} " "$T/out" || { echo "FAIL: pfi help $ca: $(cat "$T/out")"; bad=1; }
done
for c in cluster ctl event; do
  want 2 help "$c" no-such-action
  [ ! -s "$T/out" ] || { echo "FAIL: pfi help $c no-such-action printed help"; bad=1; }
  acts=$(sed -n "s/^pfi help: pfi $c has no action 'no-such-action' (its actions: \(.*\))$/\1/p" "$T/err")
  [ -n "$acts" ] || { echo "FAIL: pfi help $c no-such-action: $(cat "$T/err")"; bad=1; continue; }
  want 2 "$c" no-such-action
  grep -qF "'no-such-action' ($acts" "$T/err" ||
    { echo "FAIL: pfi $c names other actions than pfi help $c ($acts): $(cat "$T/err")"; bad=1; }
  for a in $(echo "$acts" | tr -d ,); do
    want 0 help "$c" "$a"
    mv "$T/out" "$T/help.out"
    want 0 "$c" "$a" --help
    cmp -s "$T/help.out" "$T/out" && grep -q "^usage: pfi $c " "$T/out" ||
      { echo "FAIL: pfi help $c $a differs from pfi $c $a --help"; bad=1; }
    want 2 help "$c" "$a" extra
    grep -qxF "pfi help: unexpected argument 'extra' after '$c $a' (ask: pfi help $c $a)" "$T/err" ||
      { echo "FAIL: pfi help $c $a extra: $(cat "$T/err")"; bad=1; }
  done
done
# A subcommand that is not one is refused naming them too.
want 2 help sim no-such-sub
grep -qF "pfi help: pfi sim has no subcommand 'no-such-sub' (its subcommands: run, curve," "$T/err" ||
  { echo "FAIL: pfi help sim no-such-sub: $(cat "$T/err")"; bad=1; }

# Options before a family's subcommand: said in order, nothing run (it was "unexpected argument
# 'show'" from pfi runs and "unknown subcommand '--fleet'" from pfi model).
want 2 runs --db "$T/pfi.db" show 3
grep -qxF "pfi runs: the subcommand comes first: pfi runs show --db $T/pfi.db 3" "$T/err" ||
  { echo "FAIL: pfi runs --db F show 3: $(cat "$T/err")"; bad=1; }
want 2 model --fleet small eval
grep -qxF "pfi model: the subcommand comes first: pfi model eval --fleet small" "$T/err" ||
  { echo "FAIL: pfi model --fleet small eval: $(cat "$T/err")"; bad=1; }
want 2 sim --sim h200x8-dense curve
grep -qxF "pfi sim: the subcommand comes first: pfi sim curve --sim h200x8-dense" "$T/err" ||
  { echo "FAIL: pfi sim --sim P curve: $(cat "$T/err")"; bad=1; }
want 2 model --fleet small
grep -qF "pfi model: unknown subcommand '--fleet'" "$T/err" || { echo "FAIL: pfi model --fleet small: $(cat "$T/err")"; bad=1; }

# --public with no $PFI_DATA_DIR, from a folder where the relative default names nothing: the
# message says where it looked and what to set (it said only "cannot read ../shared/data/...").
mkdir -p "$T/elsewhere"
(cd "$T/elsewhere" && env -u PFI_DATA_DIR "$PFI" index --public >/dev/null 2>"$T/err")
[ $? -eq 1 ] || { echo "FAIL: pfi index --public without its data: exit not 1"; bad=1; }
grep -qF "no \$PFI_DATA_DIR: ../shared/data is read from the working folder $(cd "$T/elsewhere" && pwd -P); set PFI_DATA_DIR" "$T/err" ||
  { echo "FAIL: pfi index --public without its data: $(cat "$T/err")"; bad=1; }

# Help on a terminal of 80 columns ($COLUMNS stands in for one): every line but the examples'
# (command lines, kept whole) within 79 columns, unless one word alone fills it; the same words
# as the unwrapped help, which a pipe gets (one line per option, for grep and the completion).
for w in "" $(sed -n 's/^PFI_COMMAND.\([a-z]*\),.*/\1/p' "$here/../src/cli/commands.def"); do
  for s in "" $([ -n "$w" ] && "$PFI" "$w" --help | awk '$0 == "subcommands:" { on = 1; next }
                                                       on && /^$/ { exit } on && /^  [a-z]/ { print $1 }'); do
    # shellcheck disable=SC2086
    COLUMNS=80 "$PFI" $w $s --help > "$T/wrapped" 2>&1 || { echo "FAIL: pfi $w $s --help at 80 columns"; bad=1; }
    # shellcheck disable=SC2086
    env -u COLUMNS "$PFI" $w $s --help > "$T/flat" 2>&1
    awk '/^examples:$/ { ex = 1 } !ex && length($0) > 79 && NF > 1 { print; n++ } END { exit n > 0 }' \
      "$T/wrapped" > "$T/long" || { echo "FAIL: pfi $w $s --help at 80 columns: $(head -n 2 "$T/long")"; bad=1; }
    [ "$(tr -s ' \n' '  ' < "$T/wrapped")" = "$(tr -s ' \n' '  ' < "$T/flat")" ] ||
      { echo "FAIL: pfi $w $s --help: wrapped at 80 columns, it says something else"; bad=1; }
  done
done

[ $bad -eq 0 ] || exit 1
echo "it_cli: ok"
