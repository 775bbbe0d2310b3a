# SPDX-License-Identifier: Apache-2.0
# pfi-slurm-lib.sh: what pfi-prolog.sh and pfi-epilog.sh share, sourced by both from their own
# folder: the settings (PFI_SLURM_CONF), say (syslog and PFI_LOG_FILE), req (one request to
# the node daemon, with the daemon's reason when it says no), untold and retry_spool (the
# deregistrations an epilog could not deliver, sent again).  Not a command of its own.
# slurmd runs prologs with a minimal environment.
PATH=${PATH:+$PATH:}/usr/sbin:/usr/bin:/sbin:/bin
export PATH
conf=${PFI_SLURM_CONF:-/etc/default/pfi-slurm}
# shellcheck disable=SC1090
[ -r "$conf" ] && . "$conf"
url=${PFI_URL:-unix:/run/pfi/serve.sock}
spool=${PFI_SPOOL:-/var/spool/pfi}
# slurmd does not keep a prolog's output: messages go to syslog, and to PFI_LOG_FILE when set.
say() {
  echo "$*" >&2
  logger -t pfi-slurm -- "$*" 2>/dev/null
  [ -n "${PFI_LOG_FILE:-}" ] && echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $*" >>"$PFI_LOG_FILE"
  return 0
}
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
  # The token reaches curl on its stdin (-H @-), never its arguments: ps shows every user those.
  if ! out=$(if [ -n "$token" ]; then printf 'Authorization: Bearer %s\n' "$token"; fi |
    curl -sS -i --max-time 3 -H @- "$@" -X "$m" "$base$p" 2>&1); then
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
