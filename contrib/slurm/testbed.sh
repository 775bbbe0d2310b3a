#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A one-machine Slurm cluster for pfi's tests: munged, slurmctld and one slurmd per node (several
# slurmd on one host with `slurmd -N`), GRES GPUs backed by character devices made with mknod,
# everything under one directory, on free ports.  Needs root (slurmd runs jobs as their users).
#
#   testbed.sh start DIR [NODES] [GPUS_PER_NODE] [PLUGSTACK_LINE]
#   testbed.sh stop DIR
#   testbed.sh env DIR        prints the exports a client needs (SLURM_CONF)
#
# NODES nodes are named pfin1..pfinN.  PLUGSTACK_LINE, when given, is written to the
# plugstack.conf the cluster loads (e.g. "optional /path/pfi_spank.so url=...").
# PFI_TESTBED_EXTRA, when set, is appended to slurm.conf (e.g. "Prolog=/path/x.sh").
# `start` waits until every node is idle and returns non-zero (with the logs' tails) otherwise.
set -eu

die() { echo "testbed: $*" >&2; exit 1; }

# A TCP port nobody listens on, from /proc (no ss/netstat needed).  Ports from a range derived
# from the PID keep parallel test runs apart; the listen check catches the rest.
port_in_use() {
  hex=$(printf '%04X' "$1")
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v h=":$hex" '$2 ~ h"$" {f=1} END {exit !f}'
}
free_port() {
  p=$(( 20000 + ($$ * 7 + $1 * 131) % 30000 ))
  tries=0
  while port_in_use "$p"; do
    p=$((p + 1)); tries=$((tries + 1))
    [ $tries -lt 500 ] || die "no free port near $p"
  done
  echo "$p"
}

start() {
  dir=$1; nodes=${2:-2}; gpus=${3:-4}; plug=${4:-}
  [ "$(id -u)" -eq 0 ] || die "needs root (slurmd launches jobs as their users)"
  for b in munged slurmctld slurmd srun scontrol; do
    command -v "$b" >/dev/null 2>&1 || die "$b not found (apt-get install munge slurmctld slurmd slurm-client)"
  done
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  mkdir -p "$dir/etc" "$dir/munge" "$dir/log" "$dir/run" "$dir/state" "$dir/spool" "$dir/dev"
  chmod 755 "$dir/munge"

  # munge refuses a key or socket directory others can write; the key is random per testbed.
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
  chmod 400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/seed" 2>"$dir/log/munged.err" || die "munged failed: $(cat "$dir/log/munged.err")"

  ctld_port=$(free_port 1)
  base=$(free_port 2)
  [ "$base" -ne "$ctld_port" ] || base=$((base + 1))

  : >"$dir/etc/gres.conf"
  echo "AutoDetect=off" >>"$dir/etc/gres.conf"
  nodelines=""
  i=1
  while [ $i -le "$nodes" ]; do
    n=pfin$i
    g=0
    while [ $g -lt "$gpus" ]; do
      # Major 1 minor 3 is /dev/null: a device node Slurm can name and constrain, that is no GPU.
      [ -e "$dir/dev/${n}gpu$g" ] || mknod "$dir/dev/${n}gpu$g" c 1 3
      g=$((g + 1))
    done
    echo "NodeName=$n Name=gpu File=$dir/dev/${n}gpu[0-$((gpus - 1))]" >>"$dir/etc/gres.conf"
    port=$((base + i))
    while port_in_use "$port" || [ "$port" -eq "$ctld_port" ]; do port=$((port + 1)); done
    nodelines="${nodelines}NodeName=$n NodeHostname=localhost NodeAddr=127.0.0.1 Port=$port CPUs=8 RealMemory=4000 Gres=gpu:$gpus State=UNKNOWN
"
    base=$port
    i=$((i + 1))
  done

  cat >"$dir/etc/slurm.conf" <<EOF
ClusterName=pfitest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$dir/etc/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
SlurmdParameters=config_overrides
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
MinJobAge=300
KillWait=2
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=10
PrologFlags=Alloc
$nodelines
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
${PFI_TESTBED_EXTRA:-}
EOF
  printf '%s\n' "$plug" >"$dir/etc/plugstack.conf"
  echo "$nodes" >"$dir/nodes"

  SLURM_CONF=$dir/etc/slurm.conf
  export SLURM_CONF
  slurmctld -i -f "$SLURM_CONF" 2>"$dir/log/slurmctld.err" || fail_start "$dir" "slurmctld did not start"
  i=1
  while [ $i -le "$nodes" ]; do
    mkdir -p "$dir/spool/pfin$i"
    slurmd -N "pfin$i" -f "$SLURM_CONF" 2>"$dir/log/slurmd-pfin$i.err" || fail_start "$dir" "slurmd pfin$i did not start"
    i=$((i + 1))
  done

  # Ready when every node reports idle.
  t=0
  while :; do
    idle=$(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle" {n++} END {print n+0}')
    [ "$idle" -ge "$nodes" ] && break
    t=$((t + 1))
    [ $t -lt 60 ] || fail_start "$dir" "only $idle of $nodes nodes idle after 30 s"
    sleep 0.5
  done
  echo "testbed: $nodes nodes x $gpus GPUs up in $dir (SLURM_CONF=$SLURM_CONF)"
}

fail_start() {
  echo "testbed: $2" >&2
  for f in "$1"/log/*; do echo "--- $f" >&2; tail -n 15 "$f" >&2; done
  stop "$1"
  exit 1
}

# Stops by the PIDs this testbed wrote, never by name: other Slurm daemons may run on the host.
stop() {
  dir=$1
  [ -d "$dir/run" ] || return 0
  for pf in "$dir"/run/slurmd-*.pid "$dir/run/slurmctld.pid" "$dir/run/munged.pid"; do
    [ -f "$pf" ] || continue
    pid=$(cat "$pf" 2>/dev/null || true)
    [ -n "$pid" ] || continue
    kill "$pid" 2>/dev/null || true
    t=0
    while kill -0 "$pid" 2>/dev/null && [ $t -lt 50 ]; do sleep 0.1; t=$((t + 1)); done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pf"
  done
  # Steps whose slurmd is gone: their slurmstepd processes hold the spool directory.
  for d in /proc/[0-9]*; do
    cmd=$( (tr '\0' ' ' <"$d/cmdline") 2>/dev/null || true)
    case "$cmd" in
      slurmstepd*) if grep -qs "$dir" "$d/environ"; then kill -9 "${d#/proc/}" 2>/dev/null || true; fi ;;
    esac
  done
}

cmd=${1:-}
case "$cmd" in
  start) [ $# -ge 2 ] || die "usage: $0 start DIR [NODES] [GPUS_PER_NODE] [PLUGSTACK_LINE]"
         shift; start "$@" ;;
  stop)  [ $# -ge 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
  env)   [ $# -ge 2 ] || die "usage: $0 env DIR"; echo "export SLURM_CONF=$(cd "$2" && pwd)/etc/slurm.conf" ;;
  *) die "usage: $0 start|stop|env DIR ..." ;;
esac
