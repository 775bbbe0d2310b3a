#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# pfi-epilog.sh: the Epilog half of pfi-prolog.sh (slurm.conf: Epilog=/usr/local/lib/pfi/pfi-epilog.sh):
# tells this node's `pfi serve` the job ended, so it restores the job's GPUs.  Same settings as
# pfi-prolog.sh.  A daemon that never knew the job (404) is fine.
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
job=${SLURM_JOB_ID:?}
gpus=${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-}}
[ -n "$gpus" ] || exit 0

set -- -s -S --max-time 3 -o /dev/null -w '%{http_code}'
case "$url" in
  unix:*) set -- "$@" --unix-socket "${url#unix:}"; base=http://localhost ;;
  *) base=$url ;;
esac
[ -n "${PFI_TOKEN_FILE:-}" ] && [ -r "$PFI_TOKEN_FILE" ] &&
  set -- "$@" -H "Authorization: Bearer $(head -n 1 "$PFI_TOKEN_FILE")"
code=$(curl "$@" -X DELETE "$base/v1/jobs/$job" 2>&1)
case "$code" in
  2??|404) exit 0 ;;
esac
# An epilog failure drains the node: only sites that asked for it get one.
say "pfi: job $job: deregistration failed: DELETE $base/v1/jobs/$job: $code"
[ "${PFI_REQUIRED:-0}" = 1 ] && exit 1
exit 0
