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
# slurmd runs prologs with a minimal environment.
PATH=${PATH:+$PATH:}/usr/sbin:/usr/bin:/sbin:/bin
export PATH
conf=${PFI_SLURM_CONF:-/etc/default/pfi-slurm}
# shellcheck disable=SC1090
[ -r "$conf" ] && . "$conf"
url=${PFI_URL:-http://127.0.0.1:9455}
spool=${PFI_SPOOL:-/var/spool/pfi}
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

# The daemon could not be told (or this node cannot say it): fail the prolog if the site asked.
outcome() {
  if [ "$required" = 1 ]; then
    say "pfi: job $job: $1 failed (PFI_REQUIRED=1, failing the prolog): $2"
    exit 1
  fi
  say "pfi: job $job: $1 failed, the job runs without power management: $2"
  exit 0
}

# --- the same request and spool helpers as pfi-epilog.sh ---
case "$url" in
  unix:*) sock=${url#unix:}; base=http://localhost ;;
  *) sock=""; base=${url%/} ;;
esac
token=""
[ -n "${PFI_TOKEN_FILE:-}" ] && [ -r "$PFI_TOKEN_FILE" ] && token=$(head -n 1 "$PFI_TOKEN_FILE")
# req METHOD PATH [JSON]: 0 on a 2xx answer; else 1 with the HTTP status in st (empty when no
# answer came) and why, the daemon's own reason or curl's, in why.
req() {
  m=$1 p=$2 st="" why=""
  shift 2
  if [ $# -gt 0 ]; then set -- -H 'Content-Type: application/json' -d "$1"; fi
  [ -n "$sock" ] && set -- "$@" --unix-socket "$sock"
  [ -n "$token" ] && set -- "$@" -H "Authorization: Bearer $token"
  if ! out=$(curl -sS -i --max-time 3 "$@" -X "$m" "$base$p" 2>&1); then
    # curl names "localhost port 80" for a Unix socket: the socket is what it could not reach.
    why="$m $p at $url: $(printf '%s\n' "$out" | grep 'curl:' | tail -n 1 | sed 's/ to localhost port 80//')"
    return 1
  fi
  st=$(printf '%s\n' "$out" | sed -n '1s/^HTTP\/[0-9.]* \([0-9][0-9][0-9]\).*/\1/p')
  case "$st" in 2??) return 0 ;; esac
  reply=$(printf '%s\n' "$out" | tr -d '\r' | sed '1,/^$/d' | tr '\n' ' ')
  msg=$(printf '%s\n' "$reply" | sed -n 's/.*"message": *"\([^"]*\)".*/\1/p')
  why="$m $p at $url: HTTP ${st:-?}: $(printf '%s' "${msg:-$reply}" | cut -c1-300)"
  return 1
}
# After a failed req: 0 when the daemon could not be told (no answer, 5xx, our token refused),
# 1 when it answered no to this request (another 4xx), which no retry and no drain will change.
untold() {
  case "$st" in
    401|403) return 0 ;;
    4??) return 1 ;;
  esac
  return 0
}
# Sends the spooled deregistrations again; each one the daemon took (or never
# knew: 404) leaves the spool.  Stops at the first the daemon cannot be told, so a daemon that
# is down costs one timeout, not one per spooled job.
retry_spool() {
  [ -d "$spool" ] || return 0
  for f in "$spool"/*; do
    f=${f##*/}
    case "$f" in ''|*[!0-9]*) continue ;; esac
    if req DELETE "/v1/jobs/$f" || [ "$st" = 404 ]; then
      rm -f "$spool/$f"
      say "pfi: job $f: deregistered (spooled since its epilog)"
    elif untold; then
      return 0
    else
      rm -f "$spool/$f"
      say "pfi: job $f: spooled deregistration refused, dropped: $why"
    fi
  done
}
# --- end of the shared helpers ---

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
  [ -n "$sla" ] || say "pfi: PFI_DEFAULT_SLA=$PFI_DEFAULT_SLA ignored: expected a max slowdown in [0, 1)"
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
              say "pfi: job $job: comment $kv ignored: expected a max slowdown in [0, 1)"
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
