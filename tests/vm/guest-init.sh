#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# guest-init.sh: PID 1 of the test guest, run by the host's /bin/sh after
# the initramfs switched to the host root (tests/vm/initramfs-init.sh).
#
# Reads the run's environment file (its path is the first argument, given
# by the initramfs from the guest's mount list: host environment variables
# do not reach the guest), sets up soft-RoCE
# (rdma_rxe + rdma_ucm, static IPv4 on eth0, rxe0, wait for ACTIVE, find
# the RoCE v2 IPv4 GID index), runs ONE suite script with its TAP points
# going to $RC_TAP, saves dmesg and reports through isa-debug-exit:
#   0  the suite ran (its own result is in its TAP points and rc file)
#   2  rxe setup failed      4  the environment file is missing
# PID 1 must never exit: the kernel would panic.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
umask 022

rc_exit()
{
	sync
	# the status byte as an octal escape: the format is built on purpose
	# shellcheck disable=SC2059
	printf "\\$(printf '%03o' "$1")" | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
	# Not reached unless isa-debug-exit is missing.
	echo "rc-guest: isa-debug-exit did not stop the machine"
	poweroff -f
	while :; do sleep 60; done
}

rc_setup_fail()
{
	echo "rc-guest: SETUP FAILED: $*"
	echo "$*" >"$RC_RUNDIR/reason"
	dmesg >"$RC_RUNDIR/dmesg.txt" 2>&1
	rc_exit 2
}

envfile=${1:-}
if [ -z "$envfile" ] || [ ! -f "$envfile" ]; then
	echo "rc-guest: environment file '$envfile' not found"
	rc_exit 4
fi
set -a
# shellcheck source=/dev/null # written by run-vm.sh for each guest
. "$envfile"
set +a
read -r up _ </proc/uptime
echo "rc-guest: $(uname -r) up after ${up}s, suite $RC_SUITE"
echo "$up" >"$RC_RUNDIR/boot-seconds"

mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts 2>/dev/null
mount -t tmpfs -o mode=1777 tmpfs /dev/shm 2>/dev/null
# dash and busybox sh both have ulimit -l
# shellcheck disable=SC3045
ulimit -l unlimited 2>/dev/null
hostname rc-guest 2>/dev/null
ip link set lo up

# --- soft-RoCE --------------------------------------------------------
modprobe virtio_net 2>/dev/null
[ -d /sys/class/net/eth0 ] || rc_setup_fail "no eth0 (virtio-net) in the guest"
ip addr add "$RXE_ADDR/24" dev eth0 || rc_setup_fail "ip addr add $RXE_ADDR dev eth0"
ip link set eth0 up || rc_setup_fail "ip link set eth0 up"
modprobe rdma_rxe || rc_setup_fail "modprobe rdma_rxe"
modprobe rdma_ucm || rc_setup_fail "modprobe rdma_ucm"
rdma link add "$RXE_DEV" type rxe netdev eth0 ||
	rc_setup_fail "rdma link add $RXE_DEV type rxe netdev eth0"
port=/sys/class/infiniband/$RXE_DEV/ports/1
i=0
until grep -q ACTIVE "$port/state" 2>/dev/null; do
	i=$((i + 1))
	[ $i -gt 100 ] && rc_setup_fail "$RXE_DEV did not become ACTIVE in 20 s (state: $(cat "$port/state" 2>&1))"
	sleep 0.2
done

# The RoCE v2 GID carrying RXE_ADDR as an IPv4-mapped address; its index
# depends on the order addresses appeared, so look it up.
want=$(echo "$RXE_ADDR" | awk -F. '{ printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1, $2, $3, $4 }')
RXE_GID_INDEX=
i=0
while [ $i -lt 50 ] && [ -z "$RXE_GID_INDEX" ]; do
	for t in "$port"/gid_attrs/types/*; do
		n=${t##*/}
		if [ "$(cat "$t" 2>/dev/null)" = "RoCE v2" ] &&
		   [ "$(cat "$port/gids/$n" 2>/dev/null)" = "$want" ]; then
			RXE_GID_INDEX=$n
			break
		fi
	done
	[ -n "$RXE_GID_INDEX" ] || sleep 0.2
	i=$((i + 1))
done
[ -n "$RXE_GID_INDEX" ] || rc_setup_fail "no RoCE v2 GID for $RXE_ADDR on $RXE_DEV"
RC_KVER=$(uname -r)
export RXE_GID_INDEX RC_KVER
echo "rc-guest: $RXE_DEV ACTIVE, $RXE_ADDR, RoCE v2 GID index $RXE_GID_INDEX"

# --- the suite --------------------------------------------------------
# A kmemleak kernel (the debug kernel): forget what boot and the rxe setup
# left, so the scan after the suite reports only the suite's leaks.
leak=/sys/kernel/debug/kmemleak
if [ -w "$leak" ]; then
	{ echo scan >"$leak" && echo clear >"$leak"; } ||
		rc_setup_fail "kmemleak: cannot scan and clear $leak"
fi
echo "rc-harness: suite $RC_SUITE starts" >/dev/kmsg
read -r t0 _ </proc/uptime
echo "rc-guest: ===== suite $RC_SUITE ====="
cd /tmp || rc_setup_fail "cd /tmp"
/bin/sh "$RC_SRCDIR/tests/vm/suites/$RC_SUITE.sh" </dev/null
rc=$?
cd /
read -r t1 _ </proc/uptime
echo "rc-guest: ===== suite $RC_SUITE exited with status $rc ====="
echo "$rc" >"$RC_RUNDIR/suite-status"
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", b - a }' >"$RC_RUNDIR/suite-seconds"
# Let deferred work (rxe cleanup, module release) print before the scan.
sleep 1
if [ -w "$leak" ]; then
	# kmemleak reports only objects older than 5 s, and an object is
	# suspect only when two scans agree; its report lines ("unreferenced
	# object ...") go after the kernel log, where run-vm.sh looks.
	sleep 5
	read -r k0 _ </proc/uptime
	echo scan >"$leak"
	echo scan >"$leak"
	cat "$leak" >"$RC_RUNDIR/kmemleak.txt" 2>&1
	read -r k1 _ </proc/uptime
	echo "rc-guest: kmemleak: two scans in $(awk -v a="$k0" -v b="$k1" 'BEGIN { printf "%.1f", b - a }') s, $(grep -c '^unreferenced object' "$RC_RUNDIR/kmemleak.txt") suspected leaks"
fi
dmesg >"$RC_RUNDIR/dmesg.txt" 2>&1
[ -s "$RC_RUNDIR/kmemleak.txt" ] && cat "$RC_RUNDIR/kmemleak.txt" >>"$RC_RUNDIR/dmesg.txt"
rc_exit 0
