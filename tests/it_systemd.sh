#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The systemd units as `make install` writes them: `systemd-analyze verify` finds nothing to say,
# they start the installed pfi, they do not restart for ever on the exit status pfi gives for
# bad input, and `systemd-analyze security --offline=true` rates each at an exposure of at most
# 4.0 ("OK").  A bare unit must rate far above that, or the reading is broken.  pfi-serve's unit
# allows the GPUs' device nodes under both names their group has had.
set -u
command -v systemd-analyze >/dev/null 2>&1 ||
  { echo "FAIL: systemd-analyze not found (scripts/install-deps.sh test installs systemd)"; exit 1; }
name=it_systemd
. "$(dirname "$0")/support/tree_make.sh"
trap 'rm -rf "$T"' EXIT
D=$T/root
tree_make PREFIX=/usr DESTDIR="$D" install > "$T/install.log" 2>&1 ||
  { cat "$T/install.log"; echo "FAIL: make install"; exit 1; }

# The exposure systemd-analyze gives a unit file ("... exposure level for X: 2.2 OK").
exposure() {
  systemd-analyze security --offline=true "$1" > "$T/sec.out" 2>&1
  sed -n 's/.*[Ee]xposure level for .*: \([0-9][0-9.]*\) .*/\1/p' "$T/sec.out" | tail -n 1
}
mkdir -p "$T/bare"
printf '[Service]\nExecStart=/bin/true\n' > "$T/bare/bare.service"
e=$(exposure "$T/bare/bare.service")
[ -n "$e" ] && awk -v e="$e" 'BEGIN { exit !(e > 8) }' ||
  fail "a bare unit rates '$e' (expected above 8): $(tail -n 3 "$T/sec.out")"

n=0
for u in "$D"/lib/systemd/system/pfi-*.service "$D"/usr/lib/systemd/system/pfi-*.service; do
  [ -f "$u" ] || continue
  n=$((n + 1))
  name=$(basename "$u")
  grep -q '^ExecStart=/usr/bin/pfi ' "$u" || fail "$name does not start /usr/bin/pfi"
  if grep -n '@[A-Z]*@' "$u"; then fail "$name keeps a placeholder"; fi
  # verify checks that the command exists: point it at the staged binary.
  mkdir -p "$T/v"
  sed "s|/usr/bin/pfi|$D/usr/bin/pfi|" "$u" > "$T/v/$name"
  (cd "$T/v" && systemd-analyze verify --man=no "./$name") > "$T/verify.out" 2>&1 ||
    fail "systemd-analyze verify $name: $(cat "$T/verify.out")"
  [ -s "$T/verify.out" ] && fail "systemd-analyze verify $name says: $(cat "$T/verify.out")"
  # Restart=on-failure must not retry bad input for ever: the exit status the unit does not
  # restart on is the one its command gives for bad input.
  # (pfi serve: an unknown setting, and a network listen without allow_remote.)
  grep -q '^Restart=on-failure$' "$u" || fail "$name: not Restart=on-failure"
  for input in 'no_such_setting = 1' 'listen = 0.0.0.0:9455'; do
    case $name in
    pfi-serve.service) printf '%s\nbackend = sim\ndb = %s/bad.db\n' "$input" "$T" > "$T/bad.conf"
      "$D/usr/bin/pfi" serve --config "$T/bad.conf" > "$T/bad.out" 2>&1 ;;
    *) "$D/usr/bin/pfi" cluster serve --no-such-option > "$T/bad.out" 2>&1 ;;
    esac
    st=$?
    grep -q "^RestartPreventExitStatus=\(.* \)\?$st\( .*\)\?$" "$u" ||
      fail "$name restarts after bad input (exit status $st: $(head -n 1 "$T/bad.out")) for ever"
  done
  e=$(exposure "$u")
  echo "$name: exposure $e"
  [ -n "$e" ] || { fail "no exposure level for $name: $(tail -n 3 "$T/sec.out")"; continue; }
  awk -v e="$e" 'BEGIN { exit !(e <= 4.0) }' || {
    grep '✗' "$T/sec.out" | head -n 20; fail "$name: exposure $e is above 4.0"; }
done
# pfi-serve follows jobs' logs in users' 0700 directories under /home and in the host's /tmp:
# the unit must let it read them, and under SecureBits=noroot a capability reaches the process
# only as an ambient one (setpriv runs a shell with exactly the unit's sets: its effective set
# must hold CAP_SYS_ADMIN, bit 21, and CAP_DAC_READ_SEARCH, bit 2).
u=$(ls "$D"/lib/systemd/system/pfi-serve.service "$D"/usr/lib/systemd/system/pfi-serve.service 2>/dev/null | head -n 1)
if [ -n "$u" ]; then
  grep -qx 'ProtectHome=read-only' "$u" || fail "pfi-serve.service hides or does not protect /home: $(grep ProtectHome "$u")"
  grep -qx 'PrivateTmp=no' "$u" || fail "pfi-serve.service hides the host's /tmp: $(grep PrivateTmp "$u")"
  # The GPUs' device group is "nvidia" in /proc/devices since driver 550.40, "nvidia-frontend"
  # before: each name alone leaves one family of drivers without /dev/nvidiaN (DevicePolicy=closed).
  for g in char-nvidia char-nvidia-frontend; do
    grep -qx "DeviceAllow=$g rw" "$u" || fail "pfi-serve.service does not allow $g: $(grep DeviceAllow "$u" | tr '\n' ' ')"
  done
  caps() { sed -n "s/^$1=//p" "$u" | tr ' ' '\n' | sed -n 's/^CAP_//p' | tr 'A-Z' 'a-z' | sed 's/^/+/' | paste -sd, -; }
  bnd=$(caps CapabilityBoundingSet) amb=$(caps AmbientCapabilities)
  if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
    eff=$(setpriv --securebits +noroot,+noroot_locked --bounding-set "-all${bnd:+,$bnd}" \
      --inh-caps "-all${amb:+,$amb}" ${amb:+--ambient-caps "-all,$amb"} \
      sh -c 'sed -n "s/^CapEff:[[:space:]]*//p" /proc/self/status')
    [ -n "$eff" ] && [ $(( 0x$eff & 0x200004 )) -eq $(( 0x200004 )) ] ||
      fail "pfi-serve.service's capabilities (bounding '$bnd', ambient '$amb') give the daemon CapEff=$eff, not CAP_SYS_ADMIN and CAP_DAC_READ_SEARCH"
  else
    echo "not root or no setpriv: the unit's effective capabilities not checked"
  fi
fi
[ $n -eq 2 ] || fail "expected 2 units (pfi-serve, pfi-cluster), found $n"
exit $bad
