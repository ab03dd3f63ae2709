#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# tap-wrap.sh PROGRAM [ARGS...]: run one test program for the TAP driver.
#
# Programs built on tests/lib/rc_test.c speak TAP themselves.  A program
# that prints no plan is reported as one test point from its exit code:
# 0 pass, 77 skip (its last output line is the reason), anything else fail.
# Exit 77 with a TAP skip plan is turned into status 0 so the driver
# records a skip rather than an error.
out=$(mktemp "${TMPDIR:-/tmp}/tap-wrap.XXXXXX") || exit 99
"$@" >"$out" 2>&1
rc=$?
name=$(basename "$1")
if grep -qE '^1\.\.[0-9]+' "$out"; then
	cat "$out"
	case $rc in
	0|1) exit $rc ;;
	77) exit 0 ;;
	*) echo "Bail out! $name exited with status $rc"; exit $rc ;;
	esac
fi
sed 's/^/# /' "$out"
case $rc in
0) echo "1..1"; echo "ok 1 - $name" ;;
77) echo "1..1"; echo "ok 1 - $name # SKIP $(tail -n 1 "$out")" ;;
*) echo "1..1"; echo "not ok 1 - $name (exit status $rc)" ;;
esac
rm -f "$out"
[ $rc = 77 ] && exit 0
exit $rc
