#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# pfi-prolog.sh: for sites that do not load SPANK plugins, the same registration as pfi_spank.so
# from slurmd's Prolog (slurm.conf: Prolog=@PKGLIBEXECDIR@/pfi-prolog.sh, with
# PrologFlags=Alloc so it runs on every node when the job is allocated).  Tells this node's
# `pfi serve` which GPUs the job holds; pfi-epilog.sh tells it when the job ends.
#
# Settings (environment, or the file named by PFI_SLURM_CONF, default /etc/default/pfi-slurm):
#   PFI_URL          node daemon: unix:/run/pfi/serve.sock (default, the packaged daemon's
#                    listen) or http://127.0.0.1:9455
#   PFI_TOKEN_FILE   bearer token file (root-only), default none
#   PFI_DEFAULT_SLA  SLA for jobs that give none (default: none, the daemon's own default)
#   PFI_REQUIRED     1: fail the prolog when the daemon cannot be told (no answer, 5xx, token
#                    refused: Slurm drains the node); 0 (default): log why and let the job run.
#                    A 4xx answer to the job's request (a GPU still held, a value refused) never
#                    fails the prolog: the job runs unmanaged and the log says why
#   PFI_READ_COMMENT 1: read the job's SLA and weight from its comment, e.g.
#                    sbatch --comment "pfi:sla=0.1,weight=2" (costs one scontrol call per job
#                    and node; the SPANK plugin's --power-sla needs none).  A value out of
#                    range (sla in [0, 1), weight in (0, 1000000]) is logged and not used
#   PFI_LOG_FILE     also append problems here (they always go to syslog, tag pfi-slurm)
#   PFI_SPOOL        where pfi-epilog.sh leaves the deregistrations the daemon did not get
#                    (default /var/spool/pfi); this prolog sends them again before its own
# Needs curl.  Silent on success.
# The settings, say, req, untold and retry_spool: shared with pfi-epilog.sh.
# The lib beside this script's real file (a site links it into a prolog.d, or runs it from the
# tree), else where `make install` put it.  Not found: slurmd would drain the node on dash's
# exit status 2, so this exits 0 after saying why, unless the site asked for failures.
PATH=${PATH:-/usr/sbin:/usr/bin:/sbin:/bin}
lib=$(readlink -f -- "$0" 2>/dev/null) && lib=${lib%/*}/pfi-slurm-lib.sh
[ -r "$lib" ] || lib=@PKGLIBEXECDIR@/pfi-slurm-lib.sh
if ! [ -r "$lib" ]; then
  # shellcheck disable=SC1090
  [ -r "${PFI_SLURM_CONF:-/etc/default/pfi-slurm}" ] && . "${PFI_SLURM_CONF:-/etc/default/pfi-slurm}"
  st=0 m="the job runs without power management"
  [ "${PFI_REQUIRED:-0}" = 1 ] && st=1 m="failing the prolog (PFI_REQUIRED=1)"
  m="pfi: job ${SLURM_JOB_ID:-?}: $0: pfi-slurm-lib.sh not found beside its file nor at $lib, $m"
  echo "$m" >&2
  logger -t pfi-slurm -- "$m" 2>/dev/null
  [ -n "${PFI_LOG_FILE:-}" ] && echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $m" >>"$PFI_LOG_FILE"
  exit $st
fi
# shellcheck source=pfi-slurm-lib.sh
. "$lib"
required=${PFI_REQUIRED:-0}
node=${SLURMD_NODENAME:-$(hostname -s)}
job=${SLURM_JOB_ID:?}
gpus=${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-}}

# The daemon could not be told (or this node cannot say it): fail the prolog if the site asked.
outcome() {
  if [ "$required" = 1 ]; then
    say "pfi: job $job: $1 failed (PFI_REQUIRED=1, failing the prolog): $2"
    exit 1
  fi
  say "pfi: job $job: $1 failed, the job runs without power management: $2"
  exit 0
}


# A job that ended while the daemon was down still holds its GPUs there: release them first.
retry_spool
[ -n "$gpus" ] || exit 0 # no GPU on this node: nothing to register

# "0-2,5" -> "0,1,2,5"
list=$(echo "$gpus" | tr ',' '\n' | awk -F- '
  /^[0-9]+$/ {print; next}
  /^[0-9]+-[0-9]+$/ {for (i = $1; i <= $2; i++) print i; next}
  {bad = 1} END {exit bad}' | paste -sd, -) || outcome registration "GPU list '$gpus' is not indices"

# num VALUE LO HI LO_OPEN: VALUE as a JSON number when it is a plain decimal in the range
# ([LO, HI), or (LO, HI] when LO_OPEN is 1), written as JSON wants it (".5" -> 0.5); nothing
# otherwise.
num() {
  awk -v v="$1" -v lo="$2" -v hi="$3" -v open="$4" 'BEGIN {
    if (v !~ /^([0-9]+[.]?[0-9]*|[.][0-9]+)$/) exit
    x = v + 0
    if (!(open ? (x > lo && x <= hi) : (x >= lo && x < hi))) exit
    sub(/^0+/, "", v); if (v == "" || v ~ /^[.]/) v = "0" v; if (v ~ /[.]$/) v = v "0"
    print v
  }'
}
sla=""
if [ -n "${PFI_DEFAULT_SLA:-}" ]; then
  sla=$(num "$PFI_DEFAULT_SLA" 0 1 0)
  [ -n "$sla" ] || say "pfi: PFI_DEFAULT_SLA=$PFI_DEFAULT_SLA ignored: expected a max slowdown in [0, 1) (0.1 = at most 10% slower)"
fi
weight=1
if [ "${PFI_READ_COMMENT:-0}" = 1 ]; then
  # `scontrol -o` puts the job on one line of Key=value fields; a comment may hold spaces
  # ("pfi:sla=0.1, weight=2"), so it runs up to the next capitalised Key=.
  comment=$(scontrol show job "$job" -o 2>/dev/null | sed -n 's/.* Comment=//p' |
    sed 's/ [A-Z][A-Za-z]*=.*//')
  case "$comment" in
    pfi:*)
      set -f
      for kv in $(echo "${comment#pfi:}" | tr ',' ' '); do
        case "$kv" in
          sla=*)
            v=$(num "${kv#sla=}" 0 1 0)
            if [ -n "$v" ]; then sla=$v; else
              say "pfi: job $job: comment $kv ignored: expected a max slowdown in [0, 1) (0.1 = at most 10% slower)"
            fi ;;
          weight=*)
            v=$(num "${kv#weight=}" 0 1e6 1)
            if [ -n "$v" ]; then weight=$v; else
              say "pfi: job $job: comment $kv ignored: expected a weight in (0, 1000000]"
            fi ;;
        esac
      done
      set +f ;;
  esac
fi

body="{\"id\":\"$job\",\"gpus\":[$list],\"weight\":$weight,\"source\":\"slurm-prolog\",\"node\":\"$node\""
[ -n "$sla" ] && body="$body,\"sla\":$sla"
body="$body}"

[ -n "${PFI_TOKEN_FILE:-}" ] && ! [ -r "$PFI_TOKEN_FILE" ] &&
  outcome registration "cannot read $PFI_TOKEN_FILE"
req POST /v1/jobs "$body" && exit 0
untold && outcome registration "$why"
# The daemon heard the job and refused it (a GPU still held, a value refused): draining the
# node would not help, so PFI_REQUIRED does not apply.
say "pfi: job $job: registration refused, the job runs without power management (not a node failure: PFI_REQUIRED does not apply): $why"
exit 0
