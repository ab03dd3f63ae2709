#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# run-vm.sh vm/SUITE@KERNEL.vmt: boot one QEMU (TCG) guest on KERNEL, run
# tests/vm/suites/SUITE.sh in it and print its test points as TAP for the
# automake tap-driver: the guest's points, then "dmesg clean", then the
# plan.  Exit 0 when the guest finished its suite, non-zero when it could
# not be prepared, did not finish (timeout, panic, setup failure) or a
# point failed.
#
# Environment (set by tests/vm.am): RC_SRCDIR, RC_BUILDDIR (absolute top
# directories), RC_LINUX_VERSION (release the top build's kmod/ targets),
# QEMU, VM_CACHE (kernel cache), VM_TIMEOUT (seconds per guest),
# VM_BOOT_TIMEOUT (seconds until the guest's init must have spoken),
# VM_MEM, VM_SMP, VM_APPEND (extra kernel command line).
set -u

vmt=$1
t=$(basename "$vmt" .vmt)
suite=${t%@*}
kernel=${t#*@}
here=$(cd "$(dirname "$0")" && pwd)
: "${RC_SRCDIR:=$(cd "$here/../.." && pwd)}"
: "${RC_BUILDDIR:?RC_BUILDDIR must be set (run through make check-vm)}"
: "${QEMU:=qemu-system-x86_64}"
: "${VM_CACHE:=$RC_BUILDDIR/tests/vm/cache}"
: "${VM_TIMEOUT:=600}"
: "${VM_MEM:=1G}"
: "${VM_SMP:=2}"
: "${VM_APPEND:=}"
: "${VM_BOOT_TIMEOUT:=150}"
# KASAN, lockdep and kmemleak make the debug kernel's guests 2-5x slower
# (the kmod suite: 5 minutes on a quiet host, 20 on a busy one): its
# guests get three times the limit.
[ "$kernel" = debug ] && VM_TIMEOUT=$((VM_TIMEOUT * 3)) &&
	VM_BOOT_TIMEOUT=$((VM_BOOT_TIMEOUT * 2))
. "$here/kernels.sh"
. "$here/host-lib.sh"

rundir=$RC_BUILDDIR/tests/vm/run/$suite@$kernel
results=$RC_BUILDDIR/tests/vm/results/$suite@$kernel
now() { date +%s.%N | cut -c1-14; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
# cpu_of FILE: the CPU seconds (user + system) of the waited-for children
# in FILE, the output of "times" (run in this shell, never in $(...): a
# subshell has no children).
cpu_of()
{
	awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, "m");
		sub(/s$/, "", a[2]); t += a[1] * 60 + a[2] } printf "%.1f", t }' "$1"
}
t_start=$(now)

# A harness failure: one failing point naming the cause, then stop.
bail()
{
	echo "not ok 1 - $suite@$kernel: $*"
	echo "1..1"
	echo "$suite@$kernel: $*" >&2
	exit 1
}

comment_file()
{
	sed 's/\r$//; s/^/# /' "$1"
}

[ -f "$RC_SRCDIR/tests/vm/suites/$suite.sh" ] ||
	bail "no suite tests/vm/suites/$suite.sh"
command -v "$QEMU" >/dev/null 2>&1 ||
	bail "QEMU ($QEMU) not found: apt-get install qemu-system-x86"
rc_kernel_info "$kernel" 2>"$RC_BUILDDIR/tests/vm/.kinfo.$$" ||
	bail "$(cat "$RC_BUILDDIR/tests/vm/.kinfo.$$"; rm -f "$RC_BUILDDIR/tests/vm/.kinfo.$$")"
rm -f "$RC_BUILDDIR/tests/vm/.kinfo.$$"

rm -rf "$rundir" "$results"
mkdir -p "$rundir" "$results" || bail "cannot create $rundir"
# Absolute: the helper scripts run from other folders, and the guest's
# mount list names the module tree in it.
{ mkdir -p "$VM_CACHE" && VM_CACHE=$(cd "$VM_CACHE" && pwd); } ||
	bail "cannot create the kernel cache $VM_CACHE"

# --- kernel and module ------------------------------------------------
if ! sh "$here/vm-kernel.sh" "$kernel" "$VM_CACHE" >"$rundir/prepare.log" 2>&1; then
	comment_file "$rundir/prepare.log"
	bail "cannot prepare kernel $kernel: $(tail -n 1 "$rundir/prepare.log")"
fi
kdir=$VM_CACHE/$KVER
kimage=$kdir/vmlinux
[ -f "$kdir/bzImage" ] && kimage=$kdir/bzImage
t_kernel=$(now)
if ! sh "$here/kbuild.sh" "$kernel" >"$rundir/kbuild.log" 2>&1; then
	comment_file "$rundir/kbuild.log"
	bail "cannot build regcache.ko for $kernel: $(tail -n 1 "$rundir/kbuild.log")"
fi
kmod=$(sed -n 's/^RC_KMOD=//p' "$rundir/kbuild.log" | tail -n 1)
[ -f "$kmod" ] || bail "kbuild.sh named no module for $kernel"
t_kmod=$(now)

# --- the guest's environment --------------------------------------------
# Quoted: the trees may have spaces or quotes in their paths.
cat >"$rundir/guest.env" <<EOS
RC_SUITE=$(rc_q "$suite")
RC_SRCDIR=$(rc_q "$RC_SRCDIR")
RC_BUILDDIR=$(rc_q "$RC_BUILDDIR")
RC_KMOD=$(rc_q "$kmod")
RC_KERNEL=$(rc_q "$kernel")
RC_KVER=$(rc_q "$KVER")
RC_RESULTS=$(rc_q "$results")
RC_RUNDIR=$(rc_q "$rundir")
RC_TAP=$(rc_q "$rundir/tap")
RC_TAP_COUNT='/tmp/rc-tap-count'
RXE_DEV='rxe0'
RC_CI='$([ "${CI:-}" = true ] && echo 1 || echo 0)'
RXE_ADDR='10.0.2.15'
EOS
: >"$rundir/tap"
# Where the trees are, for the initramfs (no path on the command line).
rc_guest_files "$rundir" "$kdir" 2>"$rundir/mounts.err" ||
	bail "cannot write the guest's mount list: $(cat "$rundir/mounts.err")"
rc_guest_run "$rundir" >/dev/null 2>"$rundir/mounts.err" ||
	bail "$(cat "$rundir/mounts.err")"
rc_guest_initrd "$kdir" "$rundir/initrd.img" ||
	bail "cannot append initramfs-init.sh to $kdir/initrd.img"

# --- boot ------------------------------------------------------------
# Under TCG the guest's TSC is the host's: give the guest its frequency so
# it does not calibrate it against the emulated PIT, which on a busy host
# is off by 10x and makes the guest clock (timeouts, timings) run too fast.
tsc_khz=$("$RC_BUILDDIR/tests/vm/tsc-khz" 2>/dev/null) || tsc_khz=
[ -n "$tsc_khz" ] || echo "# warning: tests/vm/tsc-khz gave no TSC frequency: the guest calibrates its own"
qpid=
cleanup()
{
	if [ -n "$qpid" ]; then
		kill "$qpid" 2>/dev/null
		sleep 0.5
		kill -9 "$qpid" 2>/dev/null
		wait "$qpid" 2>/dev/null
		qpid=
	fi
}
trap cleanup EXIT
trap 'cleanup; echo "# interrupted"; exit 1' INT TERM HUP

boot_qemu()
{
	rc_qemu_start "$rundir" "$kimage" "$rundir/initrd.img" \
		user,id=n0,restrict=on virtio-net-pci,netdev=n0
	qpid=$!
}

# The boot watchdog.  A guest's init writes boot-seconds into its run
# folder (over 9p) and prints "rc-guest: ... up after" 4-15 s after QEMU
# starts (CI's slowest, three guests on two cores: about 40 s).  Once in
# CI a 6.1 guest printed nothing at all in 600 s while QEMU spun at full
# CPU: a boot that never reached our init (see no_timer_check in
# kernels.sh for the likeliest cause).  A guest whose init has shown
# neither sign within VM_BOOT_TIMEOUT is killed and booted once more,
# loudly; a second silent boot fails the suite.  So is a guest whose
# kernel panicked before its init came up (rc_early_panic), up to three
# boots.  Nothing of
# ours has run by then but the initramfs, which prints "rc-initramfs:
# started" first.
tries=0
while :; do
	tries=$((tries + 1))
	: >"$rundir/tap"
	rm -f "$rundir/boot-seconds"
	times >"$rundir/times0"
	boot_qemu
	t_boot=$(date +%s)
	hung=
	while kill -0 "$qpid" 2>/dev/null; do
		rc_guest_up "$rundir" && break
		if [ $(($(date +%s) - t_boot)) -ge "$VM_BOOT_TIMEOUT" ]; then
			hung=1
			break
		fi
		sleep 1
	done
	if [ -n "$hung" ]; then
		cp "$rundir/console.log" "$rundir/console-hung$tries.log" 2>/dev/null
		cleanup
		what="not one line"
		grep -q 'rc-initramfs: started' "$rundir/console.log" 2>/dev/null &&
			what="the initramfs start line but no line of its init"
		echo "# warning: boot $tries: the guest printed $what in ${VM_BOOT_TIMEOUT}s (VM_BOOT_TIMEOUT; normal boots take 4-40 s): killed (console: $rundir/console-hung$tries.log)"
		tail -n 20 "$rundir/console.log" 2>/dev/null | sed 's/\r$//; s/^/#   /'
		if [ "$tries" -lt 2 ]; then
			echo "# warning: booting $suite@$kernel once more"
			continue
		fi
		qrc=boot
		break
	fi
	wait "$qpid"
	qrc=$?
	qpid=
	# a kernel panic before our init came up: nothing of ours ran yet
	# (twice in a row once in CI: three boots for this one)
	if rc_early_panic "$rundir" && [ "$tries" -lt 3 ]; then
		cp "$rundir/console.log" "$rundir/console-panic$tries.log" 2>/dev/null
		echo "# warning: boot $tries: the kernel panicked before the guest's init came up (console: $rundir/console-panic$tries.log): $(rc_panic_line "$rundir")"
		echo "# warning: booting $suite@$kernel once more"
		continue
	fi
	break
done
t_end=$(now)
times >"$rundir/times1"

# --- verdict ---------------------------------------------------------
status=
case $qrc in
boot) why="the guest did not come up in two boots (nothing from its init within ${VM_BOOT_TIMEOUT}s each: VM_BOOT_TIMEOUT)" ;;
1) status=0 ;;			# guest wrote 0: suite ran to its end
124|137) why="timeout: the guest did not finish within ${VM_TIMEOUT}s (VM_TIMEOUT)" ;;
0) if [ -n "$(rc_panic_line "$rundir")" ]; then
	why="kernel panic: $(rc_panic_line "$rundir")"
   else
	why="the guest rebooted or powered off before the suite ended"
   fi ;;
*) if [ $((qrc & 1)) = 1 ] && [ "$qrc" -lt 256 ]; then
	st=$((qrc >> 1))
	case $st in
	2) why="rxe setup failed in the guest: $(cat "$rundir/reason" 2>/dev/null)" ;;
	3) why="initramfs failed: $(grep 'rc-initramfs: FAILED' "$rundir/console.log" | tail -n 1 | tr -d '\r')" ;;
	4) why="guest init could not read its environment file" ;;
	*) why="guest reported status $st" ;;
	esac
   else
	why="QEMU exited with status $qrc: $(tail -n 3 "$rundir/qemu.out" | tr '\n' ' ')"
   fi ;;
esac

# Renumber the guest's points (a suite may have counted in a subshell).
awk '
	/^ok/ || /^not ok/ {
		n++
		pfx = /^not ok/ ? "not ok" : "ok"
		rest = $0
		sub(/^(not )?ok *[0-9]* */, "", rest)
		printf "%s %d %s\n", pfx, n, rest
		next
	}
	{ print }
	END { print n + 0 > "/dev/stderr" }' "$rundir/tap" 2>"$rundir/tap.count"
n=$(cat "$rundir/tap.count")

# The suite's own output (console after the start marker), for the log.
echo "# ---- guest console from the suite start ($rundir/console.log) ----"
sed -n '/rc-guest: ===== suite/,$p' "$rundir/console.log" 2>/dev/null |
	sed 's/\r$//; s/^/# /'

fail=0
if [ -n "$status" ]; then
	# dmesg of the whole boot: a splat during boot or rxe setup counts too.
	n=$((n + 1))
	if ! rc_dmesg_bad "$rundir/dmesg.txt" "$rundir/dmesg.bad"; then
		echo "not ok $n - $suite@$kernel: dmesg clean"
		comment_file "$rundir/dmesg.bad"
		fail=1
	else
		echo "ok $n - $suite@$kernel: dmesg clean"
	fi
	sst=$(cat "$rundir/suite-status" 2>/dev/null)
	[ "$sst" = 0 ] || echo "# suite script exited with status $sst"
else
	n=$((n + 1))
	echo "not ok $n - $suite@$kernel: $why"
	echo "# ---- last 60 lines of the serial console ($rundir/console.log) ----"
	tail -n 60 "$rundir/console.log" 2>/dev/null | sed 's/\r$//; s/^/# /'
	echo "$suite@$kernel: $why (see $rundir/console.log)" >&2
	fail=1
fi
boot=$(cat "$rundir/boot-seconds" 2>/dev/null)
stime=$(cat "$rundir/suite-seconds" 2>/dev/null)
echo "# timing: kernel prep $(secs "$t_start" "$t_kernel")s, module $(secs "$t_kernel" "$t_kmod")s, guest $(secs "$t_kmod" "$t_end")s (boot ${boot:-?}s, suite ${stime:-?}s, QEMU's CPU $(secs "$(cpu_of "$rundir/times0")" "$(cpu_of "$rundir/times1")")s)"
echo "1..$n"
grep -q '^not ok' "$rundir/tap" && fail=1
exit $fail
