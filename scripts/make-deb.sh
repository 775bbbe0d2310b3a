#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds pfi_<version>_<arch>.deb with Debian's own tools from a staged `make install`:
#   scripts/make-deb.sh BUILD VERSION        (what `make deb` runs; writes BUILD/pfi_*.deb)
# Libraries go to the multiarch directory, the SPANK plugin to Debian's Slurm plugin directory,
# the units to systemd's; dpkg-shlibdeps computes Depends; binaries are stripped, manual pages
# and the changelog compressed, as Debian policy asks.  The package's objects are built apart
# (BUILD/deb-obj) with Debian's hardening flags (dpkg-buildflags, every feature: stack
# protector, fortified libc calls, full RELRO bound at load): pfi serve runs as root behind an
# HTTP API.  The development build and its benchmarks keep their own flags.
set -eu
build=$1 version=$2
top=$(cd "$(dirname "$0")/.." && pwd)
for t in dpkg-deb dpkg-shlibdeps dpkg-architecture dpkg-buildflags strip gzip; do
  command -v $t >/dev/null 2>&1 || { echo "make-deb: $t not found (apt-get install dpkg-dev)" >&2; exit 1; }
done
umask 022
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
maint=${DEB_MAINTAINER:-$(git -C "$top" log -1 --format='%an <%ae>' 2>/dev/null || true)}
[ -n "$maint" ] || maint="pfi maintainers <pfi@example.org>"
when=$(git -C "$top" log -1 --format=%aD 2>/dev/null || date -R)
work=$build/deb
stage=$work/src/debian/pfi
rm -rf "$work"
mkdir -p "$stage"
stage=$(cd "$stage" && pwd)
obj=$build/deb-obj
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
CFLAGS="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)" \
LDFLAGS="$(dpkg-buildflags --get LDFLAGS)" \
  make -s -C "$top" BUILD="$obj" all "$obj/pfi.pc" >/dev/null
make -s -C "$top" BUILD="$obj" PREFIX=/usr LIBDIR="/usr/lib/$multiarch" DESTDIR="$stage" install >/dev/null
lib=$stage/usr/lib/$multiarch
doc=$stage/usr/share/doc/pfi

# Policy: stripped objects, a plugin is not executable, compressed manuals, the license in
# copyright (DEP-5) rather than a second copy, a changelog.
strip --remove-section=.comment --remove-section=.note "$stage/usr/bin/pfi"
strip --remove-section=.comment --remove-section=.note --strip-unneeded \
  "$lib/libpfi.so.$version" "$lib/slurm-wlm/pfi_spank.so"
strip --strip-debug --remove-section=.comment --enable-deterministic-archives "$lib/libpfi.a"
chmod 644 "$lib/slurm-wlm/pfi_spank.so"
find "$stage/usr/share/man" -type f -exec gzip -9n {} +
rm -f "$doc/LICENSE"
cat > "$doc/copyright" <<EOT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: pfi
Source: the pfi source tree

Files: *
Copyright: 2026 the pfi authors
License: Apache-2.0

License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License"); you may not use
 this file except in compliance with the License.  You may obtain a copy of the
 License at http://www.apache.org/licenses/LICENSE-2.0
 .
 On Debian systems, the complete text of the Apache License 2.0 can be found in
 /usr/share/common-licenses/Apache-2.0.
EOT
printf 'pfi (%s) unstable; urgency=medium\n\n  * Release %s.\n\n -- %s  %s\n' \
  "$version" "$version" "$maint" "$when" | gzip -9n > "$doc/changelog.gz"

# Depends from the ELF files themselves (libpfi.so.0 is this package's own).
mkdir -p "$work/src/debian"  # (dpkg-shlibdeps reads debian/control there)
printf 'Source: pfi\n\nPackage: pfi\nArchitecture: any\n' > "$work/src/debian/control"
mkdir -p "$stage/DEBIAN"   # (how dpkg-shlibdeps knows debian/pfi for the package's tree)
rel=debian/pfi/usr/lib/$multiarch
deps=$(cd "$work/src" && dpkg-shlibdeps -O -l"$rel" debian/pfi/usr/bin/pfi "$rel/libpfi.so.$version" \
         "$rel/slurm-wlm/pfi_spank.so" | sed -n 's/^shlibs:Depends=//p')
[ -n "$deps" ] || { echo "make-deb: dpkg-shlibdeps found no dependency" >&2; exit 1; }

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<EOT
Package: pfi
Version: $version
Architecture: $arch
Maintainer: $maint
Installed-Size: $size
Depends: $deps
Suggests: slurmd, prometheus
Section: admin
Priority: optional
Description: power flexibility of GPU training jobs: measure, predict, cap
 pfi characterizes a training job under a sweep of GPU power limits (NVML),
 computes its Power Flexibility Index (the throughput lost per power shed),
 predicts it from the telemetry of the job running normally, allocates power
 caps across jobs under a budget, and applies them safely: a node daemon with
 an HTTP API and Prometheus metrics (pfi serve), a site controller over Slurm
 (pfi cluster serve) and a SPANK plugin.  An embedded simulator of H100, H200,
 A100 and A40 GPUs stands in for hardware when asked.
 .
 The package also holds libpfi (shared and static), its C headers and
 pkg-config file.
EOT
printf 'libpfi 0 pfi (>= %s)\n' "$version" > "$stage/DEBIAN/shlibs"
printf 'activate-noawait ldconfig\n' > "$stage/DEBIAN/triggers"

# Maintainer scripts.  The package enables and starts nothing (a node needs its serve.conf and
# token first), but what the operator started must not outlive the package: removing it stops
# the daemons (each puts its GPUs' original limits back at a stop, or holds them under a site
# controller), then `pfi restore`, while the binary is still there, puts back what a held stop
# or a crash left journaled, so no GPU stays capped by a controller that is gone.  An upgrade
# restarts the daemons that run (a restart comes back at the limits held).  The daemons'
# state (/var/lib/pfi: database and audit log, a journal not restored; /var/lib/pfi-cluster)
# is the operator's: purging leaves it.
units="pfi-serve.service pfi-cluster.service"
cat > "$stage/DEBIAN/prerm" <<EOT
#!/bin/sh
set -e
if [ "\$1" = remove ]; then
    if [ -d /run/systemd/system ]; then
        deb-systemd-invoke stop $units >/dev/null || true
    fi
    if [ -e /var/lib/pfi/journal ]; then
        pfi restore --journal /var/lib/pfi/journal --backend nvml ||
            echo "pfi: GPU power limits not restored: run pfi restore before removing pfi" >&2
    fi
fi
EOT
cat > "$stage/DEBIAN/postinst" <<EOT
#!/bin/sh
set -e
if [ "\$1" = configure ] && [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
    if [ -n "\$2" ]; then
        deb-systemd-invoke restart $units >/dev/null || true
    fi
fi
EOT
cat > "$stage/DEBIAN/postrm" <<EOT
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
fi
EOT
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort |
   xargs md5sum) > "$stage/DEBIAN/md5sums"
chmod 644 "$stage/DEBIAN/"*
chmod 755 "$stage/DEBIAN/prerm" "$stage/DEBIAN/postinst" "$stage/DEBIAN/postrm"
out=$build/pfi_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
echo "$out"
