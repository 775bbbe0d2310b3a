#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds pfi's Debian packages with Debian's own tools from a staged `make install`:
#   scripts/make-deb.sh BUILD VERSION        (what `make deb` runs)
# writes BUILD/libpfi0_*.deb (the shared library), BUILD/libpfi-dev_*.deb (headers, static
# library, pkg-config file) and BUILD/pfi_*.deb (the command, daemons' units, SPANK plugin,
# manuals), one a line, pfi's last: the library and its development files in packages of
# their own, named as Debian's policy for libraries asks.
# Libraries go to the multiarch directory, the SPANK plugin to Debian's Slurm plugin directory,
# the units to systemd's; dpkg-shlibdeps computes Depends; binaries are stripped, manual pages
# and the changelog compressed, as Debian policy asks.  The package's objects are built apart
# (BUILD/deb-obj) with Debian's hardening flags (dpkg-buildflags, every feature: stack
# protector, fortified libc calls, full RELRO bound at load): pfi serve runs as root behind an
# HTTP API.  The development build and its benchmarks keep their own flags.
set -eu
build=$1 version=$2
top=$(cd "$(dirname "$0")/.." && pwd)
for t in dpkg-deb dpkg-shlibdeps dpkg-gensymbols dpkg-architecture dpkg-buildflags strip gzip; do
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
# The configuration's folder, so that the set-up the units and docs give (cp serve.conf there,
# install -m 600 the token) works before the first start; 0755 as ConfigurationDirectory= makes
# it, the token file itself 0600.
install -d -m 755 "$stage/etc/pfi"
copyright() { cat <<EOT
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
}
changelog() { # $1: the package
  printf '%s (%s) unstable; urgency=medium\n\n  * Release %s.\n\n -- %s  %s\n' \
    "$1" "$version" "$version" "$maint" "$when" | gzip -9n
}

# The library and its development files move to packages of their own.
libroot=$work/src/debian/libpfi0
devroot=$work/src/debian/libpfi-dev
rel=usr/lib/$multiarch
mkdir -p "$libroot/$rel" "$devroot/$rel" "$devroot/usr"
mv "$lib/libpfi.so.$version" "$lib/libpfi.so.0" "$libroot/$rel/"
mv "$lib/libpfi.so" "$lib/libpfi.a" "$lib/pkgconfig" "$devroot/$rel/"
mv "$stage/usr/include" "$devroot/usr/"
for p in pfi libpfi0 libpfi-dev; do
  d=$work/src/debian/$p/usr/share/doc/$p
  mkdir -p "$d"
  copyright > "$d/copyright"
  changelog "$p" > "$d/changelog.gz"
  mkdir -p "$work/src/debian/$p/DEBIAN"
done

# Depends from the ELF files themselves (dpkg-shlibdeps; libpfi.so.0 is libpfi0's own).
printf 'Source: pfi\n\nPackage: pfi\nArchitecture: any\n\nPackage: libpfi0\nArchitecture: any\n\nPackage: libpfi-dev\nArchitecture: any\n' \
  > "$work/src/debian/control"
shlibs() { # $1: the package, then its ELF files relative to its root
  p=$1
  shift
  (cd "$work/src" && dpkg-shlibdeps -O -ldebian/libpfi0/$rel $(for f in "$@"; do echo "debian/$p/$f"; done) |
     sed -n 's/^shlibs:Depends=//p')
}
deps=$(shlibs pfi usr/bin/pfi "$rel/slurm-wlm/pfi_spank.so")
libdeps=$(shlibs libpfi0 "$rel/libpfi.so.$version")
[ -n "$deps" ] && [ -n "$libdeps" ] || { echo "make-deb: dpkg-shlibdeps found no dependency" >&2; exit 1; }
size() { du -sk --exclude=DEBIAN "$1" | cut -f1; }

cat > "$stage/DEBIAN/control" <<EOT
Package: pfi
Version: $version
Architecture: $arch
Maintainer: $maint
Installed-Size: $(size "$stage")
Depends: $deps
Recommends: curl
Suggests: slurmd, prometheus, libpfi-dev
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
EOT
# The two library packages' long description: what libpfi is, then what each holds.
libdesc=" libpfi holds pfi's curves, Power Flexibility Index, prediction and exact
 power-cap allocation under a budget, with its measurement, store and
 simulator layers, for programs that link to it."
cat > "$libroot/DEBIAN/control" <<EOT
Package: libpfi0
Source: pfi
Version: $version
Architecture: $arch
Multi-Arch: same
Maintainer: $maint
Installed-Size: $(size "$libroot")
Depends: $libdeps
Section: libs
Priority: optional
Description: power flexibility of GPU training jobs: shared library
$libdesc
 .
 This package holds the shared library.
EOT
cat > "$devroot/DEBIAN/control" <<EOT
Package: libpfi-dev
Source: pfi
Version: $version
Architecture: $arch
Multi-Arch: same
Maintainer: $maint
Installed-Size: $(size "$devroot")
Depends: libpfi0 (= $version), libsqlite3-dev, libgsl-dev, libjansson-dev, libmicrohttpd-dev, libcurl4-openssl-dev | libcurl-dev
Section: libdevel
Priority: optional
Description: power flexibility of GPU training jobs: development files
$libdesc
 .
 This package holds the C headers, the static library and the pkg-config file.
EOT
printf 'libpfi 0 libpfi0 (>= %s)\n' "$version" > "$libroot/DEBIAN/shlibs"
# Its exported symbols (those of the public headers: scripts/libpfi-map.sh), each since this version, for dpkg-shlibdeps of the
# programs that link to it.
(cd "$work/src" && dpkg-gensymbols -q -plibpfi0 -v"$version" -Pdebian/libpfi0 \
   -edebian/libpfi0/$rel/libpfi.so.$version -Odebian/libpfi0/DEBIAN/symbols)
sed -i '1a * Build-Depends-Package: libpfi-dev' "$libroot/DEBIAN/symbols"
printf 'activate-noawait ldconfig\n' > "$libroot/DEBIAN/triggers"

# Maintainer scripts.  The package enables and starts nothing (a node needs its serve.conf and
# token first), but what the operator started must not outlive the package: removing it stops
# the daemons (each puts its GPUs' original limits back at a stop, or holds them under a site
# controller), then `pfi restore`, while the binary is still there, puts back what a held stop
# or a crash left journaled, so no GPU stays capped by a controller that is gone; when it
# cannot, the removal stops (PFI_FORCE_REMOVE=1 goes on).  The journal and NVML library are
# serve.conf's when it sets them.  An upgrade
# restarts the daemons that run, and only those: try-restart, since `restart`
# (deb-systemd-invoke's too, for an enabled unit) starts a daemon the operator had stopped.
# pfi-serve's restart is a held one: the postinst writes JOURNAL.hold-next-stop first, so the
# stop holds the limits and the start takes them and their budget or caps back (on_stop = auto
# restored a standalone node's originals, and resume = no brought it back without its budget).
# The journal is serve.conf's `journal` when it sets one.  The daemons'
# state (/var/lib/pfi: database and audit log, a journal not restored; /var/lib/pfi-cluster)
# is the operator's: purging leaves it.
units="pfi-serve.service pfi-cluster.service"
# conf KEY DEFAULT: KEY's value in /etc/pfi/serve.conf, read as pfi serve reads it (key = value,
# '#' to the end of a line, surrounding double quotes; the last one counts), else DEFAULT.
conf_fn=$(cat <<'EOT'
conf() {
    v=""
    if [ -r /etc/pfi/serve.conf ]; then
        v=$(sed -n -e 's/#.*//' -e "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*//p" /etc/pfi/serve.conf |
            tail -n 1 | sed -e 's/[[:space:]]*$//' -e 's/^"\(.*\)"$/\1/')
    fi
    echo "${v:-$2}"
}
EOT
)
cat > "$stage/DEBIAN/prerm" <<EOT
#!/bin/sh
set -e
$conf_fn
if [ "\$1" = remove ]; then
    # Under a site controller (mode external; safe once its heartbeats stopped) this node's caps
    # are the site's budget: the stop and the restore below would put the GPUs back to their
    # original limits, and the site over that budget, while the controller still counts them at
    # its caps.  The removal stops until the node is out of the controller's plan.
    # Asked where the daemon listens: serve.conf's listen, else where pfi ctl looks by default
    # (the packaged socket when it exists, else the daemon's default 127.0.0.1:9455; asking the
    # socket alone missed a daemon on its default and went on to the restore).
    listen=\$(conf listen "")
    case "\$listen" in "") url="" ;; unix:*) url=\$listen ;; *) url=http://\$listen ;; esac
    mode=\$(timeout 10 pfi ctl \${url:+--url "\$url"} health 2>/dev/null |
        sed -n 's/.*"mode": *"\\([a-z]*\\)".*/\\1/p' | head -n 1) || true
    # A daemon that runs and does not answer may hold a controller's caps: not known, not removed.
    if [ -z "\$mode" ] && [ -d /run/systemd/system ] && systemctl --quiet is-active pfi-serve.service 2>/dev/null; then
        mode=unknown
    fi
    case "\$mode" in
    unknown)
        if [ "\${PFI_FORCE_REMOVE:-0}" = 1 ]; then
            echo "pfi: pfi serve runs but did not answer (\${url:-pfi ctl's default address}); removing pfi anyway (PFI_FORCE_REMOVE=1): this node's GPUs go back to their original limits" >&2
        else
            echo "pfi: pfi serve runs but did not answer (\${url:-pfi ctl's default address}): whether a site controller holds its caps is not known, and removing pfi would put this node's GPUs back to their original limits. pfi is not removed. Check the daemon (systemctl status pfi-serve), or PFI_FORCE_REMOVE=1 removes pfi all the same" >&2
            exit 1
        fi
        ;;
    external|safe)
        if [ "\${PFI_FORCE_REMOVE:-0}" = 1 ]; then
            echo "pfi: pfi serve holds caps a site controller set (mode \$mode); removing pfi anyway (PFI_FORCE_REMOVE=1): this node's GPUs go back to their original limits" >&2
        else
            echo "pfi: pfi serve holds caps a site controller set (mode \$mode): removing pfi would put this node's GPUs back to their original limits and the site over its budget. pfi is not removed. Release the node first: with the controller stopped (or the node out of its plan), pfi ctl budget clear returns it to its own limits; or PFI_FORCE_REMOVE=1 removes pfi all the same" >&2
            exit 1
        fi
        ;;
    esac
    if [ -d /run/systemd/system ]; then
        deb-systemd-invoke stop $units >/dev/null || true
    fi
    # A journal that cannot be restored stops the removal: once pfi is gone, nothing puts the
    # originals back and the GPUs stay capped.  PFI_FORCE_REMOVE=1 removes it all the same.
    journal=\$(conf journal /var/lib/pfi/journal)
    lib=\$(conf nvml_lib "")
    if [ -e "\$journal" ] && ! pfi restore --journal "\$journal" --backend nvml \${lib:+--nvml-lib "\$lib"}; then
        if [ "\${PFI_FORCE_REMOVE:-0}" = 1 ]; then
            echo "pfi: GPU power limits not restored from \$journal; removing pfi anyway (PFI_FORCE_REMOVE=1): the GPUs keep their present limits" >&2
        else
            echo "pfi: GPU power limits not restored from \$journal (pfi restore said why, above): pfi is not removed, so that pfi restore --journal \$journal can put them back once that is fixed; PFI_FORCE_REMOVE=1 removes it all the same" >&2
            exit 1
        fi
    fi
fi
EOT
cat > "$stage/DEBIAN/postinst" <<EOT
#!/bin/sh
set -e
$conf_fn
if [ "\$1" = configure ] && [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
    if [ -n "\$2" ]; then
        # A held restart (pfi-serve.conf(5), on_stop): the stop keeps the limits, the start takes
        # them and the budget back.  Only for a daemon that runs: one that does not would find a
        # file meant for no one (its start removes it all the same).
        if systemctl --quiet is-active pfi-serve.service 2>/dev/null; then
            touch "\$(conf journal /var/lib/pfi/journal).hold-next-stop" || true
        fi
        deb-systemd-invoke try-restart $units >/dev/null || true
        # A restart done took the marker (its stop and its start); one policy-rc.d refused left
        # it, and the next plain stop held the caps with nothing left to take them back.
        rm -f "\$(conf journal /var/lib/pfi/journal).hold-next-stop"
    fi
fi
# Records the units' enablement (as dh_installsystemd's postinst does), so that the postrm's
# purge removes the links of units the operator enabled: with no state recorded it left them
# dangling.
if [ "\$1" = configure ] && command -v deb-systemd-helper >/dev/null 2>&1; then
    deb-systemd-helper update-state $units >/dev/null || true
fi
EOT
cat > "$stage/DEBIAN/postrm" <<EOT
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
fi
# Units the operator enabled leave no dangling links (what dh_installsystemd's postrm does).
if [ "\$1" = purge ] && command -v deb-systemd-helper >/dev/null 2>&1; then
    deb-systemd-helper purge $units >/dev/null || true
fi
EOT
chmod 755 "$stage/DEBIAN/prerm" "$stage/DEBIAN/postinst" "$stage/DEBIAN/postrm"
for p in libpfi0 libpfi-dev pfi; do
  root=$work/src/debian/$p
  (cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort |
     xargs md5sum) > "$root/DEBIAN/md5sums"
  for f in "$root/DEBIAN/"*; do
    case ${f##*/} in prerm|postinst|postrm) chmod 755 "$f" ;; *) chmod 644 "$f" ;; esac
  done
  out=$build/${p}_${version}_${arch}.deb
  dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
  echo "$out"
done
