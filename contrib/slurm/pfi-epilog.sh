#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# pfi-epilog.sh: the Epilog half of pfi-prolog.sh (slurm.conf:
# Epilog=@PKGLIBEXECDIR@/pfi-epilog.sh): tells this node's `pfi serve` the job ended, so it
# restores the job's GPUs.  Same settings as pfi-prolog.sh.  A daemon that never knew the job
# (404) is fine.
#
# A deregistration the daemon did not get (down or restarting when the job ended) is not lost:
# the daemon reloads registered jobs from its database, so the job would keep its GPUs' caps
# and the next job given them would be refused (409).  The job id is left in PFI_SPOOL
# (default /var/spool/pfi, made 0700) and the next prolog or epilog on this node sends the
# DELETE again before its own request, as the SPANK plugin does with its spool= directory.
# The settings, say, req, untold and retry_spool: shared with pfi-prolog.sh.
# The lib beside this script's real file (a site links it into a prolog.d, or runs it from the
# tree), else where `make install` put it.  Not found: slurmd would drain the node on dash's
# exit status 2, so this exits 0 after saying why, unless the site asked for failures.
PATH=${PATH:-/usr/sbin:/usr/bin:/sbin:/bin}
lib=$(readlink -f -- "$0" 2>/dev/null) && lib=${lib%/*}/pfi-slurm-lib.sh
[ -r "$lib" ] || lib=@PKGLIBEXECDIR@/pfi-slurm-lib.sh
if ! [ -r "$lib" ]; then
  # shellcheck disable=SC1090
  [ -r "${PFI_SLURM_CONF:-/etc/default/pfi-slurm}" ] && . "${PFI_SLURM_CONF:-/etc/default/pfi-slurm}"
  st=0 m="its GPUs keep the job's caps until the daemon is told"
  [ "${PFI_REQUIRED:-0}" = 1 ] && st=1 m="failing the epilog (PFI_REQUIRED=1)"
  m="pfi: job ${SLURM_JOB_ID:-?}: $0: pfi-slurm-lib.sh not found beside its file nor at $lib, $m"
  echo "$m" >&2
  logger -t pfi-slurm -- "$m" 2>/dev/null
  [ -n "${PFI_LOG_FILE:-}" ] && echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $m" >>"$PFI_LOG_FILE"
  exit $st
fi
# shellcheck source=pfi-slurm-lib.sh
. "$lib"
job=${SLURM_JOB_ID:?}
gpus=${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-}}

spool_add() {
  if { [ -d "$spool" ] || mkdir -m 0700 "$spool" 2>/dev/null; } && : >"$spool/$1" 2>/dev/null; then
    say "pfi: job $1: deregistration spooled in $spool, sent again at the next job's prolog or epilog on this node"
  else
    say "pfi: job $1: cannot spool its deregistration in $spool; remove the job from the daemon by hand (pfi ctl job rm $1)"
  fi
}

retry_spool
# Sent whatever SLURM_JOB_GPUS says: Slurm runs the epilog of a job that ends just after a
# slurmctld restart without it, and a job skipped for that stayed registered for good (every
# later job on its GPUs refused, 409).  One that held no GPU here answers 404.
if req DELETE "/v1/jobs/$job" || [ "$st" = 404 ]; then
  exit 0
fi
if ! untold; then
  say "pfi: job $job: deregistration refused: $why"
  exit 0
fi
# No GPU listed (a CPU-only job, or Slurm after a slurmctld restart): the DELETE was a best
# effort, never spooled nor a failure (on a node without a daemon every CPU job spooled its id
# for ever, and PFI_REQUIRED=1 drained the node).
[ -n "$gpus" ] || exit 0
say "pfi: job $job: deregistration failed: $why"
spool_add "$job"
# An epilog failure drains the node: only sites that asked for it get one.
[ "${PFI_REQUIRED:-0}" = 1 ] && exit 1
exit 0
