#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# buildroot.sh KERNEL CACHE KMAKE: the toolchain and headers for building
# out-of-tree modules against a kernel the host cannot build for.
#
# Debian 13's 7.3 kbuild tools (modpost, objtool, ...) need glibc >= 2.38
# and the kernel was built with gcc-14; Debian 12 has glibc 2.36 and
# gcc-12.  So modules for it are built inside a minimal Debian 13 root
# (debootstrap --variant=minbase + gcc-14, make, libc6-dev and the kbuild
# tools' libraries), cached in CACHE/buildroot-trixie/ and keyed by its
# package list.  The kernel's headers (linux-headers-KVER, -common,
# linux-kbuild) are unpacked with dpkg-deb into CACHE/KVER/headers/ and
# their absolute paths repointed there, so configure on the host sees the
# same tree Kbuild sees in the root.
#
# KMAKE (a path) is written as the make wrapper for that kernel: it runs
# make in the root
# in a private mount namespace (unshare -m) with the source tree, the build
# tree and the cache bind-mounted at their host paths, so every absolute
# path the build uses means the same file inside and outside.  It names
# this build tree, so it lives in the build tree, not in the shared cache.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/kernels.sh"
kernel=$1
cache=$2
kmake=$3
rc_kernel_info "$kernel"
. "$here/apt.sh"
: "${RC_SRCDIR:=$(cd "$here/../.." && pwd)}"
: "${RC_BUILDDIR:?}"

die() { echo "buildroot: $kernel: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "building the $kernel module needs root (debootstrap, chroot)"
[ -n "$KHDRS" ] || die "kernel $kernel builds with the host toolchain"

kdir=$cache/$KVER
root=$cache/buildroot-$KAPT
# What Kbuild runs for an external module: the compiler, make, and the
# libraries linux-kbuild's tools link to; pahole for module BTF.
pkgs="gcc-14 make libc6-dev libelf1t64 libssl3t64 zlib1g pahole xz-utils"

mkdir -p "$cache" "$kdir"
exec 9>"$cache/buildroot-$KAPT.lock"
flock 9

if [ "$(cat "$root/.rc-ready" 2>/dev/null)" != "$pkgs" ]; then
	command -v debootstrap >/dev/null 2>&1 ||
		die "debootstrap not found (apt-get install debootstrap)"
	mirror=$(rc_mirror)
	echo "buildroot: debootstrap $KAPT into $root ($pkgs)"
	rm -rf "$root.new"
	t0=$(date +%s)
	debootstrap --variant=minbase --include="$(echo "$pkgs" | tr ' ' ,)" \
		"$KAPT" "$root.new" "$mirror" >"$cache/buildroot-$KAPT.log" 2>&1 ||
		{ tail -n 20 "$cache/buildroot-$KAPT.log" >&2; die "debootstrap $KAPT failed (see $cache/buildroot-$KAPT.log)"; }
	rm -rf "$root.new/var/cache/apt/archives/"*.deb
	echo "$pkgs" >"$root.new/.rc-ready"
	rm -rf "$root"
	mv "$root.new" "$root"
	echo "buildroot: done in $(($(date +%s) - t0)) s"
fi

# --- headers -----------------------------------------------------------
# shellcheck disable=SC2086 # the package names, one word each
rc_download "$kdir/hdebs" $KHDRS
hdr=$kdir/headers
if [ "$(cat "$hdr/.rc-ready" 2>/dev/null)" != "$KHDRS" ]; then
	rm -rf "$hdr"
	mkdir -p "$hdr"
	for deb in "$kdir"/hdebs/*.deb; do
		dpkg-deb -x "$deb" "$hdr" || die "dpkg-deb -x $deb failed"
	done
	mk=$hdr/usr/src/linux-headers-$KVER/Makefile
	[ -f "$mk" ] || die "no usr/src/linux-headers-$KVER in $KHDRS"
	# KBUILD_OUTPUT= and include name /usr/src/...; the rest is relative.
	sed -i "s|/usr/src/|$hdr/usr/src/|g" "$mk"
	echo "$KHDRS" >"$hdr/.rc-ready"
fi

# --- the KMAKE wrapper ---------------------------------------------------
# Values go into the wrapper quoted for sh (paths may hold spaces), the
# trees parents first so that one inside another stays visible.
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
binds=$(for d in "$RC_SRCDIR" "$RC_BUILDDIR" "$cache"; do
		(cd "$d" && pwd -P)
	done | LC_ALL=C sort -u | while IFS= read -r d; do
		printf ' %s' "$(q "$d")"
	done)
{
	cat <<EOS
#!/bin/sh
# KMAKE for $KVER, written by tests/vm/buildroot.sh: runs make inside the
# Debian build root $root in a private mount namespace, with the
# source, build and cache trees bind-mounted at their host paths and the
# current directory kept.  Needs root.
set -- $(q "$root") "\$(pwd -P)"$binds -- "\$@"
EOS
	cat <<'EOS'
if ! unshare -m true 2>/dev/null; then
	echo "kmake: cannot create a private mount namespace (unshare -m): it needs root, and / must be a mount point (inside a chroot, bind-mount the root onto itself first)" >&2
	exit 99
fi
exec unshare -m /bin/sh -c '
	root=$1 cwd=$2
	shift 2
	mount --make-rprivate / 2>/dev/null
	# tmpfs first: a build tree under /tmp is bound on top of it.
	mount -t proc proc "$root/proc" && mount --bind /dev "$root/dev" &&
		mount -t tmpfs tmpfs "$root/tmp" || exit 99
	while [ "$1" != -- ]; do
		mkdir -p "$root$1" && mount --bind "$1" "$root$1" || exit 99
		shift
	done
	shift
	exec chroot "$root" /bin/sh -c "cd \"\$0\" 2>/dev/null || cd /; exec make \"\$@\"" "$cwd" "$@"
' sh "$@"
EOS
} >"$kmake.new"
chmod 755 "$kmake.new"
mv "$kmake.new" "$kmake"
echo "buildroot: KMAKE=$kmake LINUX=$hdr/usr/src/linux-headers-$KVER"
