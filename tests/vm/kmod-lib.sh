# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# kmod-lib.sh: what the two halves of the module's suite share
# (suites/kmod.sh and suites/kmod2.sh; sourced after guest-lib.sh).
# Knobs on the kernel command line (VM_APPEND): kmod.stress=SECONDS (30),
# kmod.fuzz=ITERATIONS (100000), kmod.race=SECONDS (5, the threaded
# fuzzer), kmod.race_rounds=N (1000 contexts for its mmap/CONFIGURE race;
# 300 on the debug kernel), kmod.inval_rounds=N (2000; 200 on the debug
# kernel).

# The variables are set for the suites that source this file:
# shellcheck disable=SC2034

T=$RC_BUILDDIR/tests
CTL=$RC_BUILDDIR/utils/regcachectl

knob()
{
	v=$(tr ' ' '\n' </proc/cmdline | sed -n "s/^kmod\.$1=//p" | tail -n 1)
	echo "${v:-$2}"
}
STRESS_S=$(knob stress 30)
FUZZ_N=$(knob fuzz 100000)
RACE_S=$(knob race 5)
# test_kmod_inval's visible_on_munmap_return rounds: 2000, and 200 on the
# debug kernel, where the 2000 took 70 s of each of its three runs (a
# round is a few system calls, each slowed by KASAN and lockdep; what
# they would catch there shows in the first rounds)
if [ "$RC_KERNEL" = debug ]; then
	KMOD_INVAL_ROUNDS=$(knob inval_rounds 200)
	KMOD_RACE_ROUNDS=$(knob race_rounds 300)
else
	KMOD_INVAL_ROUNDS=$(knob inval_rounds 2000)
	KMOD_RACE_ROUNDS=$(knob race_rounds 1000)
fi
export KMOD_INVAL_ROUNDS KMOD_RACE_ROUNDS

load()
{
	rc_kmod_load "$@"
}

unloaded()
{
	! grep -q '^regcache ' /proc/modules && [ ! -e /dev/regcache ]
}

# unload NAME: rmmod, then prove nothing is left behind.
unload()
{
	if rmmod regcache && unloaded; then
		rc_ok "$1"
	else
		rc_fail "$1" "rmmod failed or module/device still present"
	fi
}

if [ ! -f "$RC_KMOD" ]; then
	rc_fail "insmod regcache.ko" "$RC_KMOD not built"
	exit 1
fi
