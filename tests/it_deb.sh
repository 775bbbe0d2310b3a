#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `make deb`: three packages (pfi; libpfi0, the shared library; libpfi-dev, its development
# files) with the right names, version, architecture and dependencies (from dpkg-shlibdeps;
# libpfi-dev on exactly this libpfi0, which carries shlibs and symbols), each file in its
# package, lintian reports no error and no warning, and as root they install with dpkg, `pfi
# --version` and `pfi gpus --backend sim` run from /usr/bin, the library is found by ldconfig
# and pkg-config, the installed unit verifies, and removing them leaves none of their files;
# pfi's maintainer scripts stop the daemons and restore their journal at removal.  Not root:
# everything but the installation runs, then the test counts as skipped (exit 77).
set -u
for t in make dpkg-deb dpkg-shlibdeps lintian; do
  command -v $t >/dev/null 2>&1 || { echo "FAIL: $t not found (scripts/install-deps.sh test)"; exit 1; }
done
name=it_deb
. "$(dirname "$0")/support/tree_make.sh"
installed=0
cleanup() {
  [ $installed -eq 1 ] && dpkg --purge pfi libpfi-dev libpfi0 > /dev/null 2>&1
  rm -rf "$T"
}
trap cleanup EXIT

tree_make deb > "$T/make.log" 2>&1 ||
  { cat "$T/make.log"; echo "FAIL: make deb"; exit 1; }
version=$("$bin" --version | sed -n 's/^pfi //p')
arch=$(dpkg --print-architecture)
debs="$build/libpfi0_${version}_${arch}.deb $build/libpfi-dev_${version}_${arch}.deb $build/pfi_${version}_${arch}.deb"
[ "$(tail -n 3 "$T/make.log" | tr '\n' ' ')" = "$debs " ] ||
  fail "make deb wrote '$(tail -n 3 "$T/make.log" | tr '\n' ' ')', expected $debs"
deb=$build/pfi_${version}_${arch}.deb
for d in $debs; do
  [ -f "$d" ] || { echo "FAIL: no package $d"; exit 1; }
done
field() { dpkg-deb -f "$build/${1}_${version}_${arch}.deb" "$2"; }
for p in pfi libpfi0 libpfi-dev; do
  [ "$(field $p Package)" = $p ] || fail "$p: Package: $(field $p Package)"
  [ "$(field $p Version)" = "$version" ] || fail "$p: Version: $(field $p Version), pfi says $version"
  [ "$(field $p Architecture)" = "$arch" ] || fail "$p: Architecture: $(field $p Architecture)"
done
for d in libc6 libsqlite3-0 libgsl27 libjansson4 libmicrohttpd12 libcurl4; do
  field pfi Depends | grep -q "\b$d\b" || fail "pfi: Depends lacks $d: $(field pfi Depends)"
  field libpfi0 Depends | grep -q "\b$d\b" || fail "libpfi0: Depends lacks $d: $(field libpfi0 Depends)"
done
field libpfi-dev Depends | grep -q "^libpfi0 (= $version)" ||
  fail "libpfi-dev does not depend on this libpfi0: $(field libpfi-dev Depends)"
dpkg-deb -I "$build/libpfi0_${version}_${arch}.deb" shlibs | grep -qx "libpfi 0 libpfi0 (>= $version)" ||
  fail "libpfi0's shlibs: $(dpkg-deb -I "$build/libpfi0_${version}_${arch}.deb" shlibs)"
dpkg-deb -I "$build/libpfi0_${version}_${arch}.deb" symbols | grep -q '^ pfi_alloc_solve@Base' ||
  fail "libpfi0's symbols lack pfi_alloc_solve"
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
# Each file in its package (dpkg-deb -c shows a symlink as "name -> target": its name only).
infile() { # package, then the files it must hold
  p=$1
  shift
  dpkg-deb -c "$build/${p}_${version}_${arch}.deb" | awk '{ print $6 }' | sed 's|^\./|/|' > "$T/files.$p"
  for f in "$@" /usr/share/doc/$p/copyright /usr/share/doc/$p/changelog.gz; do
    grep -qx "$f" "$T/files.$p" || fail "$p lacks $f"
  done
}
infile pfi /usr/bin/pfi /usr/lib/$ma/slurm-wlm/pfi_spank.so \
  /lib/systemd/system/pfi-serve.service /lib/systemd/system/pfi-cluster.service \
  /usr/lib/tmpfiles.d/pfi.conf /usr/share/man/man1/pfi.1.gz /usr/share/man/man5/pfi-serve.conf.5.gz
infile libpfi0 /usr/lib/$ma/libpfi.so.$version /usr/lib/$ma/libpfi.so.0
infile libpfi-dev /usr/lib/$ma/libpfi.a /usr/lib/$ma/libpfi.so /usr/include/pfi/pfi.h \
  /usr/lib/$ma/pkgconfig/pfi.pc
# /etc/pfi, so that the documented `cp ... /etc/pfi/serve.conf` works before the first start.
grep -qx '/etc/pfi/' "$T/files.pfi" || fail "pfi does not ship /etc/pfi"
[ "$(field pfi Recommends)" = curl ] || fail "pfi: Recommends: '$(field pfi Recommends)', not curl (the Slurm scripts need it)"
grep -q 'libpfi\|/usr/include' "$T/files.pfi" &&
  fail "pfi holds library files: $(grep 'libpfi\|/usr/include' "$T/files.pfi" | head -n 3)"
cat "$T/files.pfi" "$T/files.libpfi0" "$T/files.libpfi-dev" > "$T/files"

lintian -I --fail-on error --tag-display-limit 0 $debs > "$T/lintian" 2>&1
rc=$?
grep -v 'root privileges' "$T/lintian"
[ $rc -eq 0 ] || fail "lintian reports errors (exit $rc)"
grep -q '^[EW]:' "$T/lintian" && fail "lintian: $(grep '^[EW]:' "$T/lintian" | head -n 3)"
# Built with Debian's hardening flags (make-deb.sh): lintian names any binary without them.
grep -q 'hardening-no-' "$T/lintian" && fail "not hardened: $(grep 'hardening-no-' "$T/lintian" | head -n 3)"
grep -q 'static-library-has-unneeded-sections' "$T/lintian" && fail "libpfi.a keeps sections it does not need"

# The maintainer scripts, run as dpkg would with every command they call recorded (the paths
# of systemd's run directory, of the daemons' state and of /etc/pfi moved under $T): removing
# stops both units and then restores a journal left behind, in that order; an upgrade's prerm
# does nothing and its postinst restarts the units that run (try-restart: with Debian's own
# deb-systemd-invoke and both units enabled but stopped, no systemctl call starts one), a
# held restart for a pfi-serve that is active (JOURNAL.hold-next-stop written before the
# try-restart, at serve.conf's journal when it sets one; none for one that is not); a restore
# that fails stops the removal unless PFI_FORCE_REMOVE=1; purging runs deb-systemd-helper purge
# and leaves the daemons' state.
dpkg-deb -e "$deb" "$T/ctl" || fail "dpkg-deb -e"
mkdir -p "$T/stub" "$T/run/systemd/system"
# deb-systemd-helper too: the real one, found on PATH, would record the units' state in this
# machine's /var/lib/systemd.
for c in deb-systemd-invoke systemctl pfi deb-systemd-helper systemd-tmpfiles; do
  printf '#!/bin/sh\necho "%s $*" >> "%s"\n' "$c" "$T/calls" > "$T/stub/$c"
  chmod 755 "$T/stub/$c"
done
stub_pfi() { # the daemon's mode that pfi ctl health answers ("": no answer)
  if [ -n "$1" ]; then
    printf '#!/bin/sh\necho "pfi $*" >> "%s"\ncase " $* " in *" health "*) printf '"'"'{\\n  "status": "ok",\\n  "mode": "%s"\\n}\\n'"'"' ;; esac\n' \
      "$T/calls" "$1" > "$T/stub/pfi"
  else
    printf '#!/bin/sh\necho "pfi $*" >> "%s"\n' "$T/calls" > "$T/stub/pfi"
  fi
}
stub_pfi local
# script, then its arguments: its exit status; the commands it ran, one a line, in $T/calls,
# its output in $T/SCRIPT.out
maint_run() {
  s=$1
  shift
  : > "$T/calls"
  [ -x "$T/ctl/$s" ] || { fail "no executable $s in the package"; return 1; }
  sed -e "s|/run/systemd/system|$T/run/systemd/system|g" -e "s|/var/lib/pfi|$T/var/lib/pfi|g" \
    -e "s|/etc/pfi|$T/etc/pfi|g" -e "s|/run/lock/pfi|$T/run/lock/pfi|g" "$T/ctl/$s" > "$T/$s.sh"
  PATH="$T/stub:$PATH" PFI_FORCE_REMOVE="${force:-0}" sh -e "$T/$s.sh" "$@" > "$T/$s.out" 2>&1
}
forced() { # maint_run with PFI_FORCE_REMOVE=1
  force=1
  maint_run "$@"
  st=$?
  force=0
  return $st
}
maint() { # the same, which must succeed
  maint_run "$@" || fail "$*: $(cat "$T/$1.out")"
}
units="pfi-serve.service pfi-cluster.service"
mkdir -p "$T/var/lib/pfi" "$T/var/lib/pfi-cluster"
touch "$T/var/lib/pfi/journal" "$T/var/lib/pfi/pfi.db"
maint prerm remove
printf 'pfi ctl health\nsystemctl --quiet is-active pfi-serve.service\ndeb-systemd-invoke stop %s\npfi restore --journal %s --backend nvml\n' "$units" \
  "$T/var/lib/pfi/journal" | grep -v 'is-active' | cmp -s - "$T/calls" || fail "prerm remove ran: $(cat "$T/calls")"
# The daemon is asked where serve.conf says it listens, else where pfi ctl looks by default
# (the socket alone was asked, and a daemon on its default 127.0.0.1:9455 was not found); one
# that runs and does not answer stops the removal (unless PFI_FORCE_REMOVE=1).
mkdir -p "$T/etc/pfi"
echo 'listen = 127.0.0.1:9455' > "$T/etc/pfi/serve.conf"
maint prerm remove
grep -qx 'pfi ctl --url http://127.0.0.1:9455 health' "$T/calls" ||
  fail "prerm remove did not ask serve.conf's listen: $(cat "$T/calls")"
rm -f "$T/etc/pfi/serve.conf"
stub_pfi ""
maint_run prerm remove
st=$?
[ $st = 1 ] && grep -q "pfi serve runs but did not answer.*pfi is not removed" "$T/prerm.out" ||
  fail "prerm remove, a running daemon that does not answer: exit $st: $(cat "$T/prerm.out")"
grep -q 'restore\|stop' "$T/calls" && fail "prerm remove, a daemon that does not answer: went on: $(cat "$T/calls")"
forced prerm remove ||
  fail "prerm remove, no answer, PFI_FORCE_REMOVE=1: exit $?: $(cat "$T/prerm.out")"
grep -q 'pfi restore' "$T/calls" || fail "PFI_FORCE_REMOVE=1, no answer, did not restore: $(cat "$T/calls")"
# A node under a site controller (its daemon in mode external, or safe) is not removed: the
# restore would take the site over its budget.  PFI_FORCE_REMOVE=1 removes it all the same.
for m in external safe; do
  cat > "$T/stub/pfi" <<EOS
#!/bin/sh
echo "pfi \$*" >> "$T/calls"
case " \$* " in *" health "*) printf '{\n  "status": "ok",\n  "mode": "$m",\n  "budget_w": 4000.0\n}\n' ;; esac
EOS
  maint_run prerm remove
  st=$?
  [ $st = 1 ] && grep -q "site controller set (mode $m).*pfi is not removed.*pfi ctl budget clear" "$T/prerm.out" ||
    fail "prerm remove under a controller ($m): exit $st: $(cat "$T/prerm.out")"
  grep -q 'restore\|stop' "$T/calls" && fail "prerm remove under a controller ($m) went on: $(cat "$T/calls")"
  forced prerm remove ||
    fail "prerm remove under a controller, PFI_FORCE_REMOVE=1: exit $?: $(cat "$T/prerm.out")"
  grep -q 'pfi restore' "$T/calls" || fail "PFI_FORCE_REMOVE=1 under a controller did not restore: $(cat "$T/calls")"
done
stub_pfi local
# A restore that fails stops the removal (exit 1), unless PFI_FORCE_REMOVE=1; the journal and
# the NVML library are serve.conf's when it sets them.
printf '#!/bin/sh\necho "pfi $*" >> "%s"\ncase " $* " in *" health "*) echo "\\"mode\\": \\"local\\"" ; exit 0 ;; esac\necho "pfi restore: no GPU" >&2\nexit 1\n' "$T/calls" > "$T/stub/pfi"
maint_run prerm remove
st=$?
[ $st = 1 ] && grep -q "pfi is not removed" "$T/prerm.out" ||
  fail "prerm remove with a failing restore: exit $st: $(cat "$T/prerm.out")"
forced prerm remove ||
  fail "prerm remove, PFI_FORCE_REMOVE=1: exit $?: $(cat "$T/prerm.out")"
stub_pfi local
mkdir -p "$T/etc/pfi"
printf 'journal = %s/j3  # moved\nnvml_lib = "/opt/nv/libnvidia-ml.so.1"\n' "$T" > "$T/etc/pfi/serve.conf"
touch "$T/j3"
maint prerm remove
grep -qx "pfi restore --journal $T/j3 --backend nvml --nvml-lib /opt/nv/libnvidia-ml.so.1" "$T/calls" ||
  fail "prerm remove does not restore serve.conf's journal with its nvml_lib: $(cat "$T/calls")"
rm -f "$T/etc/pfi/serve.conf" "$T/j3"
maint prerm upgrade "$version"
[ -s "$T/calls" ] && fail "prerm upgrade ran: $(cat "$T/calls")"
maint postinst configure ""
grep -qx 'systemctl --system daemon-reload' "$T/calls" || fail "postinst configure: $(cat "$T/calls")"
grep -q restart "$T/calls" && fail "a first install restarts: $(cat "$T/calls")"
# Root's folder of GPU locks is made at boot (tmpfiles.d, before any user runs) or by pfi, not
# by the postinst: systemd-tmpfiles made a folder a user had made first root's, with its
# entries, and moving it aside as root in the world-writable /run/lock was itself a hole.
grep -q 'systemd-tmpfiles' "$T/calls" && fail "postinst configure runs systemd-tmpfiles: $(cat "$T/calls")"
# The stub systemctl says every unit is active: the try-restart is a held one, asked before.
marker=$T/var/lib/pfi/journal.hold-next-stop
printf '#!/bin/sh\necho "deb-systemd-invoke $*" >> "%s"\n[ -e "%s" ] && echo "(held restart asked)" >> "%s"\nexit 0\n' \
  "$T/calls" "$marker" "$T/calls" > "$T/stub/deb-systemd-invoke"
maint postinst configure "$version"
grep -qx "deb-systemd-invoke try-restart $units" "$T/calls" || fail "postinst upgrade: $(cat "$T/calls")"
grep -qx "(held restart asked)" "$T/calls" || fail "postinst upgrade: no $marker before the try-restart: $(cat "$T/calls")"
# ...and gone after it: a restart that policy-rc.d refused left it, and the next plain stop
# held the caps with no daemon to take them back.
[ -e "$marker" ] && fail "postinst upgrade leaves $marker after the try-restart"
grep -qx "deb-systemd-helper update-state $units" "$T/calls" ||
  fail "postinst does not record the units' state for the purge: $(cat "$T/calls")"
rm -f "$marker"
mkdir -p "$T/etc/pfi"
printf 'listen = unix:/run/pfi/serve.sock\njournal = "%s" # moved\n' "$T/j2" > "$T/etc/pfi/serve.conf"
printf '#!/bin/sh\necho "deb-systemd-invoke $*" >> "%s"\n[ -e "%s" ] && echo "(held restart asked at j2)" >> "%s"\nexit 0\n' \
  "$T/calls" "$T/j2.hold-next-stop" "$T/calls" > "$T/stub/deb-systemd-invoke"
maint postinst configure "$version"
grep -qx "(held restart asked at j2)" "$T/calls" && [ ! -e "$marker" ] ||
  fail "postinst upgrade: the held restart is not asked at serve.conf's journal $T/j2: $(cat "$T/calls")"
rm -f "$T/j2.hold-next-stop" "$T/etc/pfi/serve.conf"
printf '#!/bin/sh\necho "%s $*" >> "%s"\n' deb-systemd-invoke "$T/calls" > "$T/stub/deb-systemd-invoke"
if [ -x /usr/bin/deb-systemd-invoke ]; then
  # The real one (policy-rc.d hidden through DPKG_ROOT), over a systemctl that says both units
  # are enabled and inactive.
  rm "$T/stub/deb-systemd-invoke"
  printf '#!/bin/sh\necho "systemctl $*" >> "%s"\ncase " $* " in *" is-enabled "*) echo enabled ;; *" is-active "*) exit 3 ;; esac\nexit 0\n' \
    "$T/calls" > "$T/stub/systemctl"
  export DPKG_ROOT="$T/nonexistent"
  maint postinst configure "$version"
  unset DPKG_ROOT
  grep -q ' try-restart ' "$T/calls" || fail "postinst upgrade, real deb-systemd-invoke: $(cat "$T/calls")"
  grep -Eq ' (re)?start ' "$T/calls" && fail "an upgrade starts stopped units: $(cat "$T/calls")"
  [ -e "$marker" ] && fail "postinst upgrade asks a held restart of a pfi-serve that is not active"
  for c in deb-systemd-invoke systemctl; do
    printf '#!/bin/sh\necho "%s $*" >> "%s"\n' "$c" "$T/calls" > "$T/stub/$c"
    chmod 755 "$T/stub/$c"
  done
fi
printf '#!/bin/sh\necho "deb-systemd-helper $*" >> "%s"\n' "$T/calls" > "$T/stub/deb-systemd-helper"
chmod 755 "$T/stub/deb-systemd-helper"
maint postrm purge
grep -qx 'systemctl --system daemon-reload' "$T/calls" || fail "postrm purge: $(cat "$T/calls")"
grep -qx "deb-systemd-helper purge $units" "$T/calls" || fail "postrm purge leaves the units' enablement: $(cat "$T/calls")"
[ -e "$T/var/lib/pfi/pfi.db" ] && [ -e "$T/var/lib/pfi-cluster" ] || fail "purge deleted the state"

if [ "$(id -u)" -ne 0 ]; then
  echo "not root: the package was built and checked, but installing it needs root"
  [ $bad -eq 0 ] && exit 77
  exit $bad
fi
for p in pfi libpfi0 libpfi-dev; do
  if dpkg-query -W -f='${Status}' $p 2>/dev/null | grep -q 'install ok installed'; then
    echo "FAIL: a $p package is installed already; this test would replace it"; exit 1
  fi
done
# dpkg takes a lock; another installation may hold it for a moment.
try=0
until dpkg -i $debs > "$T/dpkg.log" 2>&1; do
  try=$((try + 1))
  if [ $try -ge 20 ] || ! grep -q 'lock' "$T/dpkg.log"; then
    cat "$T/dpkg.log"; echo "FAIL: dpkg -i"; exit 1
  fi
  sleep 3
done
installed=1
/usr/bin/pfi --version > "$T/v" 2>&1 || fail "installed pfi --version: $(cat "$T/v")"
head -n 1 "$T/v" | grep -qx "pfi $version" || fail "installed pfi --version says $(head -n 1 "$T/v")"
/usr/bin/pfi gpus --backend sim > "$T/gpus" 2>&1 || fail "pfi gpus --backend sim: $(cat "$T/gpus")"
grep -q 'H200' "$T/gpus" || fail "pfi gpus --backend sim lists no simulated H200: $(cat "$T/gpus")"
ldconfig -p | grep -q 'libpfi\.so\.0 ' || fail "ldconfig does not know libpfi.so.0"
[ "$(pkg-config --modversion pfi 2>/dev/null)" = "$version" ] || fail "pkg-config does not find the installed pfi"
if command -v systemd-analyze >/dev/null 2>&1; then
  systemd-analyze verify --man=no /lib/systemd/system/pfi-serve.service > "$T/verify" 2>&1 ||
    fail "installed pfi-serve.service: $(cat "$T/verify")"
fi
dpkg --purge pfi libpfi-dev libpfi0 > "$T/purge.log" 2>&1 || fail "dpkg --purge: $(cat "$T/purge.log")"
installed=0
for p in pfi libpfi0 libpfi-dev; do
  dpkg-query -W -f='${Status}' $p 2>/dev/null | grep -q 'installed' && fail "$p still installed"
done
while read -r f; do
  [ -d "$f" ] && continue
  [ -e "$f" ] || [ -L "$f" ] && fail "left after removal: $f"
done < "$T/files"
[ $bad -eq 0 ] && echo "pfi, libpfi0, libpfi-dev ${version}: built, lintian clean of errors and warnings, installed, ran, removed"
exit $bad
