#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `make install` into a temporary DESTDIR, as a packager would, then use what it installed the way
# a user does: a C program built against the installed header with pkg-config's flags computes a
# PFI and an allocation; the installed pfi prints its version; `make uninstall` leaves nothing:
# no file, and no folder that install made (it left usr/bin, usr/share/man/man1, ...), while a
# folder that was there before stays, empty or not.
# Runs on the tree PFI_BIN belongs to (the ASan one too: the program then gets the same flags).
set -u
for t in make pkg-config cc nm; do
  command -v $t >/dev/null 2>&1 || { echo "FAIL: $t not found (scripts/install-deps.sh build)"; exit 1; }
done
name=it_install
. "$(dirname "$0")/support/tree_make.sh"
trap 'rm -rf "$T"' EXIT
D=$T/root
mk() { tree_make PREFIX=/usr DESTDIR="$D" "$@"; }

mkdir -p "$D/usr/share/man" # there before: uninstall keeps it
mk install > "$T/install.log" 2>&1 || { cat "$T/install.log"; echo "FAIL: make install"; exit 1; }
for f in usr/bin/pfi usr/lib/libpfi.so usr/lib/libpfi.so.0 usr/lib/libpfi.a usr/include/pfi/pfi.h \
         usr/include/pfi/core/alloc.h usr/lib/pkgconfig/pfi.pc usr/share/doc/pfi/LICENSE \
         usr/share/doc/pfi/examples/serve.conf usr/share/doc/pfi/examples/pfi-node.json \
         usr/share/doc/pfi/examples/pfi-site.json usr/share/doc/pfi/examples/pfi-alerts.yml \
         usr/share/doc/pfi/examples/prometheus.yml; do
  [ -e "$D/$f" ] || fail "not installed: /$f"
done
ls "$D"/lib/systemd/system/pfi-serve.service "$D"/usr/lib/systemd/system/pfi-serve.service \
  2>/dev/null | grep -q . || fail "no systemd unit installed"
[ -x "$D/usr/bin/pfi" ] || fail "/usr/bin/pfi is not executable"
# The unit runs the installed program, not a path nothing installs.
grep -h '^ExecStart=/usr/bin/pfi serve' "$D"/lib/systemd/system/pfi-serve.service \
  "$D"/usr/lib/systemd/system/pfi-serve.service 2>/dev/null | grep -q . ||
  fail "pfi-serve.service does not start /usr/bin/pfi"
grep -qx 'd /run/lock/pfi 0755 root root -' "$D"/usr/lib/tmpfiles.d/pfi.conf 2>/dev/null ||
  fail "no tmpfiles.d entry for root's folder of GPU locks (/usr/lib/tmpfiles.d/pfi.conf)"
# The Slurm scripts' slurm.conf lines name where they were installed (they said /usr/local/lib/pfi
# whatever the PREFIX), and no placeholder is left.
for wW in prolog:Prolog epilog:Epilog; do
  w=${wW%:*} W=${wW#*:}
  f=$D/usr/lib/pfi/pfi-$w.sh
  grep -q "$W=/usr/lib/pfi/pfi-$w.sh" "$f" 2>/dev/null || fail "/usr/lib/pfi/pfi-$w.sh does not say $W=/usr/lib/pfi/pfi-$w.sh"
  ! grep -qE '@[A-Z]+@|/usr/local' "$f" || fail "/usr/lib/pfi/pfi-$w.sh: $(grep -nE '@[A-Z]+@|/usr/local' "$f")"
done

# Only pfi_* names leave the shared library; its soname carries the ABI version.
so=$D/usr/lib/libpfi.so
other=$(nm -D --defined-only "$so" | awk '$3 !~ /^pfi_/' | head -n 5)
[ -z "$other" ] || fail "libpfi.so exports names without the pfi_ prefix: $other"
nm -D --defined-only "$so" | grep -q ' T pfi_alloc_solve$' || fail "pfi_alloc_solve not exported"
# Only what the installed headers declare: an internal (the warm allocator's keeper, the
# store) exported is an ABI the soname would have to keep.
for internal in pfi_alloc_keep_solve pfi_store_open pfi_srv_find_job; do
  ! nm -D --defined-only "$so" | grep -q " $internal\$" || fail "libpfi.so exports the internal $internal"
done
undeclared=$(nm -D --defined-only "$so" | awk '{ print $3 }' | while read -r s; do
  grep -rqw "$s" "$D/usr/include/pfi" || echo "$s"; done | head -n 5)
[ -z "$undeclared" ] || fail "libpfi.so exports names no installed header declares: $undeclared"
objdump -p "$so" 2>/dev/null | grep -q 'SONAME *libpfi\.so\.0$' || fail "soname is not libpfi.so.0"

# A program that knows nothing of the source tree.
# pkg-config as a packager's sysroot build sees it: only the staged tree.
pc() { PKG_CONFIG_PATH="$D/usr/lib/pkgconfig" PKG_CONFIG_LIBDIR="$D/usr/lib/pkgconfig" \
       PKG_CONFIG_SYSROOT_DIR="$D" pkg-config "$@"; }
pc --modversion pfi > "$T/ver" 2>&1 || fail "pkg-config does not find pfi: $(cat "$T/ver")"
flags=$(pc --cflags --libs pfi) || fail "pkg-config --cflags --libs pfi"
case "$flags" in *"$top/src"*) fail "pkg-config flags point into the source tree: $flags" ;; esac
[ -n "$san" ] && san="-fsanitize=address,undefined"
cp "$top/tests/install/use_pfi.c" "$T/"
# shellcheck disable=SC2086
(cd "$T" && cc -std=c11 -Wall -Wextra -Werror $san use_pfi.c $flags -lm -o use_pfi) \
  > "$T/cc.log" 2>&1 || { cat "$T/cc.log"; fail "the program does not build against the installed header"; }
if [ -x "$T/use_pfi" ]; then
  readelf -d "$T/use_pfi" | grep -q 'NEEDED.*libpfi\.so\.0' || fail "the program is not linked to libpfi.so.0"
  LD_LIBRARY_PATH="$D/usr/lib" "$T/use_pfi" > "$T/use.out" 2>&1 || fail "the program failed: $(cat "$T/use.out")"
  grep -q '^PFI30 0.2400' "$T/use.out" || fail "wrong PFI30: $(cat "$T/use.out")"
  cat "$T/use.out"
  # The static library alone, as pkg-config --static gives it.
  # shellcheck disable=SC2086
  (cd "$T" && cc -std=c11 $san use_pfi.c -I"$D/usr/include" -I"$D/usr/include/pfi" \
     "$D/usr/lib/libpfi.a" $(pc --libs-only-other --libs-only-l --static pfi | sed 's/-lpfi//') \
     -lm -o use_static) > "$T/cc2.log" 2>&1 || { cat "$T/cc2.log"; fail "static link against libpfi.a"; }
  [ -x "$T/use_static" ] && { "$T/use_static" > /dev/null || fail "the static program failed"; }
fi

"$D/usr/bin/pfi" --version > "$T/version" 2>&1 || fail "installed pfi --version failed"
grep -q '^pfi [0-9][0-9.]*$' "$T/version" || fail "no version line: $(cat "$T/version")"
grep -q '^revision: ' "$T/version" || fail "no build information: $(cat "$T/version")"
"$D/usr/bin/pfi" -V | cmp -s - "$T/version" || fail "-V differs from --version"
head -n 1 "$T/version"

# A second install over the first makes no folder: uninstall still knows the first's.
mk install > "$T/install.log" 2>&1 || { cat "$T/install.log"; fail "make install (again)"; }
mk uninstall > "$T/uninstall.log" 2>&1 || { cat "$T/uninstall.log"; fail "make uninstall"; }
left=$(find "$D" ! -type d | head -n 10)
[ -z "$left" ] || fail "left after uninstall: $left"
left=$(cd "$D" && find . -mindepth 1 -type d | sort | tr '\n' ' ')
[ "$left" = "./usr ./usr/share ./usr/share/man " ] ||
  fail "folders after uninstall: $left(want the ones there before: ./usr ./usr/share ./usr/share/man)"
exit $bad
