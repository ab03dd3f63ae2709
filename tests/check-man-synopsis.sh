#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# check-man-synopsis.sh: the man pages and the exported API name the same
# functions (make check runs it on the host).  Everything is read when it
# runs: the version scripts (every */*.map of the tree: today
# libregcache/libregcache.map and librdmaxfer/librdmaxfer.map), the
# SYNOPSIS section of every page in man/, the public headers in include/
# and the man page links in man/*.am.  A new call with its page needs no
# change here.
#
# Point 1: every symbol a map exports (its global: lists) is declared in
# the SYNOPSIS of some page.
# Point 2: every function a SYNOPSIS declares (a name right before "(",
# as prototypes are written: typedefs of function pointers and prose do
# not count) is exported by a map, or is a function-like macro or a
# static inline function of a header in include/ (these have no symbol
# to export), or one of the C library's system calls through which a
# section 4 page shows its device (open, close, read, write, poll, ioctl,
# mmap, munmap).
# Point 3: every function that a section 3 page declares besides the
# page's own name is installed as a link to that page (NAME:PAGE in
# man/*.am), so that "man NAME" finds it, and every link names a function
# of its page's SYNOPSIS.
#
# Environment: srcdir (set by make check; default: this script's folder).
set -u

here=$(cd "${srcdir:-$(dirname "$0")}" && pwd) || exit 99
top=$(cd "$here/.." && pwd) || exit 99
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-man.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
libc="open close read write poll ioctl mmap munmap"

# The exported names of each map: "NAME MAP" lines.
for m in "$top"/*/*.map; do
	[ -f "$m" ] || continue
	awk -v map="${m#"$top"/}" '
		{ sub(/\/\*.*\*\//, "") }
		/global:/ { g = 1; sub(/.*global:/, "") }
		/local:/ { g = 0 }
		/}/ { g = 0 }
		g {
			n = split($0, w, /[ \t;]+/)
			for (i = 1; i <= n; i++)
				if (w[i] ~ /^[A-Za-z_][A-Za-z0-9_]*$/)
					print w[i], map
		}' "$m"
done | LC_ALL=C sort -u >"$tmp/exported"

# The functions each SYNOPSIS declares: "NAME PAGE" lines.  Fonts,
# quotes and requests are stripped; a declaration is a name directly
# followed by "(".
for p in "$top"/man/*.[1-8]; do
	[ -f "$p" ] || continue
	awk -v page="${p##*/}" '
		/^\.SH/ { syn = ($0 ~ /^\.SH[ \t]+"?SYNOPSIS/); next }
		!syn || /^\.\\"/ { next }
		{
			l = $0
			sub(/^\.[A-Za-z]+[ \t]*/, "", l)
			gsub(/\\f[BIRP]|\\f\(..|"/, "", l)
			while (match(l, /[A-Za-z_][A-Za-z0-9_]*\(/)) {
				print substr(l, RSTART, RLENGTH - 1), page
				l = substr(l, RSTART + RLENGTH)
			}
		}' "$p"
done | LC_ALL=C sort -u >"$tmp/declared"

# What the headers define without a symbol: function-like macros and
# static inline functions (the name on the "static inline" line or the
# next).
awk '
	/^#[ \t]*define[ \t]+[A-Za-z_][A-Za-z0-9_]*\(/ {
		s = $0
		sub(/^#[ \t]*define[ \t]+/, "", s)
		sub(/\(.*/, "", s)
		print s
		next
	}
	inl || /static[ \t]+inline/ {
		if (match($0, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
			s = substr($0, RSTART, RLENGTH)
			sub(/[ \t]*\($/, "", s)
			print s
			inl = 0
		} else {
			inl = !inl
		}
	}' "$top"/include/*.h | LC_ALL=C sort -u >"$tmp/header-only"
for c in $libc; do
	echo "$c"
done | LC_ALL=C sort -u >"$tmp/libc"

# The links: "NAME PAGE" (PAGE without .3).
cat "$top"/man/*.am 2>/dev/null | tr -s " \t\\\\" '\n' |
	sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\):\([A-Za-z_][A-Za-z0-9_]*\)$/\1 \2/p' |
	LC_ALL=C sort -u >"$tmp/links"

ne=$(wc -l <"$tmp/exported")
nd=$(awk '{ print $1 }' "$tmp/declared" | LC_ALL=C sort -u | wc -l)
np=$(awk '{ print $2 }' "$tmp/declared" | LC_ALL=C sort -u | wc -l)
echo "1..3"
if [ "$ne" -lt 10 ] || [ "$nd" -lt 10 ]; then
	echo "not ok 1 - only $ne exported symbols (*/*.map) and $nd declared functions (man/) read: the parsing is broken"
	echo "not ok 2 - not checked"
	echo "not ok 3 - not checked"
	exit 1
fi
rc=0

# 1: exported, declared nowhere
awk '{ print $1 }' "$tmp/declared" | LC_ALL=C sort -u >"$tmp/declared-names"
LC_ALL=C join -v 1 "$tmp/exported" "$tmp/declared-names" >"$tmp/undoc"
if [ -s "$tmp/undoc" ]; then
	awk '{ printf "# %s (exported by %s) is in no man page'"'"'s SYNOPSIS\n", $1, $2 }' "$tmp/undoc"
	echo "not ok 1 - $(wc -l <"$tmp/undoc") of $ne exported symbols undocumented"
	rc=1
else
	echo "ok 1 - all $ne exported symbols are declared in a SYNOPSIS"
fi

# 2: declared, but neither exported nor header-only nor a system call
awk '{ print $1 }' "$tmp/exported" | cat - "$tmp/header-only" "$tmp/libc" |
	LC_ALL=C sort -u >"$tmp/known"
LC_ALL=C join -v 1 "$tmp/declared" "$tmp/known" >"$tmp/unknown"
# the system calls count only in a section 4 page
awk 'NR == FNR { c[$1] = 1; next } ($1 in c) && $2 !~ /\.4$/' \
	"$tmp/libc" "$tmp/declared" >>"$tmp/unknown"
if [ -s "$tmp/unknown" ]; then
	awk '{ printf "# %s declares %s(), which no map exports and no header defines\n", $2, $1 }' "$tmp/unknown"
	echo "not ok 2 - $(wc -l <"$tmp/unknown") declared functions that do not exist"
	rc=1
else
	echo "ok 2 - all $nd functions declared in $np pages exist (exported, or header macros and system calls)"
fi

# 3: the links, both ways
awk '$2 ~ /\.3$/ { p = $2; sub(/\.3$/, "", p); if ($1 != p) print $1, p }' \
	"$tmp/declared" | LC_ALL=C sort -u >"$tmp/want-links"
LC_ALL=C comm -23 "$tmp/want-links" "$tmp/links" >"$tmp/nolink"
LC_ALL=C comm -13 "$tmp/want-links" "$tmp/links" >"$tmp/badlink"
bad=0
if [ -s "$tmp/nolink" ]; then
	awk '{ printf "# %s.3 declares %s() but man/*.am installs no link %s:%s\n", $2, $1, $1, $2 }' "$tmp/nolink"
	bad=1
fi
if [ -s "$tmp/badlink" ]; then
	awk '{ printf "# man/*.am links %s to %s.3, whose SYNOPSIS does not declare it\n", $1, $2 }' "$tmp/badlink"
	bad=1
fi
if [ $bad = 0 ]; then
	echo "ok 3 - $(wc -l <"$tmp/links") man page links, one for each function declared beside a page's own"
else
	echo "not ok 3 - man page links and SYNOPSIS sections disagree"
	rc=1
fi
exit $rc
