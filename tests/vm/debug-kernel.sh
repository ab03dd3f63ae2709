#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# debug-kernel.sh TARBALL CONFIG KVER KDIR: build the debug guest kernel.
#
# Unpacks Debian's kernel source (linux-source-6.1) into KDIR/src,
# configures it in KDIR/build as allnoconfig plus the fragment CONFIG
# (tests/vm/debug-kernel.config: KASAN, lockdep, DEBUG_ATOMIC_SLEEP,
# kmemleak and only what the harness needs, all built in), checks that
# every option of the fragment survived Kconfig's dependency resolution
# (a dropped one would silently weaken the checks), builds the bzImage
# (KDIR/bzImage; not the ELF vmlinux through its PVH entry as for Debian's
# kernels: see the fragment), and installs modules.builtin
# and modules.dep into KDIR/root so that the guest's modprobe of a
# built-in driver succeeds.  KDIR/build is then the kbuild tree that
# regcache.ko is built against (tests/vm/kbuild.sh).  Prints the build
# time.  Needs flex, bison, bc and libelf-dev (scripts/install-deps.sh).
set -eu

tarball=$1
config=$2
kver=$3
kdir=$4
t0=$(date +%s)
jobs=$(nproc 2>/dev/null || echo 2)

die() { echo "debug-kernel: $*" >&2; exit 1; }

for tool in flex bison bc; do
	command -v $tool >/dev/null 2>&1 ||
		die "$tool not found (apt-get install flex bison bc libelf-dev)"
done

rm -rf "$kdir/src" "$kdir/build"
mkdir -p "$kdir/src" "$kdir/build"
tar -xf "$tarball" -C "$kdir/src" --strip-components=1 ||
	die "cannot unpack $tarball"
src=$kdir/src
obj=$kdir/build

# Kbuild is run from its own tree: the caller's make flags must not leak in.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
make -s -C "$src" O="$obj" allnoconfig KCONFIG_ALLCONFIG="$config" ||
	die "allnoconfig with $config failed"
missing=$(sed -n 's/^\(CONFIG_[A-Z0-9_]*\)=\(.*\)$/\1=\2/p' "$config" |
	while IFS= read -r want; do
		case $want in
		*=n) opt=${want%=n}
		     grep -q "^$opt=" "$obj/.config" && echo "$opt (wanted n)" ;;
		*)   grep -qxF "$want" "$obj/.config" || echo "$want" ;;
		esac
	done)
[ -z "$missing" ] || die "options of $config not in the configured kernel:" "$missing"
got=$(make -s -C "$src" O="$obj" kernelrelease)
[ "$got" = "$kver" ] || die "the source builds $got, expected $kver"

echo "debug-kernel: building $kver with $jobs jobs in $obj"
make -s -C "$src" O="$obj" -j"$jobs" bzImage modules >"$kdir/build.log" 2>&1 || {
	tail -n 40 "$kdir/build.log" >&2
	die "kernel build failed (see $kdir/build.log)"
}
make -s -C "$src" O="$obj" INSTALL_MOD_PATH="$kdir/root" modules_install \
	>>"$kdir/build.log" 2>&1 || die "modules_install failed (see $kdir/build.log)"
cp "$obj/arch/x86/boot/bzImage" "$kdir/bzImage"
echo "debug-kernel: $kver built in $(($(date +%s) - t0)) s"
