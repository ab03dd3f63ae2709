# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# tuning: every command of rdmaxfer-tuning(7) runs as written, as root, in
# the guest, in the page's order (tests/man-commands.sh extracts them).
# The guest's root is the host's, read-only: the suite first makes it look
# like a machine where "make install" ran: a tmpfs overlay over
# /lib/modules/KVER with regcache.ko in extra/ and depmod run (so
# "modprobe regcache" works as in the page), and the build tree's
# utils/ first in PATH (regcachectl, rdmaxfer-info, as if installed).
# Each command is one test point; then the values the page sets are
# checked, and the module is unloaded.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

kdir=/lib/modules/$RC_KVER
setup()
{
	mkdir -p /tmp/tuning/upper /tmp/tuning/work &&
	modprobe overlay &&
	mount -t overlay overlay \
		-o "lowerdir=$kdir,upperdir=/tmp/tuning/upper,workdir=/tmp/tuning/work" \
		"$kdir" &&
	mkdir -p "$kdir/extra" &&
	cp "$RC_KMOD" "$kdir/extra/regcache.ko" &&
	depmod -a "$RC_KVER"
}
rc_check "installed module tree (overlay, extra/regcache.ko, depmod)" setup || exit 0

PATH=$RC_BUILDDIR/utils:$PATH
export PATH
"$RC_SRCDIR/tests/man-commands.sh" "$RC_SRCDIR/man/rdmaxfer-tuning.7" >/tmp/tuning/cmds
n=$(wc -l </tmp/tuning/cmds)
if [ "$n" -ge 10 ]; then
	rc_ok "rdmaxfer-tuning(7) has $n commands"
else
	rc_fail "rdmaxfer-tuning(7) has $n commands" "the extractor found fewer than 10"
fi
while IFS= read -r cmd; do
	echo "# $cmd"
	rc_check "rdmaxfer-tuning(7): $cmd" sh -c "$cmd" </dev/null
done </tmp/tuning/cmds

# What the commands changed.
v=$(cat /sys/module/regcache/parameters/max_pinned_bytes 2>&1)
if [ "$v" = 8589934592 ]; then
	rc_ok "regcachectl set max_pinned_bytes took effect"
else
	rc_fail "regcachectl set max_pinned_bytes took effect" "read '$v'"
fi
v=$(sysctl -n vm.unprivileged_userfaultfd 2>&1)
if [ "$v" = 1 ]; then
	rc_ok "vm.unprivileged_userfaultfd is 1"
else
	rc_fail "vm.unprivileged_userfaultfd is 1" "read '$v'"
fi
rc_check "rmmod regcache" rmmod regcache
