#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# pfi-prolog.sh: for sites that do not load SPANK plugins, the same registration as pfi_spank.so
# from slurmd's Prolog (slurm.conf: Prolog=/usr/local/lib/pfi/pfi-prolog.sh, with
# PrologFlags=Alloc so it runs on every node when the job is allocated).  Tells this node's
# `pfi serve` which GPUs the job holds; pfi-epilog.sh tells it when the job ends.
#
# Settings (environment, or the file named by PFI_SLURM_CONF, default /etc/default/pfi-slurm):
#   PFI_URL          node daemon: http://127.0.0.1:9455 (default) or unix:/run/pfi/serve.sock
#   PFI_TOKEN_FILE   bearer token file (root-only), default none
#   PFI_DEFAULT_SLA  SLA for jobs that give none (default: none, the daemon's own default)
#   PFI_REQUIRED     1: fail the prolog when the daemon cannot be told (Slurm drains the node);
#                    0 (default): log why and let the job run
#   PFI_READ_COMMENT 1: read the job's SLA and weight from its comment, e.g.
#                    sbatch --comment "pfi:sla=0.1,weight=2" (costs one scontrol call per job
#                    and node; the SPANK plugin's --power-sla needs none)
#   PFI_LOG_FILE     also append problems here (they always go to syslog, tag pfi-slurm)
# Needs curl.  Silent on success.
# slurmd runs prologs with a minimal environment.
PATH=${PATH:+$PATH:}/usr/sbin:/usr/bin:/sbin:/bin
export PATH
conf=${PFI_SLURM_CONF:-/etc/default/pfi-slurm}
# shellcheck disable=SC1090
[ -r "$conf" ] && . "$conf"
url=${PFI_URL:-http://127.0.0.1:9455}
# slurmd does not keep a prolog's output: messages go to syslog, and to PFI_LOG_FILE when set.
say() {
  echo "$*" >&2
  logger -t pfi-slurm -- "$*" 2>/dev/null
  [ -n "${PFI_LOG_FILE:-}" ] && echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $*" >>"$PFI_LOG_FILE"
  return 0
}
required=${PFI_REQUIRED:-0}
node=${SLURMD_NODENAME:-$(hostname -s)}
job=${SLURM_JOB_ID:?}
gpus=${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-}}
[ -n "$gpus" ] || exit 0 # no GPU on this node: nothing to register

outcome() {
  if [ "$required" = 1 ]; then
    say "pfi: job $job: $1 failed (PFI_REQUIRED=1, failing the prolog): $2"
    exit 1
  fi
  say "pfi: job $job: $1 failed, the job runs without power management: $2"
  exit 0
}

# "0-2,5" -> "0,1,2,5"
list=$(echo "$gpus" | tr ',' '\n' | awk -F- '
  /^[0-9]+$/ {print; next}
  /^[0-9]+-[0-9]+$/ {for (i = $1; i <= $2; i++) print i; next}
  {bad = 1} END {exit bad}' | paste -sd, -) || outcome registration "GPU list '$gpus' is not indices"

sla=${PFI_DEFAULT_SLA:-}
weight=1
if [ "${PFI_READ_COMMENT:-0}" = 1 ]; then
  comment=$(scontrol show job "$job" -o 2>/dev/null | sed -n 's/.*Comment=\([^ ]*\).*/\1/p')
  case "$comment" in
    pfi:*)
      for kv in $(echo "${comment#pfi:}" | tr ',' ' '); do
        case "$kv" in
          sla=*) sla=${kv#sla=} ;;
          weight=*) weight=${kv#weight=} ;;
        esac
      done ;;
  esac
fi
# Only plain numbers reach the JSON.
case "$sla" in ''|*[!0-9.]*) sla="" ;; esac
case "$weight" in ''|*[!0-9.]*) weight=1 ;; esac

body="{\"id\":\"$job\",\"gpus\":[$list],\"weight\":$weight,\"source\":\"slurm-prolog\",\"node\":\"$node\""
[ -n "$sla" ] && body="$body,\"sla\":$sla"
body="$body}"

set -- -s -S --max-time 3 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json'
case "$url" in
  unix:*) set -- "$@" --unix-socket "${url#unix:}"; base=http://localhost ;;
  *) base=$url ;;
esac
if [ -n "${PFI_TOKEN_FILE:-}" ]; then
  [ -r "$PFI_TOKEN_FILE" ] || outcome registration "cannot read $PFI_TOKEN_FILE"
  set -- "$@" -H "Authorization: Bearer $(head -n 1 "$PFI_TOKEN_FILE")"
fi
code=$(curl "$@" -X POST -d "$body" "$base/v1/jobs" 2>&1) || outcome registration "POST $base/v1/jobs: $code"
case "$code" in
  2??) exit 0 ;;
  *) outcome registration "POST $base/v1/jobs: HTTP $code" ;;
esac
