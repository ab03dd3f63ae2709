#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# checkpatch.sh SRCDIR CACHEDIR: the kernel's own style checker,
# scripts/checkpatch.pl, over regcache.ko's sources and the uapi header
# (make check runs it from kmod/).  Debian has no package of checkpatch
# alone; it ships the kernel tree as linux-source-6.1
# (/usr/src/linux-source-6.1.tar.xz, installed by scripts/install-deps.sh),
# from which the three files checkpatch needs are extracted once into
# CACHEDIR (about 20 s).  CHECKPATCH=/path/to/checkpatch.pl uses another.
#
# Any error or warning fails (not --strict: its CHECKs, such as BIT()
# in a uapi header that cannot use it, are advice).  Before that, a snippet with known faults
# must make checkpatch fail, so a checker that silently checks nothing
# (a missing spelling list, a perl error) cannot pass.
# Exit 0 pass, 1 fail, 77 skip (no checkpatch.pl and no linux-source).
set -u

srcdir=$(cd "${1:?usage: checkpatch.sh SRCDIR CACHEDIR}" && pwd) || exit 1
cache=${2:?usage: checkpatch.sh SRCDIR CACHEDIR}
case $cache in /*) ;; *) cache=$(pwd)/$cache;; esac

cp=${CHECKPATCH:-}
if [ -z "$cp" ]; then
	cp=$cache/scripts/checkpatch.pl
	if [ ! -f "$cp" ]; then
		# Debian's names have no white space; sort -V picks the newest
		# shellcheck disable=SC2012
		tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n 1)
		if [ -z "$tarball" ]; then
			echo "checkpatch: SKIP: no checkpatch.pl (apt-get install linux-source-6.1, or set CHECKPATCH)"
			exit 77
		fi
		top=$(basename "$tarball" .tar.xz)
		# one chain: any step failing runs the block after ||
		# shellcheck disable=SC2015
		mkdir -p "$cache.tmp" &&
		tar -xJf "$tarball" -C "$cache.tmp" "$top/scripts/checkpatch.pl" \
			"$top/scripts/spelling.txt" \
			"$top/scripts/const_structs.checkpatch" &&
		rm -rf "$cache" && mv "$cache.tmp/$top" "$cache" &&
		rm -rf "$cache.tmp" || {
			echo "checkpatch: FAIL: cannot extract checkpatch.pl from $tarball" >&2
			rm -rf "$cache.tmp"
			exit 1
		}
	fi
fi
# Run from /: checkpatch leaves a .checkpatch-camelcase.git.* file in a
# current directory that holds a .git (the source tree may be read-only,
# as under distcheck).
run()
{
	(cd / && perl "$cp" --no-tree --show-types --quiet \
		--ignore SPDX_LICENSE_TAG -f "$@")
}

# The self-test: C++ comments, a space before the parenthesis of a call,
# a line over 100 columns.
bad=$(mktemp "${TMPDIR:-/tmp}/rc-checkpatch.XXXXXX.c") || exit 1
trap 'rm -f "$bad"' EXIT
cat >"$bad" <<'EOF'
// SPDX-License-Identifier: GPL-2.0-only
int rc_bad(int x);
int rc_bad(int x)
{
    // four spaces, a C++ comment and a very long line follow here ..........................................................
	return rc_bad (x);
}
EOF
if run "$bad" >/dev/null 2>&1; then
	echo "checkpatch: FAIL: $cp passed a file with known faults" >&2
	exit 1
fi

rc=0
n=0
for f in "$srcdir"/kmod/*.c "$srcdir"/kmod/*.h "$srcdir"/include/regcache_uapi.h; do
	n=$((n + 1))
	run "$f" || rc=1
done
if [ $rc = 0 ]; then
	# shellcheck disable=SC2016 # checkpatch.pl's own $V, read by sed
	echo "checkpatch: ok ($n files, errors and warnings, checkpatch $(sed -n 's/^my \$V = .\(.*\).;/\1/p' "$cp" | head -n 1))"
else
	echo "checkpatch: FAIL: see the report above" >&2
fi
exit $rc
