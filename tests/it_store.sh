#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# pfi import / runs / show / export end to end on the public data, and what they do with bad
# input: a missing database or folder, a malformed CSV line, a newer schema, a locked database.
set -u
: "${PFI_BIN:?PFI_BIN must point at the pfi binary}"
tmp=$(mktemp -d "${PFI_TEST_TMP:-${TMPDIR:-/tmp}}/it_store.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
db=$tmp/p.db
fail() { echo "FAIL: $*"; exit 1; }
# Runs pfi expecting failure; keeps stderr in $tmp/err.
must_fail() {
  if "$PFI_BIN" "$@" >"$tmp/out" 2>"$tmp/err"; then fail "pfi $* succeeded"; fi
}
has() { grep -q -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "expected '$2' in $1"; }; }

# ---- bad input, no public data needed ----
must_fail runs --db "$tmp/none.db"
has "$tmp/err" "no database at"
[ ! -e "$tmp/none.db" ] || fail "pfi runs created a database"
must_fail import nosuch --db "$db"
has "$tmp/err" "unknown dataset"
must_fail import zeus-nsdi "$tmp/missing" --db "$db"
has "$tmp/err" "$tmp/missing"
mkdir "$tmp/plo"
printf 'start_time,window_name,elapsed_time,gpu0_energy\n1,__GlobalPowerLimitOptimizer_300,30,9000\n2,__GlobalPowerLimitOptimizer_250,oops,8000\n' \
  >"$tmp/plo/A40+resnet18+gpu0.csv"
must_fail import zeus-plo "$tmp/plo" --db "$db"
has "$tmp/err" "A40+resnet18+gpu0.csv line 3"
# Hexadecimal is refused with the file, line and column (strtod read 0x20 as 32 s and 0x113 as
# a 275 W window), as every number a person writes is read (util/units.h).
printf 'start_time,window_name,elapsed_time,gpu0_energy\n1,__GlobalPowerLimitOptimizer_300,30,9000\n2,__GlobalPowerLimitOptimizer_250,0x20,8000\n' \
  >"$tmp/plo/A40+resnet18+gpu0.csv"
must_fail import zeus-plo "$tmp/plo" --db "$db"
has "$tmp/err" "A40+resnet18+gpu0.csv line 3, column 'elapsed_time': '0x20' is hexadecimal"
printf 'start_time,window_name,elapsed_time,gpu0_energy\n1,__GlobalPowerLimitOptimizer_300,30,9000\n2,__GlobalPowerLimitOptimizer_0x113,36,8000\n' \
  >"$tmp/plo/A40+resnet18+gpu0.csv"
must_fail import zeus-plo "$tmp/plo" --db "$db"
has "$tmp/err" "A40+resnet18+gpu0.csv line 3: window_name '__GlobalPowerLimitOptimizer_0x113' is not"
# A name with terminal escapes and a line break, or a byte that is not UTF-8, is refused with
# its file and line (it was imported, then printed raw by the tables or dropped from JSON).
mkdir "$tmp/nsdi"
H='dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power'
for g in a40 v100 p100 rtx6000; do printf '%s\nx,y,1,z,250,10,200\n' "$H" >"$tmp/nsdi/summary_power_$g.csv"; done
printf '%s\nci,"net\033]0;owned\007\033[2J\nX",8,adam,300,10,270\n' "$H" >"$tmp/nsdi/summary_power_a40.csv"
must_fail import zeus-nsdi "$tmp/nsdi" --db "$db"
has "$tmp/err" "summary_power_a40.csv line 2: the run name is not UTF-8 text without control characters (control character 0x1b"
! grep -q "$(printf '\033')" "$tmp/err" || fail "the refusal echoed the escape"
printf '%s\nci,net\377,8,adam,300,10,270\n' "$H" >"$tmp/nsdi/summary_power_a40.csv"
must_fail import zeus-nsdi "$tmp/nsdi" --db "$db"
has "$tmp/err" "summary_power_a40.csv line 2: the run name is not UTF-8 text .*invalid UTF-8 byte 0xff"
# A file that ends inside a line (a copy cut short: its last number may be cut too, 270 W read
# as 2, and its later rows are missing) is refused naming the file and line, the store as it
# was: imported without that row, the run holding it replaced a whole stored run.
printf '%s\nci,net,8,adam,300,10,270\nci,net,8,adam,250,11,270\n' "$H" >"$tmp/nsdi/summary_power_a40.csv"
"$PFI_BIN" import zeus-nsdi "$tmp/nsdi" --db "$tmp/cut.db" >"$tmp/out" 2>"$tmp/err" || fail "import of a whole file: $(cat "$tmp/err")"
printf '%s\nci,net,8,adam,300,10,270\nci,net,8,adam,250,11,2' "$H" >"$tmp/nsdi/summary_power_a40.csv"
before=$(sqlite3 "$tmp/cut.db" 'select run_id, cap_w, power_w from levels order by 1, 2')
"$PFI_BIN" import zeus-nsdi "$tmp/nsdi" --db "$tmp/cut.db" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] || fail "a cut file is not refused as bad input (exit 2)"
has "$tmp/err" "nsdi/summary_power_a40.csv line 3: the file ends inside a line (a copy cut short?): nothing imported"
[ "$(sqlite3 "$tmp/cut.db" 'select run_id, cap_w, power_w from levels order by 1, 2')" = "$before" ] ||
    fail "a refused cut file changed the store"
# A UTF-8 name is padded by columns in the listing: the columns after it line up with the
# header's (padded by bytes, they started one column early per accented letter).
printf '%s\nci,n\303\251t\342\202\254,8,adam,300,10,270\nci,n\303\251t\342\202\254,8,adam,250,11,240\n' "$H" >"$tmp/nsdi/summary_power_a40.csv"
"$PFI_BIN" import zeus-nsdi "$tmp/nsdi" --db "$tmp/utf8.db" >"$tmp/out" 2>"$tmp/err" || fail "import of a UTF-8 name: $(cat "$tmp/err")"
"$PFI_BIN" runs --db "$tmp/utf8.db" >"$tmp/out" 2>&1 || fail "pfi runs: $(cat "$tmp/out")"
python3 - "$tmp/out" <<'PY' || fail "pfi runs: columns misaligned after a UTF-8 name: $(cat "$tmp/out")"
import sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
col = lines[0].index("SOURCE")
rows = [l for l in lines[1:] if "n\u00e9t" in l]
sys.exit(not rows or any(l[col:col + 8] != "zeus-nsd" for l in rows))
PY
# An import that fails into a store it created leaves no empty store behind.
[ ! -e "$db" ] || fail "a failed import left a database at $db"
# Two files that give one run name (the same GPUs in another order) are refused with both
# files before a store is opened: the second replaced the first inside the import.
mkdir "$tmp/dup"
for g in 0,1 1,0; do
  printf 'start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy\n1,__GlobalPowerLimitOptimizer_300,30,9000,9000\n' \
    >"$tmp/dup/A40+resnet18+gpu$g.csv"
done
must_fail import zeus-plo "$tmp/dup" --db "$db"
has "$tmp/err" "A40+resnet18+gpu0,1.csv and .*A40+resnet18+gpu1,0.csv both give run 'zeus-plo/A40/resnet18 x2'"
[ ! -e "$db" ] || fail "an import refused for a duplicate name created $db"
# An import that fails must never remove a store another pfi made meanwhile.  The failing
# import reads a FIFO, so it is held mid-read (it used to have created the store by then) while
# another import fills the store; then its file turns out bad.  It removed the store it thought
# it had created, and the other pfi's runs with it.
mkdir "$tmp/slow" "$tmp/good"
mkfifo "$tmp/slow/A40+resnet18+gpu0.csv"
printf 'start_time,window_name,elapsed_time,gpu0_energy\n1,__GlobalPowerLimitOptimizer_300,30,9000\n' \
  >"$tmp/good/V100+resnet50+gpu0.csv"
"$PFI_BIN" import zeus-plo "$tmp/slow" --db "$tmp/race.db" >"$tmp/slow.out" 2>&1 &
slow=$!
exec 4>"$tmp/slow/A40+resnet18+gpu0.csv"   # returns once the slow import opened the file
"$PFI_BIN" import zeus-plo "$tmp/good" --db "$tmp/race.db" >"$tmp/out" 2>&1 || fail "the good import: $(cat "$tmp/out")"
printf 'start_time,window_name,elapsed_time,gpu0_energy\n1,__GlobalPowerLimitOptimizer_300,oops,9000\n' >&4
exec 4>&-
if wait "$slow"; then fail "the bad import succeeded: $(cat "$tmp/slow.out")"; fi
has "$tmp/slow.out" "line 2"
"$PFI_BIN" runs --db "$tmp/race.db" >"$tmp/out" 2>&1 || fail "the failed import removed the other's store: $(cat "$tmp/out")"
has "$tmp/out" "zeus-plo/V100/resnet50 x1"

# A good one-file import, then the newer-schema and locked-database refusals.
printf 'start_time,window_name,elapsed_time,gpu0_energy\n1,__GlobalPowerLimitOptimizer_300,30,9000\n2,__GlobalPowerLimitOptimizer_250,36,8000\n' \
  >"$tmp/plo/A40+resnet18+gpu0.csv"
"$PFI_BIN" import zeus-plo "$tmp/plo" --db "$db" >"$tmp/out" || fail "import of a good file"
has "$tmp/out" "1 runs, 2 levels"
"$PFI_BIN" runs show "zeus-plo/A40/resnet18 x1" --db "$db" >"$tmp/out" || fail "pfi show by name"
has "$tmp/out" "windows/s (relative)"
has "$tmp/out" "Baseline at 300 W"
# --source: a name no writer gives is a mistake (exit 2, the known ones listed); a known source
# with no run in this store is an empty answer, said on stderr (exit 0), as sacct does.
"$PFI_BIN" runs --db "$db" --source bogus >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || fail "pfi runs --source bogus exited $rc, not 2"
has "$tmp/err" "unknown source 'bogus'"
has "$tmp/err" "sweep, sim, perseus, zeus-nsdi, zeus-plo"
"$PFI_BIN" runs --db "$db" --source perseus >"$tmp/out" 2>"$tmp/err" ||
  fail "pfi runs --source perseus on a store without perseus runs"
has "$tmp/err" "no runs from source 'perseus'"
"$PFI_BIN" runs --db "$db" --source zeus-plo >"$tmp/out" 2>"$tmp/err" || fail "runs --source zeus-plo"
has "$tmp/out" "resnet18"
[ ! -s "$tmp/err" ] || fail "runs --source zeus-plo wrote to stderr: $(cat "$tmp/err")"
must_fail show 999 --db "$db"
has "$tmp/err" "no run 999"

if command -v sqlite3 >/dev/null 2>&1; then
  cp "$db" "$tmp/newer.db"
  sqlite3 "$tmp/newer.db" "PRAGMA user_version = 99" || fail "sqlite3"
  must_fail runs --db "$tmp/newer.db"
  has "$tmp/err" "newer than this pfi"
  # The commands that only read open the store read-only: on a version-1 store they say it is
  # older and leave it so (pfi runs upgraded it, after which an older pfi refused it).
  cp "$db" "$tmp/v1.db"
  sqlite3 "$tmp/v1.db" "ALTER TABLE levels DROP COLUMN began_s; ALTER TABLE levels DROP COLUMN ended_s; ALTER TABLE levels DROP COLUMN enforced_min_w; PRAGMA user_version = 1" ||
    fail "sqlite3 (a version-1 store)"
  for c in "runs" "runs show 1" "runs export" "show 1" "export" "index 1 --boot 0"; do
    must_fail $c --db "$tmp/v1.db"
    has "$tmp/err" "schema version 1, older than this pfi's .* read-only open never upgrades it"
    [ "$(sqlite3 "$tmp/v1.db" "PRAGMA user_version")" = 1 ] || fail "pfi $c upgraded a version-1 store"
  done
  # A failed import leaves an older store at its version: it upgraded it first, after which an
  # older pfi refused the file.  Version 2 (the last before enforced_min_w) and version 1; a
  # missing folder and a bad line.
  cp "$db" "$tmp/v2.db"
  sqlite3 "$tmp/v2.db" "ALTER TABLE levels DROP COLUMN enforced_min_w; PRAGMA user_version = 2" ||
    fail "sqlite3 (a version-2 store)"
  printf 'start_time,window_name,elapsed_time,gpu0_energy\n1,__GlobalPowerLimitOptimizer_300,x,9000\n' \
    >"$tmp/dup/A40+resnet50+gpu0.csv"
  rm -f "$tmp"/dup/*,*.csv
  for v in 2 1; do
    for src in "$tmp/no-such-folder" "$tmp/dup"; do
      must_fail import zeus-plo "$src" --db "$tmp/v$v.db"
      [ "$(sqlite3 "$tmp/v$v.db" "PRAGMA user_version")" = $v ] || fail "a failed import ($src) upgraded a version-$v store"
    done
  done
  "$PFI_BIN" import zeus-plo "$tmp/plo" --db "$tmp/v1.db" >/dev/null || fail "import into a version-1 store"
  "$PFI_BIN" runs --db "$tmp/v1.db" >/dev/null || fail "runs after the import upgraded the store"
  : >"$tmp/empty.db"
  must_fail runs --db "$tmp/empty.db"
  has "$tmp/err" "is empty"
  [ ! -s "$tmp/empty.db" ] || fail "pfi runs wrote to an empty file"
  # Hold the write lock from another process until told to let go.
  mkfifo "$tmp/ctl"
  sqlite3 "$db" <"$tmp/ctl" >/dev/null 2>&1 &
  holder=$!
  exec 3>"$tmp/ctl"
  printf 'BEGIN IMMEDIATE;\nINSERT INTO jobs(command) VALUES (NULL);\n.shell touch %s/held\n' "$tmp" >&3
  while [ ! -e "$tmp/held" ]; do sleep 0.05; done
  PFI_DB_BUSY_MS=50 must_fail import zeus-plo "$tmp/plo" --db "$db"
  has "$tmp/err" "is locked"
  printf 'ROLLBACK;\n.quit\n' >&3
  exec 3>&-
  wait "$holder"
  "$PFI_BIN" runs --db "$db" >"$tmp/out" || fail "store unusable after the lock"
  has "$tmp/out" "zeus-plo/A40/resnet18 x1"
  # A name that is not UTF-8 or holds a terminal escape (a store written before names were
  # checked): every reader shows the bytes as '?' (runs --json listed the other runs without
  # it and exited 0, export and index dropped the run_name/run keys; tables drove the terminal).
  mkdir "$tmp/plo3"
  printf 'start_time,window_name,elapsed_time,gpu0_energy\n1,__GlobalPowerLimitOptimizer_300,30,9000\n2,__GlobalPowerLimitOptimizer_250,33,8000\n3,__GlobalPowerLimitOptimizer_200,38,7000\n' \
    >"$tmp/plo3/A40+resnet18+gpu0.csv"
  "$PFI_BIN" import zeus-plo "$tmp/plo3" --db "$tmp/bad8.db" >/dev/null || fail "import of three levels"
  "$PFI_BIN" index 1 --json --boot 0 --db "$tmp/bad8.db" >/dev/null || fail "index of three levels"
  sqlite3 "$tmp/bad8.db" "UPDATE runs SET name = CAST(X'6E6574FF1B5B324A' AS TEXT)" || fail "sqlite3"
  for c in "runs --json" "runs show 1 --json" "runs export --format json" "index 1 --json --boot 0" \
           "runs" "runs show 1" "index 1 --boot 0"; do
    "$PFI_BIN" $c --db "$tmp/bad8.db" >"$tmp/out" 2>"$tmp/err" || fail "pfi $c on an old name: $(cat "$tmp/err")"
    grep -q 'net??\[2J' "$tmp/out" || fail "pfi $c does not show the old name as net??[2J: $(head -c 300 "$tmp/out")"
    ! grep -q "$(printf '\033')" "$tmp/out" || fail "pfi $c printed an escape"
  done
else
  echo "SKIPPED: sqlite3 CLI absent (scripts/install-deps.sh test); newer-schema and lock checks not run"
  skipped=1
fi

# ---- the public datasets ----
data=${PFI_DATA_DIR:-../shared/data}
if [ ! -d "$data/perseus-sosp24" ] || [ ! -d "$data/zeus-nsdi23-trace" ] || [ ! -d "$data/zeus-plo-testdata" ]; then
  echo "public data not found under $data (set PFI_DATA_DIR): dataset checks skipped"
  exit 77
fi
db=$tmp/pub.db
"$PFI_BIN" import all --db "$db" >"$tmp/out" || { cat "$tmp/out"; fail "import all"; }
"$PFI_BIN" import all --db "$db" --json >"$tmp/out" || fail "second import all"

rows() { awk 'NF' "$@" | wc -l; }   # non-empty lines
pa100=$data/perseus-sosp24/zeus_baseline/A100/zeus_global.csv
pa40=$data/perseus-sosp24/zeus_baseline/A40/zeus_global.csv
n_a100=$(tail -n +2 "$pa100" | cut -d, -f1 | sort -u | wc -l)
n_a40=$(tail -n +2 "$pa40" | cut -d, -f1 | sort -u | wc -l)
n_nsdi=$(for f in "$data"/zeus-nsdi23-trace/summary_power_*.csv; do tail -n +2 "$f" | awk 'NF' | cut -d, -f1-4 | sort -u; done | wc -l)
n_plo=$(ls "$data"/zeus-plo-testdata/*+*.csv | wc -l)
l_all=0
for f in "$pa100" "$pa40" "$data"/zeus-nsdi23-trace/summary_power_*.csv "$data"/zeus-plo-testdata/*+*.csv; do
  l_all=$((l_all + $(rows "$f") - 1))
done

count() { "$PFI_BIN" runs --db "$db" --json --source "$1" | grep -c -- "$2"; }
[ "$(count perseus '"gpu_type": "A100-PCIE-80GB"')" -eq "$n_a100" ] || fail "perseus A100 runs"
[ "$(count perseus '"gpu_type": "A40"')" -eq "$n_a40" ] || fail "perseus A40 runs"
[ "$(count zeus-nsdi '"n_gpus": 1,')" -eq "$n_nsdi" ] || fail "zeus-nsdi runs ($n_nsdi expected)"
[ "$(count zeus-plo '"id":')" -eq "$n_plo" ] || fail "zeus-plo runs"
[ "$(count zeus-plo '"n_gpus": 4,')" -eq 2 ] || fail "zeus-plo 4-GPU runs"
"$PFI_BIN" runs --db "$db" --json --source perseus | grep -q '"n_gpus": 16,' || fail "16-GPU perseus run"
total=$("$PFI_BIN" runs --db "$db" --json | grep -c '"id":')
[ "$total" -eq $((n_a100 + n_a40 + n_nsdi + n_plo)) ] || fail "$total runs after importing twice"

"$PFI_BIN" runs show "perseus/A40/gpt3-2.7b dp1tp1pp8" --db "$db" --json >"$tmp/out" || fail "show --json"
has "$tmp/out" '"n_gpus": 8'
has "$tmp/out" '"unit_label": "samples/s"'

"$PFI_BIN" runs export --db "$db" >"$tmp/all.csv" || fail "export csv"
head -n 1 "$tmp/all.csv" | grep -q '^run_id,run_name,source,gpu_type,n_gpus,model,family,dp,tp,pp,global_batch,status,level,cap_w,enforced_w,enforced_min_w,power_w,job_power_w,tokens_per_s,samples_per_s,throughput,throughput_unit,' \
  || fail "export header: $(head -n 1 "$tmp/all.csv")"
[ "$(($(wc -l <"$tmp/all.csv") - 1))" -eq "$l_all" ] || fail "export rows != $l_all levels"
"$PFI_BIN" runs export --db "$db" --runs 1,2 --format json --out "$tmp/two.json" || fail "export --out"
# Runs 1 and 2 (ids kept across the re-import) are the first two A100 models: 6 levels each.
[ "$(grep -c '"run_id"' "$tmp/two.json")" -eq 12 ] || fail "export of runs 1,2"
# --out a link: its target gets the export and the link stays one; --out a FIFO is written into
# (renamed over, a FIFO or, as root, /dev/null became a regular file)
ln -s two.json "$tmp/link.json"
"$PFI_BIN" runs export --db "$db" --runs 1 --format json --out "$tmp/link.json" || fail "export --out a link"
[ -L "$tmp/link.json" ] && [ "$(grep -c '"run_id"' "$tmp/two.json")" -eq 6 ] || fail "export --out a link replaced the link"
mkfifo "$tmp/fifo"
cat "$tmp/fifo" >"$tmp/fifo.out" &
"$PFI_BIN" runs export --db "$db" --runs 1 --out "$tmp/fifo" || fail "export --out a FIFO"
wait
[ -p "$tmp/fifo" ] && [ "$(wc -l <"$tmp/fifo.out")" -eq 7 ] || fail "export --out a FIFO: $(ls -l "$tmp/fifo")"
# a list naming no run is refused (',,' exported every run, as if --runs were not given), and
# a run named twice is exported once (its rows came out twice)
must_fail export --db "$db" --runs ,, --out "$tmp/bad.csv"
has "$tmp/err" "names no run"
ls "$tmp"/bad.csv* >/dev/null 2>&1 && fail "a refused export left a file"
"$PFI_BIN" runs export --db "$db" --runs 1,2,1 --runs "perseus/A100-PCIE-80GB/bloom-3b dp1tp1pp4" \
  --format json >"$tmp/twice.json" || fail "export of a run named twice"
[ "$(grep -c '"run_id"' "$tmp/twice.json")" -eq 12 ] || fail "export of runs 1,2,1 and 2 by name"
must_fail export --db "$db" --runs 1,nope --out "$tmp/bad.csv"
has "$tmp/err" "nope"
ls "$tmp"/bad.csv* >/dev/null 2>&1 && fail "a failed export left a file"
# --out the store itself (its path spelled otherwise, a hard or a symbolic link to it, its -wal
# or -shm) is refused, exit 2, naming both, the store untouched: the export was renamed over the
# database and exited 0 (`pfi runs export --out pfi.db` with the default --db lost the store).
sum_db=$(cksum <"$db")
ln "$db" "$tmp/hard.db"
ln -s pub.db "$tmp/soft.db"
for o in "$db" "$tmp/./pub.db" "$tmp/hard.db" "$tmp/soft.db"; do
  for f in csv json; do
    "$PFI_BIN" runs export --db "$db" --format $f --out "$o" >"$tmp/out" 2>"$tmp/err"
    [ $? -eq 2 ] || fail "export --out $o (the store) did not exit 2: $(cat "$tmp/err")"
    has "$tmp/err" "--out '$o' is the database '$db' itself"
  done
done
[ "$(cksum <"$db")" = "$sum_db" ] || fail "an export over the store changed it"
[ -L "$tmp/soft.db" ] || fail "an export over the store replaced its link"
"$PFI_BIN" runs --db "$db" >/dev/null || fail "the store is unusable after an export over it"
ls "$tmp"/*.db.* >/dev/null 2>&1 && fail "a refused export over the store left a temporary file"
# ...and its -wal and -shm, which exist while a connection (here sqlite3's) has it open
if command -v sqlite3 >/dev/null 2>&1; then
  {
    echo 'for s in wal shm; do'
    echo "  \"$PFI_BIN\" runs export --db \"$db\" --out \"$db-\$s\" 2>\"$tmp/err-\$s\"; echo \"\$s \$?\""
    echo "done >\"$tmp/walrc\""
  } >"$tmp/wal.sh"
  sqlite3 "$db" "SELECT COUNT(*) FROM runs;" ".shell sh $tmp/wal.sh" >/dev/null || fail "sqlite3"
  [ "$(cat "$tmp/walrc")" = "$(printf 'wal 2\nshm 2')" ] || fail "export --out the store's -wal/-shm: $(cat "$tmp/walrc")"
  has "$tmp/err-wal" "is '$db-wal', part of the database '$db'"
  has "$tmp/err-shm" "is '$db-shm', part of the database '$db'"
  "$PFI_BIN" runs --db "$db" >/dev/null || fail "the store is unusable after an export over its -wal"
fi
# A write that fails (a full disk) names the file and the reason: it said "writing the export
# failed" alone.
if [ -w /dev/full ]; then
  for f in csv json; do
    must_fail runs export --db "$db" --format $f --out /dev/full
    has "$tmp/err" "/dev/full: writing the export failed: No space left on device"
  done
fi
echo "ok: $total runs, $l_all levels"
[ -z "${skipped:-}" ] || { echo "the rest ok; sqlite3 CLI absent: newer-schema and lock checks skipped"; exit 77; }
exit 0
