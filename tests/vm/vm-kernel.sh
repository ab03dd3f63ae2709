#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# vm-kernel.sh KERNEL CACHE: make one Debian kernel bootable under QEMU.
#
# Downloads the kernel packages with `apt-get download` (nothing is
# installed and the host's /boot stays untouched), unpacks them with
# dpkg-deb, runs depmod, extracts the uncompressed ELF vmlinux from the
# bzImage (PVH entry: boots ~2.5 s faster under TCG than the bzImage) and
# builds a busybox initramfs holding the virtio/9p/virtio_net modules
# (its /init is a copy of initramfs-init.sh as it was then; each run
# appends the tree's current one, see host-lib.sh's rc_guest_initrd).
# The result lives in CACHE/KVER/ and is reused: a second run downloads
# nothing.  Files: vmlinux (bzImage for the debug kernel), initrd.img,
# root/ (the unpacked packages),
# moddir (path of the module tree), kver, ready.
#
# KERNEL 7.3 comes from trixie-backports through a separate apt
# configuration in CACHE/apt-trixie/ (own sources, lists, cache and an
# empty dpkg status), so the host's packages are never upgraded.
set -eu

srcdir=$(cd "$(dirname "$0")" && pwd)
. "$srcdir/kernels.sh"

kernel=$1
cache=$2
rc_kernel_info "$kernel"
. "$srcdir/apt.sh"
kdir=$cache/$KVER

die() { echo "vm-kernel: $kernel: $*" >&2; exit 1; }

[ -f "$kdir/ready" ] && exit 0
mkdir -p "$kdir"

# Two suites of one kernel may be prepared at once under make -j.
exec 9>"$kdir/.lock"
flock 9
[ -f "$kdir/ready" ] && exit 0

# --- vmlinux ----------------------------------------------------------
# The bzImage carries the compressed ELF kernel after its setup code: try
# each compressor's magic until the output is an ELF file.
rc_is_elf() { [ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; }
rc_extract_vmlinux()
{
	for spec in 'xz \xfd7zXZ\x00' 'zstd \x28\xb5\x2f\xfd' 'gzip \x1f\x8b\x08' 'lz4 \x02\x21\x4c\x18'; do
		tool=${spec%% *}
		magic=${spec#* }
		command -v "$tool" >/dev/null 2>&1 || continue
		# shellcheck disable=SC2013 # byte offsets, one word each
		for off in $(LC_ALL=C grep -obUaP "$magic" "$1" | cut -d: -f1); do
			tail -c +$((off + 1)) "$1" | "$tool" -dc >"$2.tmp" 2>/dev/null || true
			if [ -s "$2.tmp" ] && rc_is_elf "$2.tmp"; then
				mv "$2.tmp" "$2"
				return 0
			fi
		done
	done
	rm -f "$2.tmp"
	return 1
}

# --- unpack -----------------------------------------------------------
# Debian's packages: unpacked, depmod'ed, the ELF vmlinux extracted.
rc_unpack_debian()
{
	# shellcheck disable=SC2086 # the package names, one word each
	rc_download "$kdir/debs" $KPKGS
	rm -rf "$kdir/root"
	mkdir -p "$kdir/root"
	for deb in "$kdir"/debs/*.deb; do
		dpkg-deb -x "$deb" "$kdir/root" || die "dpkg-deb -x $deb failed"
	done

	if [ -d "$kdir/root/lib/modules/$KVER" ]; then
		modbase=$kdir/root
	elif [ -d "$kdir/root/usr/lib/modules/$KVER" ]; then
		modbase=$kdir/root/usr
	else
		die "no lib/modules/$KVER in $KPKGS"
	fi
	depmod -b "$modbase" "$KVER" || die "depmod failed"

	vmlinuz=
	for f in "$kdir/root/boot/vmlinuz-$KVER" "$modbase/lib/modules/$KVER/vmlinuz"; do
		[ -f "$f" ] && vmlinuz=$f && break
	done
	[ -n "$vmlinuz" ] || die "no vmlinuz in $KPKGS"
	rc_extract_vmlinux "$vmlinuz" "$kdir/vmlinux" ||
		die "cannot extract an ELF vmlinux from $vmlinuz"
}

if [ "$KAPT" = source ]; then
	# Built here from source (the debug kernel): a bzImage, every driver
	# built in, so the initramfs loads no module.
	sh "$srcdir/debug-kernel.sh" "$KSRC" "$srcdir/debug-kernel.config" \
		"$KVER" "$kdir" || die "building the debug kernel failed"
	modbase=$kdir/root
else
	rc_unpack_debian
fi
echo "$modbase/lib/modules/$KVER" >"$kdir/moddir"
echo "$KVER" >"$kdir/kver"

# --- initramfs --------------------------------------------------------
busybox=$(command -v busybox || true)
[ -n "$busybox" ] || die "busybox not found (apt-get install busybox-static)"
if ldd "$busybox" >/dev/null 2>&1; then
	die "$busybox is dynamically linked (apt-get install busybox-static)"
fi

ird=$kdir/initramfs.d
rm -rf "$ird"
mkdir -p "$ird/bin" "$ird/dev" "$ird/proc" "$ird/sys" "$ird/newroot" "$ird/lib/modules"
cp "$busybox" "$ird/bin/busybox"
cp "$srcdir/initramfs-init.sh" "$ird/init"
chmod 755 "$ird/init"

# Module load order from modprobe; busybox insmod wants plain .ko files.
: >"$ird/modules.list"
for m in virtio_pci virtio_net 9p 9pnet_virtio; do
	[ "$KAPT" = source ] && continue
	modprobe -d "$modbase" -S "$KVER" --show-depends "$m" ||
		die "modprobe --show-depends $m failed"
done | awk '$1 == "insmod" {
	# The path is the rest of the line: the cache may have spaces in it.
	sub(/^insmod /, ""); sub(/ +$/, "")
	if (!seen[$0]++) print
}' >"$kdir/initramfs.modules"
while read -r ko; do
	name=$(basename "$ko")
	case $name in
	*.ko.xz) xz -dc "$ko" >"$ird/lib/modules/${name%.xz}"; name=${name%.xz} ;;
	*.ko.zst) zstd -qdc "$ko" >"$ird/lib/modules/${name%.zst}"; name=${name%.zst} ;;
	*.ko.gz) gzip -dc "$ko" >"$ird/lib/modules/${name%.gz}"; name=${name%.gz} ;;
	*) cp "$ko" "$ird/lib/modules/$name" ;;
	esac
	echo "$name" >>"$ird/modules.list"
done <"$kdir/initramfs.modules"
[ -s "$ird/modules.list" ] || [ "$KAPT" = source ] ||
	die "no initramfs modules found"

(cd "$ird" && find . | cpio -o -H newc --quiet) >"$kdir/initrd.img.tmp" ||
	die "cpio failed"
mv "$kdir/initrd.img.tmp" "$kdir/initrd.img"
rm -rf "$ird"
touch "$kdir/ready"
echo "vm-kernel: $kernel ($KVER) ready in $kdir"
