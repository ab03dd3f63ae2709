#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# test_kmod_selftests.sh BUILDDIR: regcache.ko's selftests outside this
# tree's build system (host test, TAP).
#   1. tests/kmod/Makefile, with nothing but the compiler, builds every
#      program (into BUILDDIR/kmod-plain, at -O0 for time);
#   2. each program needs libc alone (its ELF NEEDED list);
#   3. run.sh runs them and says what it did: on a host without the
#      module every program is a skipped point and run.sh exits 0;
#   4. the harness reports what happened (kmod/kt_harness_check.c: a
#      pass, an EXPECT that goes on, an ASSERT that stops, a skip, a
#      thread's failures, a suite whose setup fails, selection by name,
#      a bad knob); a harness that passed a failure would pass every
#      selftest.
# About 10 s, the compiler's.
set -u

srcdir=$(cd "$(dirname "$0")" && pwd)
out=${1:-.}/kmod-plain
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 99
log=$out/make.log
echo "1..4"

if make -s -C "$srcdir/kmod" OUTPUT="$out" CFLAGS="-O0 -g" >"$log" 2>&1; then
	echo "ok 1 - plain Makefile builds the programs"
else
	echo "not ok 1 - plain Makefile builds the programs"
	sed 's/^/# /' "$log" | tail -n 20
	exit 1
fi

bad=
# shellcheck disable=SC1003 # a backslash inside single quotes, not an escape
progs=$(sed -n '/^TEST_GEN_PROGS/,/^$/p' "$srcdir/kmod/Makefile" | tr -s ' \t\\' '\n' |
	grep '^test_kmod_')
for p in $progs; do
	needed=$(readelf -d "$out/$p" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
	[ "$needed" = "libc.so.6 " ] || bad="$bad $p: $needed;"
done
if [ -z "$bad" ] && [ -n "$progs" ]; then
	echo "ok 2 - libc alone ($(echo "$progs" | wc -w) programs)"
else
	echo "not ok 2 - libc alone # $bad"
fi

if [ -e /dev/regcache ]; then
	echo "ok 3 - run.sh # SKIP regcache.ko is loaded here: the VM suites run the programs"
else
	# shellcheck disable=SC2086
	if sh "$srcdir/kmod/run.sh" -d "$out" $progs >"$out/run.log" 2>&1 &&
		[ "$(grep -c '^ok [0-9]* - test_kmod_.* # SKIP ' "$out/run.log")" = "$(echo $progs | wc -w)" ] &&
		grep -q '^1\.\.[1-9]' "$out/run.log"; then
		echo "ok 3 - run.sh: every program a skipped point without the module"
	else
		echo "not ok 3 - run.sh"
		sed 's/^/# /' "$out/run.log" | tail -n 20
	fi
fi

cc -O0 -g -Wall -pthread -I"$srcdir/kmod" -o "$out/kt_harness_check" \
	"$srcdir/kmod/kt_harness_check.c" "$srcdir/kmod/kt_harness.c" >>"$log" 2>&1 || {
	echo "not ok 4 - harness # kt_harness_check did not build"
	exit 1
}
why=
"$out/kt_harness_check" >"$out/check.log" 2>&1
st=$?
# every line, in order, file:line reduced to the condition
got=$(sed 's/^# .*kt_harness_check\.c:[0-9]*: /# /' "$out/check.log")
want='1..7
ok 1 - check/pass
# 1 + 1 == 3
not ok 2 - check/expect_goes_on
# 2 + 2 == 5
not ok 3 - check/assert_stops
ok 4 - check/skipped # SKIP why 7
# 3 + 3 == 7
# 4 + 4 == 9
not ok 5 - check/thread_fails
# reached 1, knob 1
ok 6 - check/report
not ok 7 - broken/never # suite setup failed'
[ "$st" = 1 ] || why="$why exit $st, not 1;"
[ "$got" = "$want" ] || why="$why output differs;"
sel=$("$out/kt_harness_check" check/pass check/report 2>&1)
st=$?
[ "$st" = 0 ] && [ "$sel" = '1..2
ok 1 - check/pass
# reached 0, knob 1
ok 2 - check/report' ] || why="$why selection: $st;"
KT_CHECK_KNOB=x "$out/kt_harness_check" check/report >"$out/knob.log" 2>&1
st=$?
[ "$st" = 99 ] && grep -q '^Bail out! KT_CHECK_KNOB=x' "$out/knob.log" || why="$why bad knob: $st;"
if [ -z "$why" ]; then
	echo "ok 4 - harness reports what happened"
else
	echo "not ok 4 - harness #$why"
	sed 's/^/# /' "$out/check.log"
	exit 1
fi
