#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# dkms-check.sh BUILDDIR: proves the generated dkms.conf with Debian's
# dkms, on the host, against the kernel headers the tree was configured
# with (linux-headers-6.1.0-NN-amd64 on Debian 12): "make install-dkms"
# into a scratch DESTDIR, then dkms add, build, install, status and
# remove, with --sourcetree, --dkmstree and --installtree all inside that
# scratch folder and --no-depmod (dkms 3.0 would run depmod on the real
# /lib/modules/KVER), depmod -b on the scratch tree instead.  Nothing
# outside the scratch folder is written, nothing is loaded (the build
# machine cannot load modules).  Fails when a step fails, when the module
# dkms built has another vermagic than the kernel's, or when it differs
# from the build tree's module in its symbols (same sources, same probes:
# dkms must have run configure's probes too).
# Exit 0 pass, 1 fail, 77 skip (no dkms, not root, no module built).
# .ci/run's phase install runs it (about 40 s on the 2-core machine).
set -u

build=${1:?usage: dkms-check.sh BUILDDIR}
build=$(cd "$build" 2>/dev/null && pwd) || {
	echo "dkms-check: $1: no such build directory" >&2
	exit 1
}
skip()
{
	echo "dkms-check: SKIP: $*"
	exit 77
}
command -v dkms >/dev/null 2>&1 || skip "dkms is not installed (apt-get install dkms)"
[ "$(id -u)" = 0 ] || skip "dkms needs root"
[ -f "$build/kmod/regcache.ko" ] || skip "$build built no regcache.ko"
[ -f "$build/dkms.conf" ] || skip "$build has no dkms.conf (configure it again)"

. "$(dirname "$0")/make-var.sh"
mkvar()
{
	make_var "$build" "$1"
}
kver=$(mkvar LINUX_VERSION)
linux=$(mkvar LINUX_OBJ)
pkg=$(mkvar PACKAGE)
ver=$(mkvar VERSION)
srcsub=/usr/src/$pkg-$ver

s=$(mktemp -d "${TMPDIR:-/tmp}/rc-dkms-check.XXXXXX") || exit 1
trap 'rm -rf "$s"' EXIT
log=$s/log
fail()
{
	echo "dkms-check: FAIL: $*" >&2
	tail -n 40 "$log" >&2
	f=$s/dkms/$pkg/$ver/build/make.log
	[ -f "$f" ] && tail -n 40 "$f" >&2
	exit 1
}
step()
{
	echo "+ $*" >>"$log"
	"$@" >>"$log" 2>&1
}

# dkms finds the kernel through /lib/modules/KVER/build; point a private
# install tree at the headers configure used.
# (depmod -b wants a root with lib/modules below it)
mkdir -p "$s/dkms" "$s/root/lib/modules/$kver" "$s/destdir"
ln -s root/lib/modules "$s/modules"
ln -s "$linux" "$s/modules/$kver/build"
dk="dkms --sourcetree $s/destdir/usr/src --dkmstree $s/dkms --installtree $s/modules"

t0=$(date +%s)
step make -C "$build" install-dkms DESTDIR="$s/destdir" ||
	fail "make install-dkms"
if [ ! -f "$s/destdir$srcsub/dkms.conf" ] ||
   [ ! -x "$s/destdir$srcsub/configure" ]; then
	fail "make install-dkms did not install dkms.conf and the source tree"
fi
# shellcheck disable=SC2086
step $dk add "$pkg/$ver" || fail "dkms add"
# shellcheck disable=SC2086
step $dk build "$pkg/$ver" -k "$kver" --kernelsourcedir "$linux" ||
	fail "dkms build"
# shellcheck disable=SC2086
step $dk install "$pkg/$ver" -k "$kver" --no-depmod --force ||
	fail "dkms install"
ko=$(find "$s/modules/$kver" -name 'regcache.ko*' | head -n 1)
[ -n "$ko" ] || fail "dkms install put no regcache.ko under the install tree"
vm=$(/sbin/modinfo -F vermagic "$ko" | cut -d' ' -f1)
[ "$vm" = "$kver" ] || fail "dkms built for '$vm', want $kver"
# Same sources and probes: the same undefined kernel symbols.
syms()
{
	nm -u "$1" | awk '{ print $2 }' | LC_ALL=C sort
}
syms "$ko" >"$s/dkms.syms"
syms "$build/kmod/regcache.ko" >"$s/build.syms"
diff -u "$s/build.syms" "$s/dkms.syms" >>"$log" ||
	fail "the module dkms built imports other kernel symbols than the build tree's"
step /sbin/depmod -b "$s/root" "$kver" ||
	fail "depmod of the dkms install tree"
grep -q 'regcache.ko' "$s/modules/$kver/modules.dep" ||
	fail "depmod's modules.dep does not list the dkms module"
# shellcheck disable=SC2086
$dk status "$pkg/$ver" -k "$kver" 2>&1 | tee -a "$log" | grep -q ': installed' ||
	fail "dkms status does not say installed"
# shellcheck disable=SC2086
step $dk remove "$pkg/$ver" --all --no-depmod || fail "dkms remove"
[ -z "$(find "$s/modules/$kver" -name 'regcache.ko*')" ] ||
	fail "dkms remove left the module installed"
echo "dkms-check: ok (dkms $(dkms --version 2>/dev/null | sed 's/^dkms-//'): add, build, install, status, remove of $pkg/$ver for $kver in $(($(date +%s) - t0)) s; ${ko#"$s"/modules/})"
