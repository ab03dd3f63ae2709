#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# check-layers.sh [--report]: the arrows between librdmaxfer's rooms, read
# from the built objects and the sources (make check runs it on the host).
#
# The rooms are the folders of librdmaxfer/: core/, and the extensions
# mem/, ring/, file/, directory/.  The core calls its extensions only
# through the tables they fill (core/core.h: struct rx_ext, rx_mem_ops,
# rx_req_ops), so no core object may take a function or variable
# (rx_*, rdmaxfer_*) from an extension's object, and no extension one
# from another extension's.  The linker's __start_rx_ext/__stop_rx_ext
# are the core's only reference into the extensions' section.  Includes
# follow the same rule: a core file names no extension's header, and an
# extension includes its own room's headers (a bare name) and, of the
# core, only core/core.h, core/wire.h and core/peer_hook.h, never
# internal.h.
#
# Fails naming each arrow that breaks the rule, as
#   core/agent.o -> mem/odp.o: rx_odp_init rx_odp_fini
# With --report it also prints, room by room, how many symbols each room
# takes from each other (who calls whom) and passes.
#
# Environment: LAYERS_TOP_BUILDDIR (default .., the build tree from
# tests/), LAYERS_SRCDIR (default: the source tree this script is in).

report=no
[ "$1" = --report ] && report=yes

here=$(cd "$(dirname "$0")" && pwd)
src=${LAYERS_SRCDIR:-$here/..}/librdmaxfer
build=${LAYERS_TOP_BUILDDIR:-..}/librdmaxfer
rooms="core mem ring file directory"

if ! command -v nm >/dev/null 2>&1; then
	echo "check-layers: nm not found (binutils)"
	exit 77
fi
objs=
for r in $rooms; do
	for o in "$build/$r"/.libs/librdmaxfer_la-*.o; do
		[ -f "$o" ] && objs="$objs $o"
	done
done
if [ -z "$objs" ]; then
	echo "check-layers: no objects under $build (build librdmaxfer first)"
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-layers.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

# "ROOM/NAME.o SYMBOL" for every defined and every undefined symbol
for o in $objs; do
	r=$(basename "$(dirname "$(dirname "$o")")")
	n=$(basename "$o" | sed 's/^librdmaxfer_la-//')
	nm --defined-only -g "$o" | awk -v w="$r/$n" 'NF >= 3 { print w, $3 }' \
		>>"$tmp/def"
	nm -u "$o" | awk -v w="$r/$n" '{ print w, $NF }' >>"$tmp/und"
done

# "FROM TO SYMBOL": every undefined rx_*/rdmaxfer_* of one room that
# another room's object defines
LC_ALL=C awk '
	NR == FNR { def[$2] = $1; next }
	$2 ~ /^(rx_|rdmaxfer_)/ && ($2 in def) {
		split($1, a, "/"); split(def[$2], b, "/")
		if (a[1] != b[1])
			print $1, def[$2], $2
	}' "$tmp/def" "$tmp/und" | LC_ALL=C sort -u >"$tmp/arrows"

bad=0
# core -> an extension; an extension -> another extension
LC_ALL=C awk '
	{ split($1, a, "/"); split($2, b, "/") }
	a[1] == "core" || b[1] != "core" { k = $1 " -> " $2; s[k] = s[k] " " $3 }
	END { for (k in s) print k ":" s[k] }' "$tmp/arrows" |
	LC_ALL=C sort >"$tmp/wrong"
if [ -s "$tmp/wrong" ]; then
	echo "check-layers: arrows against the rooms' order (core -> extension, extension -> extension):"
	sed 's/^/  /' "$tmp/wrong"
	bad=1
fi

# includes
for r in $rooms; do
	for f in "$src/$r"/*.[ch]; do
		[ -f "$f" ] || continue
		sed -n 's/^#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
		while read -r inc; do
			case $r:$inc in
			core:mem/*|core:ring/*|core:file/*|core:directory/*|core:../*)
				echo "  $r/$(basename "$f") includes $inc" ;;
			core:*) ;;
			*:core/core.h|*:core/wire.h|*:core/peer_hook.h) ;;
			*:internal.h|*:*/*)
				echo "  $r/$(basename "$f") includes $inc" ;;
			esac
		done
	done
done >"$tmp/inc"
if [ -s "$tmp/inc" ]; then
	echo "check-layers: includes across rooms (an extension: its own headers, core/core.h, core/wire.h, core/peer_hook.h):"
	cat "$tmp/inc"
	bad=1
fi

if [ $report = yes ]; then
	echo "check-layers: symbols each room takes from another (FROM -> TO: count)"
	LC_ALL=C awk '{ split($1, a, "/"); split($2, b, "/")
		n[a[1] " -> " b[1]]++ } END { for (k in n) print "  " k ": " n[k] }' \
		"$tmp/arrows" | LC_ALL=C sort
fi
[ $bad = 0 ] && echo "check-layers: $(echo "$objs" | wc -w) objects, the arrows run one way"
exit $bad
