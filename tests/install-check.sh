#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# install-check.sh BUILDDIR: "make install" and "make uninstall" of a
# configured and built tree, into a DESTDIR of its own (the host's own
# directories are never touched).  Fails, saying what, when
#  - the installed file list differs from tests/install-files.txt (paths
#    with the configured prefix, libdir, ... and the kernel release
#    replaced by @prefix@, @libdir@, ..., @KVER@; the module's lines are
#    left out of the comparison when the tree did not build it),
#  - a library lacks its soname (libNAME.so.1), the .so links do not
#    resolve, or its exported symbols and version nodes differ from
#    tests/abi/NAME.sym (tests/abi-check.sh --print),
#  - a program built against the installed headers and .pc files (and
#    nothing from the source tree) does not compile, link or run,
#  - the installed module's vermagic is not the configured kernel's, or
#    depmod's index in DESTDIR does not list it,
#  - a man page link does not resolve,
#  - "make uninstall" leaves any file or link behind.
# Exit 0 pass, 1 fail, 77 skip (not a built tree).  .ci/run's phase
# install runs it (about 20 s on the 2-core machine).
#
# When a change installs a file on purpose, regenerate the list with
#	tests/install-check.sh --print BUILDDIR > tests/install-files.txt
# and review the diff.
set -u

print_only=no
if [ "${1:-}" = --print ]; then
	print_only=yes
	shift
fi
build=${1:?usage: install-check.sh [--print] BUILDDIR}
srcdir=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$build" 2>/dev/null && pwd) || {
	echo "install-check: $1: no such build directory" >&2
	exit 1
}
if [ ! -f "$build/Makefile" ] || [ ! -f "$build/libregcache/libregcache.la" ]; then
	echo "install-check: SKIP: $build is not a configured and built tree" >&2
	exit 77
fi

dest=$(mktemp -d "${TMPDIR:-/tmp}/rc-install-check.XXXXXX") || exit 1
fail=0
bad()
{
	echo "install-check: FAIL: $*" >&2
	fail=1
}
# shellcheck disable=SC2317 # called by the trap below
cleanup()
{
	rm -rf "$dest"
}
trap cleanup EXIT

# The build's directory variables, fully expanded (make does it).
. "$(dirname "$0")/make-var.sh"
mkvar()
{
	make_var "$build" "$1"
}
prefix=$(mkvar prefix)
libdir=$(mkvar libdir)
includedir=$(mkvar includedir)
bindir=$(mkvar bindir)
sbindir=$(mkvar sbindir)
mandir=$(mkvar mandir)
docdir=$(mkvar docdir)
kver=$(mkvar LINUX_VERSION)
moduledir=$(make_var "$build/kmod" moduledir)
has_kmod=no
[ -f "$build/kmod/regcache.ko" ] && has_kmod=yes

if ! make -C "$build" install DESTDIR="$dest" >"$dest.install.log" 2>&1; then
	tail -n 30 "$dest.install.log" >&2
	rm -f "$dest.install.log"
	bad "make install DESTDIR=$dest"
	exit 1
fi
rm -f "$dest.install.log"

# The installed files, normalised: longest directory first.
listing()
{
	(cd "$dest" && find . \( -type f -o -type l \) | sed 's|^\.||') |
	sed -e "s|^$docdir/|@docdir@/|" -e "s|^$mandir/|@mandir@/|" \
	    -e "s|^$libdir/|@libdir@/|" -e "s|^$includedir/|@includedir@/|" \
	    -e "s|^$sbindir/|@sbindir@/|" -e "s|^$bindir/|@bindir@/|" \
	    -e "s|^$moduledir/|@moduledir@/|" \
	    -e "s|^/lib/modules/$kver/|/lib/modules/@KVER@/|" |
	LC_ALL=C sort
}

if [ $print_only = yes ]; then
	listing
	exit 0
fi

# 1. the file list
expected=$srcdir/tests/install-files.txt
if [ $has_kmod = yes ]; then
	cat "$expected"
else
	grep -v -e '^@moduledir@/' -e '^/lib/modules/' "$expected"
fi | grep -v '^#' | LC_ALL=C sort >"$dest.want"
listing >"$dest.have"
if ! diff -u "$dest.want" "$dest.have" >"$dest.diff"; then
	cat "$dest.diff" >&2
	bad "installed files differ from tests/install-files.txt (- expected, + installed)"
fi
rm -f "$dest.want" "$dest.have" "$dest.diff"

# 2. sonames, links, exported symbols
for lib in libregcache librdmaxfer; do
	so=$dest$libdir/$lib.so
	soname=$(LC_ALL=C readelf -d "$so.1" 2>/dev/null |
		sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
	[ "$soname" = "$lib.so.1" ] || bad "$lib.so.1: soname '$soname', want $lib.so.1"
	for l in "$so" "$so.1"; do
		if [ ! -L "$l" ] || [ ! -e "$l" ]; then
			bad "$l: not a link to the library"
		fi
	done
	grep -v '^#' "$srcdir/tests/abi/$lib.sym" >"$dest.sym"
	if ! "$srcdir/tests/abi-check.sh" --print "$so.1" | grep -v '^#' |
	     diff -u "$dest.sym" - >&2; then
		bad "$lib: installed symbols differ from tests/abi/$lib.sym"
	fi
	rm -f "$dest.sym"
done

# 3. a program built from the installed tree only
cat >"$dest/app.c" <<'EOF'
#include <stdio.h>
#include <regcache.h>
#include <regcache_uapi.h>
#include <rdmaxfer.h>

int main(void)
{
	/* one call into each library, through the installed headers */
	printf("%s|%d|%d\n", rdmaxfer_strerror(-22), REGCACHE_MONITOR_NONE,
	       REGCACHE_ABI_VERSION);
	return 0;
}
EOF
# The installed .pc files as they are, but for their prefix line, which
# points into DESTDIR; the system's .pc files (rdma-core) stay reachable.
mkdir "$dest.pc"
for f in "$dest$libdir"/pkgconfig/*.pc; do
	sed "s|^prefix=$prefix\$|prefix=$dest$prefix|" "$f" >"$dest.pc/${f##*/}"
done
if flags=$(PKG_CONFIG_PATH=$dest.pc pkg-config --cflags --libs librdmaxfer libregcache); then
	# shellcheck disable=SC2086
	if ${CC:-cc} -Wall -Werror -o "$dest/app" "$dest/app.c" $flags; then
		out=$(LD_LIBRARY_PATH=$dest$libdir "$dest/app") ||
			bad "the program built against the installed tree failed to run"
		# the ABI version the source header declares
		abi=$(sed -n 's/^#define REGCACHE_ABI_VERSION[[:space:]]*\([0-9]*\).*/\1/p' \
			"$srcdir/include/regcache_uapi.h")
		case $out in
		?*"|3|$abi") ;;
		*) bad "the installed library and headers answered '$out'";;
		esac
		# it must have run the installed libraries, not others
		for lib in librdmaxfer libregcache; do
			LD_LIBRARY_PATH=$dest$libdir ldd "$dest/app" |
				grep -q "$dest$libdir/$lib.so.1" ||
				bad "the program did not load the installed $lib"
		done
	else
		bad "a program using the installed headers does not build: $flags"
	fi
else
	bad "pkg-config cannot read the installed librdmaxfer.pc/libregcache.pc"
fi
rm -rf "$dest/app" "$dest/app.c" "$dest.pc"

# 4. the module and depmod's index
if [ $has_kmod = yes ]; then
	ko=$dest$moduledir/regcache.ko
	vm=$(/sbin/modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1)
	[ "$vm" = "$kver" ] || bad "$ko: vermagic '$vm', want $kver"
	case $moduledir in
	/lib/modules/"$kver"/*)
		grep -q "^${moduledir#/lib/modules/"$kver"/}/regcache.ko:" \
			"$dest/lib/modules/$kver/modules.dep" ||
			bad "depmod's modules.dep in DESTDIR does not list regcache.ko";;
	esac
fi

# 5. man page links
# (-xtype l: a link whose target does not exist)
for l in $(find "$dest$mandir" -xtype l | tr '\n' ' '); do
	bad "$l: dangling man page link"
done

# 6. uninstall leaves nothing
if ! make -C "$build" uninstall DESTDIR="$dest" >"$dest.uninstall.log" 2>&1; then
	tail -n 30 "$dest.uninstall.log" >&2
	bad "make uninstall DESTDIR=$dest"
fi
rm -f "$dest.uninstall.log"
left=$(cd "$dest" && find . \( -type f -o -type l \) | sed 's|^\.||')
if [ -n "$left" ]; then
	echo "$left" >&2
	bad "make uninstall left the files above"
fi

if [ $fail = 0 ]; then
	n=$(grep -c -v '^#' "$expected")
	echo "install-check: ok ($n files and links installed, all removed by uninstall; kernel module: $has_kmod)"
fi
exit $fail
