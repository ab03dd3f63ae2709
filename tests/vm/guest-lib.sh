# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# guest-lib.sh: what a guest suite (tests/vm/suites/NAME.sh) uses to emit
# TAP test points.  Source it first:  . "$RC_SRCDIR/tests/vm/guest-lib.sh"
#
#   rc_run NAME CMD [ARGS...]    run a test program and relay its TAP points
#                                (renumbered, names prefixed "NAME: "); a
#                                program without TAP output is one point from
#                                its exit status (0 pass, 77 skip, else fail)
#   rc_ok NAME                   one passing point
#   rc_fail NAME [WHY]           one failing point
#   rc_skip NAME WHY             one skipped point
#   rc_check NAME CMD [ARGS...]  one point from CMD's exit status (77: skip)
#
# Test points go to $RC_TAP (a file the host harness reads; stdout when the
# script is run by hand), everything else to stdout, which is the guest's
# serial console.  The harness adds the plan and the "dmesg clean" point.
# Each function returns 0 when its point(s) passed or skipped, else 1, so
# a suite can stop early: rc_check "x" cmd || exit 1

: "${RC_TAP:=/dev/stdout}"
RC_TAP_COUNT=${RC_TAP_COUNT:-/tmp/rc-tap-count.$$}
[ -f "$RC_TAP_COUNT" ] || echo 0 >"$RC_TAP_COUNT"
export RC_TAP RC_TAP_COUNT

# A build tree configured with --enable-sanitizers runs its programs with
# the options of its tests/sanitize.sh (ASAN_OPTIONS etc.: a report or a
# leak fails the program): host environment variables do not reach the
# guest, that file in the build tree does.
if [ -f "${RC_BUILDDIR:-/nonexistent}/tests/sanitize.sh" ]; then
	. "$RC_BUILDDIR/tests/sanitize.sh"
	[ "$RC_SANITIZERS" = no ] ||
		echo "rc-guest: sanitizers: $RC_SANITIZERS ${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}"
fi

# rc__point "ok"|"not ok" NAME [DIRECTIVE]
rc__point()
{
	rc__n=$(($(cat "$RC_TAP_COUNT") + 1))
	echo "$rc__n" >"$RC_TAP_COUNT"
	echo "$1 $rc__n - $2${3:+ # $3}" >>"$RC_TAP"
	echo "[tap] $1 $rc__n - $2${3:+ # $3}"
}

rc__comment()
{
	echo "$*" | sed 's/^/# /' >>"$RC_TAP"
}

rc_ok()
{
	rc__point ok "$1"
	return 0
}

rc_fail()
{
	rc__point "not ok" "$1"
	[ $# -gt 1 ] && shift && rc__comment "$*"
	return 1
}

rc_skip()
{
	rc__point ok "$1" "SKIP ${2:-no reason given}"
	return 0
}

rc_check()
{
	rc__name=$1
	shift
	echo "+ $*"
	"$@"
	rc__st=$?
	case $rc__st in
	0) rc_ok "$rc__name" ;;
	77) rc_skip "$rc__name" "$1 exited 77" ;;
	*) rc_fail "$rc__name" "$* exited with status $rc__st" ;;
	esac
}

rc_run()
{
	rc__name=$1
	shift
	rc__out=$(mktemp /tmp/rc-run.XXXXXX) || { rc_fail "$rc__name" "mktemp failed"; return 1; }
	echo "+ $*"
	rc__t0=$(date +%s)
	"$@" >"$rc__out" 2>&1 </dev/null
	rc__st=$?
	cat "$rc__out"
	# where a suite's time goes (CI's time budget), on the console only
	echo "# $rc__name: $(($(date +%s) - rc__t0)) s, exit $rc__st"
	if ! grep -qE '^1\.\.[0-9]+' "$rc__out"; then
		case $rc__st in
		0) rc_ok "$rc__name" ;;
		77) rc_skip "$rc__name" "$(tail -n 1 "$rc__out")" ;;
		*) rc_fail "$rc__name" "$* exited with status $rc__st" ;;
		esac
		rc__st=$?
		rm -f "$rc__out"
		return $rc__st
	fi
	# Relay the program's points; count them against its plan.
	rc__res=$(awk -v name="$rc__name" -v tap="$RC_TAP" -v cnt="$RC_TAP_COUNT" '
		BEGIN { getline n < cnt; close(cnt); bad = 0; seen = 0; plan = -1 }
		/^1\.\.[0-9]+/ {
			plan = substr($1, 4) + 0
			if (plan == 0) {
				reason = $0; sub(/^1\.\.0 *(# *[Ss][Kk][Ii][Pp])? */, "", reason)
				skipall = reason == "" ? "no reason given" : reason
			}
			next
		}
		/^(not )?ok/ {
			ok = ($1 == "ok")
			line = $0
			sub(/^(not )?ok *[0-9]* *-? */, "", line)
			n++; seen++
			printf "%s %d - %s: %s\n", ok ? "ok" : "not ok", n, name, line >> tap
			if (!ok && line !~ /# *TODO/) bad = 1
			next
		}
		/^#/ { print >> tap; next }
		/^Bail out!/ { printf "# %s\n", $0 >> tap; bad = 1; next }
		END {
			if (skipall != "" && seen == 0) {
				n++
				printf "ok %d - %s # SKIP %s\n", n, name, skipall >> tap
			} else if (plan >= 0 && seen != plan) {
				n++
				printf "not ok %d - %s: planned %d test points, ran %d\n", n, name, plan, seen >> tap
				bad = 1
			}
			print n > cnt
			print bad
		}' "$rc__out")
	rc__bad=$rc__res
	case $rc__st in
	0|77) ;;
	1) [ "$rc__bad" = 1 ] || { rc_fail "$rc__name: exit status" "$* exited 1 without a failing point"; rc__bad=1; } ;;
	*) rc_fail "$rc__name: exit status" "$* exited with status $rc__st"; rc__bad=1 ;;
	esac
	rm -f "$rc__out"
	[ "$rc__bad" = 0 ]
}

# The dma-buf exporters (udmabuf, vgem): loaded where they are modules,
# waited for briefly; either may be missing (built in, or not built at
# all), which the tests then report.
rc_dmabuf_exporters()
{
	modprobe udmabuf 2>/dev/null
	modprobe vgem 2>/dev/null
	rc__i=0
	while [ ! -c /dev/udmabuf ] && [ ! -e /dev/dri/card0 ] && [ $rc__i -lt 20 ]; do
		sleep 0.1
		rc__i=$((rc__i + 1))
	done
	# device names: no white space
	# shellcheck disable=SC2012
	echo "exporters: udmabuf $([ -c /dev/udmabuf ] && echo yes || echo no)," \
		"dri: $(ls /dev/dri 2>/dev/null | tr '\n' ' ')"
}

# rc_kmod_load [PARAM=VALUE...]: insmod regcache.ko with those
# parameters and wait (5 s at most) for /dev/regcache.
rc_kmod_load()
{
	insmod "$RC_KMOD" "$@" || return 1
	rc__i=0
	while [ ! -c /dev/regcache ] && [ $rc__i -lt 50 ]; do
		sleep 0.1
		rc__i=$((rc__i + 1))
	done
	[ -c /dev/regcache ]
}

# rc_peer_link: a two-host pair's client waits for the link to guest A
# (it may still be booting; bounded, 90 s), then checks it as a test
# point.
rc_peer_link()
{
	rc__i=0
	until busybox ping -c 1 -W 1 "$RC_PEER_ADDR" >/dev/null 2>&1; do
		rc__i=$((rc__i + 1))
		[ $rc__i -ge 90 ] && break
		sleep 1
	done
	rc_check "socket link: ping $RC_PEER_ADDR" \
		busybox ping -c 1 -W 2 "$RC_PEER_ADDR"
}
