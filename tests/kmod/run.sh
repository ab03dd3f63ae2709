#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# run.sh [-d DIR] [PROGRAM...]: run regcache.ko's selftests (default:
# every test_kmod_* program in DIR, default this folder) against the
# loaded module and print TAP: one point per program, its own TAP
# indented under it ("#   ok 3 - kmod_abi/watch_bad_len"), as
# kselftest's runner nests subtests.  A program that exits 77 is a skipped point with the reason
# it printed.  Exit status 0 when no program failed, else 1.
# Run as root, after `make -C tests/kmod` and `insmod regcache.ko`.
dir=$(dirname "$0")
if [ "${1:-}" = -d ]; then
	dir=$2
	shift 2
fi
if [ $# = 0 ]; then
	for f in "$dir"/test_kmod_*; do
		case $f in *.c | *.h) continue ;; esac
		[ -x "$f" ] && set -- "$@" "${f##*/}"
	done
fi

echo "TAP version 13"
echo "1..$#"
n=0
bad=0
out=$(mktemp "${TMPDIR:-/tmp}/kt-run.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT
for t in "$@"; do
	n=$((n + 1))
	"$dir/$t" >"$out" 2>&1
	st=$?
	sed 's/^/#   /' "$out"
	case $st in
	0) echo "ok $n - $t" ;;
	77) echo "ok $n - $t # SKIP $(sed -n 's/^1\.\.0 # SKIP //p' "$out" | head -n 1)" ;;
	*) echo "not ok $n - $t # exit status $st"; bad=1 ;;
	esac
done
exit $bad
