#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# abi-check.sh: the ABI of the built shared libraries against the
# committed lists tests/abi/LIB.sym (make check runs it on the host).
#
# Each list holds one exported symbol a line, sorted (LC_ALL=C), as the
# dynamic linker sees it: NAME@@VERSION for the default version of a name,
# NAME@VERSION for a compat version kept for old binaries (for example
# regcache_get_stats@LIBREGCACHE_1.0 next to
# regcache_get_stats@@LIBREGCACHE_1.2).  The test fails, naming the symbol,
# when one is dropped, when one is exported without being listed, or when
# one moves to another version node (reported as moved).  Undefined
# symbols and the version-node marker symbols
# (LIBREGCACHE_1.0 itself) are not ABI and are left out.
#
# Adding API on purpose: put the new names in a NEW version stanza of the
# library's version script (libregcache/libregcache.map,
# librdmaxfer/librdmaxfer.map), e.g.
#	LIBREGCACHE_1.3 { global: regcache_new_call; } LIBREGCACHE_1.2;
# never into a released one, rebuild, and regenerate the list:
#	tests/abi-check.sh --print BUILDDIR/libregcache/.libs/libregcache.so \
#		> tests/abi/libregcache.sym
# then review the diff: it must show only added lines under the new node.
# A dropped or moved line breaks binaries linked against the old library
# and needs a soname bump instead.
#
# Environment: ABI_TOP_BUILDDIR (default .., the build tree from tests/),
# ABI_LISTS (default: the abi/ directory next to this script).

# The exported symbols of one shared object, one NAME@[@]VERSION a line.
abi_symbols() {
	LC_ALL=C readelf --dyn-syms --wide "$1" | LC_ALL=C awk '
		# Num: Value Size Type Bind Vis Ndx Name [(verindex)]
		NF < 8 || $1 !~ /^[0-9]+:$/ { next }
		$7 == "UND" { next }
		{
			name = $8
			base = name
			sub(/@.*/, "", base)
			ver = name
			if (!sub(/^[^@]*@@?/, "", ver))
				ver = ""
			# The marker of a version node: an absolute symbol
			# named after the node (printed bare, or as
			# NODE@@NODE by older binutils).
			if ($7 == "ABS" && (ver == "" || ver == base))
				next
			print name
		}' | LC_ALL=C sort -u
}

if [ "$1" = --print ]; then
	[ -n "$2" ] || { echo "usage: $0 --print LIB.so" >&2; exit 2; }
	abi_symbols "$2" >/dev/null || exit 1
	echo "# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause"
	echo "# $(basename "$2"): exported symbols, checked by tests/abi-check.sh"
	echo "# (read it before changing this list)."
	abi_symbols "$2"
	exit 0
fi

if ! command -v readelf >/dev/null 2>&1; then
	echo "readelf (binutils) not found: cannot read the exported symbols"
	exit 77
fi

top=${ABI_TOP_BUILDDIR:-..}
lists=${ABI_LISTS:-$(dirname "$0")/abi}
rc=0
checked=0
for lib in libregcache librdmaxfer; do
	so=$top/$lib/.libs/$lib.so
	list=$lists/$lib.sym
	if [ ! -f "$list" ]; then
		echo "FAIL $lib: no committed list $list"
		rc=1
		continue
	fi
	if [ ! -e "$so" ]; then
		# --disable-shared: no dynamic symbol table to check.
		echo "no $so (static-only build?)"
		continue
	fi
	cur=$(mktemp "${TMPDIR:-/tmp}/abi-check.XXXXXX") || exit 99
	if ! abi_symbols "$so" >"$cur" || [ ! -s "$cur" ]; then
		echo "FAIL $lib: no exported symbols read from $so"
		rm -f "$cur"
		rc=1
		continue
	fi
	exp=$(mktemp "${TMPDIR:-/tmp}/abi-check.XXXXXX") || exit 99
	grep -v '^[[:space:]]*\(#\|$\)' "$list" | LC_ALL=C sort -u >"$exp"
	dropped=$(LC_ALL=C comm -23 "$exp" "$cur")
	added=$(LC_ALL=C comm -13 "$exp" "$cur")
	# One name dropped from one node and added in another: moved.
	{ echo "$dropped" | sed -n 's/^./-&/p'
	  echo "$added" | sed -n 's/^./+&/p'; } | awk -v lib="$lib" \
		-v list="$list" -v so="$so" -v me="$0" '
		{ op = substr($0, 1, 1); s = substr($0, 2); n = s
		  sub(/@.*/, "", n); v = s; sub(/^[^@]*/, "", v)
		  if (op == "-") { gone[n] = gone[n] " " v; order[++k] = op s }
		  else { came[n] = came[n] " " v; order[++k] = op s } }
		END {
			for (i = 1; i <= k; i++) {
				op = substr(order[i], 1, 1); s = substr(order[i], 2)
				n = s; sub(/@.*/, "", n)
				if ((n in gone) && (n in came)) {
					if (op == "-")
						printf "FAIL %s: %s moved from%s to%s\n", lib, n, gone[n], came[n]
				} else if (op == "-") {
					printf "FAIL %s: %s dropped (listed in %s, not exported by %s)\n", lib, s, list, so
				} else {
					printf "FAIL %s: %s exported but not in %s (new API needs a new version node and a list entry; see %s)\n", lib, s, list, me
				}
			}
		}'
	if [ -n "$dropped$added" ]; then
		rc=1
	else
		echo "ok $lib: $(wc -l <"$cur") symbols match $list"
	fi
	checked=$((checked + 1))
	rm -f "$cur" "$exp"
done
if [ $rc = 0 ] && [ $checked = 0 ]; then
	echo "no shared library built (--disable-shared): nothing to check"
	exit 77
fi
exit $rc
