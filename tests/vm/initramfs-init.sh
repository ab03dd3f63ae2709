#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# busybox sh is ash, which ShellCheck checks as dash:
# shellcheck shell=dash
#
# /init of the harness initramfs (static busybox).  Loads the virtio, 9p
# and virtio_net modules, mounts the build tree's 9p share, reads the
# guest's mount list from its run folder there (rc.run= on the kernel
# command line, relative to the build tree; written by host-lib.sh's
# rc_guest_files), mounts the host's root filesystem read-only over 9p as
# the new root, tmpfs on the scratch folders (/tmp, /run, /var/tmp, /root)
# and /lib/modules, and only then the trees of the list at their host
# paths: the build tree read-write, the source tree and the kernel's module
# tree bound from a second view of the host root that no tmpfs covers.  So
# trees under /root or /tmp, and paths with spaces (never on the command
# line), work.  Then switches to the guest init script of the list, giving
# it its environment file.  Any failure here reports status 3 through
# isa-debug-exit.
#
# run-vm.sh appends this file to the cached initrd per run (host-lib.sh's
# rc_guest_initrd), so a change here needs no cache rebuild.
/bin/busybox --install -s /bin
echo "rc-initramfs: started"
export PATH=/bin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

fail()
{
	echo "rc-initramfs: FAILED: $*"
	printf '\003' | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
	sleep 5
	poweroff -f
}

run=
# the command line's words and the list's names have no white space
# shellcheck disable=SC2013
for w in $(cat /proc/cmdline); do
	case $w in
	rc.run=*) run=${w#rc.run=} ;;
	esac
done
[ -n "$run" ] || fail "no rc.run= on the kernel command line"

# shellcheck disable=SC2013
for m in $(cat /modules.list); do
	insmod "/lib/modules/$m" || fail "insmod $m"
done

opts=trans=virtio,version=9p2000.L,msize=262144
mkdir -p /build /hostroot
mount -t 9p -o "$opts,cache=mmap" build /build ||
	fail "cannot mount the build tree (9p tag build)"
cp "/build/$run/guest.mounts" /guest.mounts ||
	fail "no guest.mounts in the build tree's $run"
mount -t 9p -o "$opts,ro,cache=loose" hostroot /newroot ||
	fail "cannot mount the host root (9p tag hostroot)"
# The view the trees are taken from: a plain (not recursive) bind, so the
# tmpfs mounted on /newroot below do not cover it.
mount --bind /newroot /hostroot || fail "cannot bind the host root on /hostroot"

# Scratch folders first: the trees may live under them.
mount -t tmpfs -o mode=755 tmpfs /newroot/lib/modules ||
	fail "cannot mount tmpfs on /lib/modules"
for d in tmp run var/tmp root; do
	mount -t tmpfs -o mode=1777 tmpfs "/newroot/$d" || fail "tmpfs on /$d"
done
chmod 700 /newroot/root

kver=$(uname -r)
init='' env='' tab=$(printf '\t')
while IFS=$tab read -r kind a b; do
	case $kind in
	build)
		{ mkdir -p "/newroot$a" && mount --move /build "/newroot$a"; } ||
			fail "cannot mount the build tree on $a"
		;;
	bind)
		{ mkdir -p "/newroot$b" && mount --bind "/hostroot$a" "/newroot$b"; } ||
			fail "cannot bind $a of the host root on $b"
		;;
	modules)
		{ mkdir -p "/newroot/lib/modules/$kver" &&
			mount --bind "/hostroot$a" "/newroot/lib/modules/$kver"; } ||
			fail "cannot bind $a on /lib/modules/$kver"
		;;
	init) init=$a ;;
	env) env=$a ;;
	*) fail "unknown line '$kind' in guest.mounts" ;;
	esac
done </guest.mounts
{ [ -n "$init" ] && [ -n "$env" ]; } || fail "guest.mounts names no init or env"
for d in proc sys dev; do
	mount --move "/$d" "/newroot/$d" || fail "cannot move /$d"
done
[ -f "/newroot$init" ] || fail "guest init $init not found on the host root"
exec switch_root /newroot /bin/sh "$init" "$env"
