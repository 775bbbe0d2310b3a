#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# pfi-epilog.sh: the Epilog half of pfi-prolog.sh (slurm.conf: Epilog=/usr/local/lib/pfi/pfi-epilog.sh):
# tells this node's `pfi serve` the job ended, so it restores the job's GPUs.  Same settings as
# pfi-prolog.sh.  A daemon that never knew the job (404) is fine.
#
# A deregistration the daemon did not get (down or restarting when the job ended) is not lost:
# the daemon reloads registered jobs from its database, so the job would keep its GPUs' caps
# and the next job given them would be refused (409).  The job id is left in PFI_SPOOL
# (default /var/spool/pfi, made 0700) and the next prolog or epilog on this node sends the
# DELETE again before its own request, as the SPANK plugin does with its spool= directory.
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
job=${SLURM_JOB_ID:?}
gpus=${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-}}

# --- the same request and spool helpers as pfi-prolog.sh ---
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
spool_add() {
  if { [ -d "$spool" ] || mkdir -m 0700 "$spool" 2>/dev/null; } && : >"$spool/$1" 2>/dev/null; then
    say "pfi: job $1: deregistration spooled in $spool, sent again at the next job's prolog or epilog on this node"
  else
    say "pfi: job $1: cannot spool its deregistration in $spool; remove the job from the daemon by hand (pfi ctl job rm $1)"
  fi
}

retry_spool
[ -n "$gpus" ] || exit 0
if req DELETE "/v1/jobs/$job" || [ "$st" = 404 ]; then
  exit 0
fi
if ! untold; then
  say "pfi: job $job: deregistration refused: $why"
  exit 0
fi
say "pfi: job $job: deregistration failed: $why"
spool_add "$job"
# An epilog failure drains the node: only sites that asked for it get one.
[ "${PFI_REQUIRED:-0}" = 1 ] && exit 1
exit 0
