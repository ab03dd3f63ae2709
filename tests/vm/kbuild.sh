#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# kbuild.sh KERNEL: build regcache.ko for KERNEL and print "RC_KMOD=PATH".
#
# When the top build's kmod/ targets that very kernel release, its module
# is used (a `make -C kmod`, a no-op when up to date).  Otherwise the same
# source tree is configured a second time in tests/vm/kbuild-KERNEL/ with
# --with-linux pointing at that kernel's headers, so the configure probes
# run against them, and `make -C kmod` builds the module there.  For
# kernels whose headers need another toolchain (7.3: modpost wants glibc
# 2.38, the kernel was built with gcc-14) KMAKE is a wrapper that runs
# make inside a Debian 13 build root (tests/vm/buildroot.sh).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/kernels.sh"
kernel=$1
rc_kernel_info "$kernel"
: "${RC_SRCDIR:=$(cd "$here/../.." && pwd)}"
: "${RC_BUILDDIR:?}"
: "${VM_CACHE:=$RC_BUILDDIR/tests/vm/cache}"
: "${RC_LINUX_VERSION:=}"
: "${RC_BUILD_KMOD:=yes}"
# The build root sees the cache at its physical path only (kmake binds
# that): a VM_CACHE through a symlink would name headers it cannot see.
VM_CACHE=$(mkdir -p "$VM_CACHE" && cd "$VM_CACHE" && pwd -P)

# We are started from a test recipe: do not talk to the parent's jobserver.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

die() { echo "kbuild: $kernel: $*" >&2; exit 1; }

if [ "$RC_BUILD_KMOD" = yes ] && [ "$RC_LINUX_VERSION" = "$KVER" ]; then
	exec 9>"$RC_BUILDDIR/tests/vm/.kmod-lock"
	flock 9
	make -C "$RC_BUILDDIR/kmod" || die "make -C kmod failed"
	echo "RC_KMOD=$RC_BUILDDIR/kmod/regcache.ko"
	exit 0
fi

kb=$RC_BUILDDIR/tests/vm/kbuild-$kernel
mkdir -p "$kb"
exec 9>"$kb/.lock"
flock 9

if [ "$KAPT" = source ]; then
	# The kernel built here (the debug kernel): its own object tree.
	sh "$here/vm-kernel.sh" "$kernel" "$VM_CACHE" >/dev/null ||
		die "the $kernel kernel is not built"
	linux=$VM_CACHE/$KVER/build
	kmake='make'
elif [ -z "$KHDRS" ]; then
	linux=/usr/src/linux-headers-$KVER
	[ -f "$linux/Makefile" ] || die "$linux missing (apt-get install linux-headers-$KVER)"
	kmake='make'
else
	# Headers from the kernel's own packages, built inside a build root.
	kmake=$kb/kmake
	sh "$here/buildroot.sh" "$kernel" "$VM_CACHE" "$kmake" || die "build root for $kernel failed"
	linux=$VM_CACHE/$KVER/headers/usr/src/linux-headers-$KVER
fi

# Reconfigure when configure or the kernel tree changed (dash and busybox
# sh have test -nt).
# shellcheck disable=SC3013
if [ ! -f "$kb/config.status" ] || [ "$RC_SRCDIR/configure" -nt "$kb/config.status" ] ||
   ! grep -qF "with-linux=$linux" "$kb/config.status" ||
   ! grep -qF "KMAKE=$kmake" "$kb/config.status"; then
	echo "kbuild: configuring $kb against $linux"
	(cd "$kb" && "$RC_SRCDIR/configure" -q --with-linux="$linux" \
		--with-linux-obj="$linux" --enable-kmod=yes KMAKE="$kmake") ||
		die "configure against $linux failed (see $kb/config.log)"
fi
make -C "$kb/kmod" || die "make -C $kb/kmod failed"
echo "RC_KMOD=$kb/kmod/regcache.ko"
