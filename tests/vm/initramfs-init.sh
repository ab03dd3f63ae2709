#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# /init of the harness initramfs (static busybox).  Loads the virtio, 9p
# and virtio_net modules, mounts the host's root filesystem read-only over
# 9p as the new root, the build tree read-write at its host path, the
# kernel's extracted module tree on /lib/modules/KVER, tmpfs on the
# scratch folders, and switches to the guest init script (rc.init=) on the
# host root.  Any failure here reports status 3 through isa-debug-exit.
/bin/busybox --install -s /bin
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

build= init= moddir=
for w in $(cat /proc/cmdline); do
	case $w in
	rc.build=*) build=${w#rc.build=} ;;
	rc.init=*) init=${w#rc.init=} ;;
	rc.moddir=*) moddir=${w#rc.moddir=} ;;
	esac
done
[ -n "$build" ] && [ -n "$init" ] && [ -n "$moddir" ] ||
	fail "rc.build=, rc.init= and rc.moddir= must be on the kernel command line"

for m in $(cat /modules.list); do
	insmod "/lib/modules/$m" || fail "insmod $m"
done

opts=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o "$opts,ro,cache=loose" hostroot /newroot ||
	fail "cannot mount the host root (9p tag hostroot)"
mount -t 9p -o "$opts,cache=mmap" build "/newroot$build" ||
	fail "cannot mount the build tree $build (9p tag build)"
mount -t tmpfs -o mode=755 tmpfs /newroot/lib/modules ||
	fail "cannot mount tmpfs on /lib/modules"
kver=$(uname -r)
mkdir -p "/newroot/lib/modules/$kver"
mount --bind "/newroot$moddir" "/newroot/lib/modules/$kver" ||
	fail "cannot bind $moddir on /lib/modules/$kver"
for d in tmp run var/tmp root; do
	mount -t tmpfs -o mode=1777 tmpfs "/newroot/$d" || fail "tmpfs on /$d"
done
chmod 700 /newroot/root
for d in proc sys dev; do
	mount --move "/$d" "/newroot/$d" || fail "cannot move /$d"
done
[ -f "/newroot$init" ] || fail "guest init $init not found on the host root"
exec switch_root /newroot /bin/sh "$init"
