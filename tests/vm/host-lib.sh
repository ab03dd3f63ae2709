# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# host-lib.sh: what run-vm.sh and run-2host.sh share to start a guest whose
# trees may live anywhere on the host (/root, /tmp, /run, /var/tmp, a path
# with a space).  Sourced after kernels.sh's rc_kernel_info.
#
# The guest sees the host root read-only over 9p but puts tmpfs on /tmp,
# /run, /var/tmp and /root (a guest must not write to the host's).  So no
# path reaches the guest on the kernel command line, which splits at
# spaces, and nothing is looked up on the host root after those tmpfs
# mounts cover it: rc_guest_files writes, for each guest, a list of mounts
# (guest.mounts) into its run folder, which the initramfs reads from the
# build tree's 9p share and applies AFTER the tmpfs mounts, binding each
# tree from a second, uncovered view of the host root.  The kernel command
# line carries only rc.run=, the run folder relative to the build tree.
#
#   rc_q VALUE                 VALUE quoted for sh (the guest's env file)
#   rc_qemu_path PATH          PATH for a QEMU -virtfs option (',' doubled)
#   rc_guest_initrd KDIR OUT   the cached initrd with this tree's
#                              initramfs-init.sh appended as /init
#   rc_guest_files RUNDIR KDIR writes RUNDIR/guest.mounts for one guest
#   rc_qemu_start ...          one guest's QEMU in the background
#   rc_guest_up RUNDIR         has that guest's init come up?
#   rc_early_panic RUNDIR      did its kernel panic before that?
#   rc_panic_line RUNDIR       its console's first "Kernel panic" line
#
# Needs RC_SRCDIR, RC_BUILDDIR (absolute), $here (tests/vm in the source).

rc_q()
{
	printf "'%s'\n" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

rc_qemu_path()
{
	printf '%s\n' "$1" | sed 's/,/,,/g'
}

# The initramfs in the kernel cache is shared by every build tree (and by
# older checkouts) that uses the cache, so it is never rebuilt for a change
# of initramfs-init.sh: the kernel unpacks concatenated cpio archives in
# order and a later file replaces an earlier one, so appending a one-file
# archive gives this run this tree's /init.
rc_guest_initrd()
{
	rc__ov=$2.d
	# shellcheck disable=SC2154 # here: the sourcing script's folder
	rm -rf "$rc__ov" &&
	mkdir -p "$rc__ov" &&
	cp "$here/initramfs-init.sh" "$rc__ov/init" &&
	chmod 755 "$rc__ov/init" &&
	cp "$1/initrd.img" "$2.tmp" &&
	(cd "$rc__ov" && echo init | cpio -o -H newc --quiet) >>"$2.tmp" &&
	mv "$2.tmp" "$2" &&
	rm -rf "$rc__ov"
}

# A path the guest can take: absolute, no newline or tab (the list's
# separators).
rc__path_ok()
{
	case $1 in
	/*) ;;
	*) echo "host-lib: '$1' is not an absolute path" >&2; return 1 ;;
	esac
	case $1 in
	*"$(printf '\t')"*|*"
"*)
		echo "host-lib: '$1' has a tab or newline: the guest cannot mount it" >&2
		return 1 ;;
	esac
}

# rc_guest_files RUNDIR KDIR: the mount list of one guest.  Lines, tab-
# separated, applied in order:
#   build  GUESTPATH            the build tree's 9p share (read-write)
#   bind   HOSTPATH GUESTPATH   HOSTPATH of the uncovered host root, bound
#   modules HOSTPATH            the kernel's module tree on /lib/modules/KVER
#   init   GUESTPATH            the guest init script (tests/vm/guest-init.sh)
#   env    GUESTPATH            its environment file (RUNDIR/guest.env)
# HOSTPATH is physical (symlinks resolved on the host: in the guest an
# absolute symlink would resolve against the initramfs); GUESTPATH is the
# path the host's scripts and Makefiles use.  Trees are mounted parents
# first, so a build tree inside the source tree (or the reverse) and a
# cache inside the build tree all work.
rc_guest_files()
{
	rc__run=$1
	rc__kdir=$2
	rc__tab=$(printf '\t')
	rc__src=$(cd "$RC_SRCDIR" && pwd -P) || return 1
	# configure run as ../configure gives abs_top_srcdir=BUILD/..: mount
	# at the path without the "..", or the bind on it would be sorted
	# after the build tree's mount and cover it.
	rc__srcg=$(cd "$RC_SRCDIR" && pwd) || return 1
	rc__bld=$(cd "$RC_BUILDDIR" && pwd) || return 1
	rc__mod=$(cat "$rc__kdir/moddir") || return 1
	rc__mod=$(cd "$rc__mod" && pwd -P) || return 1
	for p in "$rc__srcg" "$rc__bld" "$rc__src" "$rc__mod" "$rc__run"; do
		rc__path_ok "$p" || return 1
	done
	case $rc__run in
	"$RC_BUILDDIR"/*) ;;
	*) echo "host-lib: run folder $rc__run is not in the build tree" >&2; return 1 ;;
	esac
	# Sorted on the guest path (put first for sort, then cut): a parent
	# sorts before anything under it.
	{
		# The build tree is a 9p share of its own; a source tree that
		# is the build tree or inside it comes with it.
		case $rc__srcg/ in
		"$rc__bld"/*) ;;
		*) printf '%s\tbind\t%s\t%s\n' "$rc__srcg" "$rc__src" "$rc__srcg" ;;
		esac
		printf '%s\tbuild\t%s\n' "$rc__bld" "$rc__bld"
	} | LC_ALL=C sort -t "$rc__tab" -k 1,1 | cut -f 2- >"$rc__run/guest.mounts.tmp" &&
	{
		printf 'modules\t%s\n' "$rc__mod"
		printf 'init\t%s\n' "$rc__srcg/tests/vm/guest-init.sh"
		printf 'env\t%s\n' "$rc__run/guest.env"
	} >>"$rc__run/guest.mounts.tmp" &&
	mv "$rc__run/guest.mounts.tmp" "$rc__run/guest.mounts"
}

# rc_guest_run RUNDIR: the kernel command line word naming the run folder.
rc_guest_run()
{
	rc__rel=${1#"$RC_BUILDDIR"/}
	case $rc__rel in
	*[[:space:]]*)
		echo "host-lib: run folder name '$rc__rel' has white space" >&2
		return 1 ;;
	esac
	echo "rc.run=$rc__rel"
}

# rc_qemu_start RUNDIR KERNEL INITRD NETDEV NIC: boot one guest (TCG) in
# the background under timeout VM_TIMEOUT, its pid in $!: console in
# RUNDIR/console.log, QEMU's own output in RUNDIR/qemu.out, rc.run= naming
# RUNDIR (checked by the caller with rc_guest_run first), NETDEV and NIC
# the -netdev and -device of its one network card.
# Reads QEMU, VM_TIMEOUT, VM_SMP, VM_MEM, VM_APPEND, KCMDLINE
# (rc_kernel_info) and tsc_khz (the caller's tests/vm/tsc-khz, or empty).
# timeout runs QEMU in its own process group: a Ctrl-C at the terminal
# reaches the caller, whose trap takes QEMU down.
rc_qemu_start()
{
	timeout -k 10 "$VM_TIMEOUT" "$QEMU" \
		-accel tcg,thread=multi -cpu max -smp "$VM_SMP" -m "$VM_MEM" \
		-nodefaults -no-user-config -display none -monitor none -no-reboot \
		-serial "file:$1/console.log" \
		-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		-kernel "$2" -initrd "$3" \
		-append "console=ttyS0 loglevel=4 panic=-1 $KCMDLINE${tsc_khz:+ tsc_early_khz=$tsc_khz} $(rc_guest_run "$1") $VM_APPEND" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs "local,path=$(rc_qemu_path "$RC_BUILDDIR"),mount_tag=build,security_model=none,multidevs=remap" \
		-netdev "$4" -device "$5" \
		</dev/null >"$1/qemu.out" 2>&1 &
}

# rc_guest_up RUN_FOLDER: has the guest of RUN_FOLDER come up?  Its init
# wrote boot-seconds there (over 9p), or its console shows the init's
# first line or an initramfs failure (the boot watchdog of run-vm.sh and
# run-2host.sh; a guest's serial console may stay silent, the file not).
rc_guest_up()
{
	[ -s "$1/boot-seconds" ] ||
	grep -q -e 'rc-guest: .* up after' -e 'rc-initramfs: FAILED' \
		"$1/console.log" 2>/dev/null
}

# rc_early_panic RUN_FOLDER: did that guest's kernel panic before its init
# came up?  Nothing of ours had run then (regcache.ko is loaded by the
# suites); once in a CI rehearsal the 7.3 kernel oopsed at 2.3 s of boot
# on an int3 of its own text patching under TCG.  The runners boot such a
# guest once more, as they do a silent one.
rc_early_panic()
{
	! rc_guest_up "$1" && [ -n "$(rc_panic_line "$1")" ]
}

# rc_panic_line RUN_FOLDER: the first "Kernel panic" line of that guest's
# console (empty when there is none), for a verdict or a warning.
rc_panic_line()
{
	grep -m1 'Kernel panic' "$1/console.log" 2>/dev/null | tr -d '\r'
}

# rc_dmesg_bad DMESG OUT: the lines of a guest's kernel log (and kmemleak
# report, appended by guest-init.sh) that fail its "dmesg clean" point,
# into OUT; true when there are none.  The debug kernel's boot banners
# that name lockdep and kmemleak are the only lines excused.
rc_dmesg_bad()
{
	rc__pat='BUG:|WARNING:|Oops|general protection|KASAN|possible circular locking|inconsistent lock state|possible recursive locking|lockdep|unreferenced object|kmemleak|leak'
	rc__benign='RCU lockdep checking is enabled|kmemleak: Kernel memory leak detector initialized'
	grep -E "$rc__pat" "$1" 2>/dev/null | grep -v -E "$rc__benign" >"$2"
	[ ! -s "$2" ]
}
