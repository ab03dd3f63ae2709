# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# rdmaxfer: librdmaxfer on rxe0, client and server agents in one guest
# over loopback RoCE to $RXE_ADDR.  The transfer program runs twice: with
# the userfaultfd monitor (no module), then with regcache.ko loaded, so
# cache integration (register once, munmap + mmap) is proven with both
# monitors.  Every run is bounded by timeout.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

# A --enable-sanitizers build tree: first prove that a sanitizer report
# fails a program in this guest (the options of tests/sanitize.sh reached it)
[ "${RC_SANITIZERS:-no}" = no ] ||
	rc_run "sanitizers" "$RC_BUILDDIR/tests/test_sanitizers"

export RXE_ADDR RXE_GID_INDEX
prog="$RC_BUILDDIR/tests/test_rdmaxfer"

rc_run "rdmaxfer (uffd monitor)" timeout 400 env REGCACHE_MONITOR=uffd "$prog"

if [ -f "$RC_KMOD" ] && insmod "$RC_KMOD"; then
	i=0
	while [ ! -c /dev/regcache ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
	rc_run "rdmaxfer (kmod monitor)" timeout 400 env REGCACHE_MONITOR=kmod "$prog"
	rmmod regcache
else
	rc_skip "rdmaxfer (kmod monitor)" "regcache.ko not loadable: $RC_KMOD"
fi
