#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# run-2host.sh vm-2host/PAIR@KERNEL.v2t: boot TWO QEMU (TCG) guests of KERNEL
# joined by a point-to-point UDP socket link on the host's loopback
# (-netdev socket,udp=127.0.0.1:PORT_B,localaddr=127.0.0.1:PORT_A and the
# mirror image), each with its own static IPv4 on its virtio NIC and rxe0
# on it.  Guest A runs tests/vm/suites/PAIR-server.sh, guest B
# tests/vm/suites/PAIR-client.sh, both through the ordinary guest init
# (tests/vm/guest-init.sh), which reads the addresses from its environment
# file.  Prints one TAP stream for the automake tap-driver: the client's
# points, the server's points, "dmesg clean" of each guest, the plan.
#
# Every wait is bounded: each QEMU runs under timeout VM_TIMEOUT, and once
# one guest has ended the other gets VM_2HOST_GRACE seconds more.  Both
# QEMUs are killed on every exit path.
#
# Soft-RoCE over the link drops packets when QEMU's UDP socket receive
# buffer overflows and then stalls in retransmission timeouts, so the
# sockets need a bigger buffer than Linux's default 208 KiB.  A socket gets
# net.core.rmem_default when it is created, which QEMU does at start-up:
# this script raises the sysctl to VM_2HOST_RMEM (4 MiB) only around the
# start of the two QEMUs (serialised by a lock between parallel runs) and
# puts the old value back as soon as both sockets exist.  Without the
# permission to write it, it warns and goes on (expect long stalls).
#
# Environment: as run-vm.sh (RC_SRCDIR, RC_BUILDDIR, QEMU, VM_CACHE,
# VM_TIMEOUT, VM_MEM, VM_SMP, VM_APPEND) plus VM_2HOST_GRACE (120),
# VM_2HOST_RMEM (4194304).
set -u

vmt=$1
t=$(basename "$vmt" .v2t)
pair=${t%@*}
kernel=${t#*@}
here=$(cd "$(dirname "$0")" && pwd)
: "${RC_SRCDIR:=$(cd "$here/../.." && pwd)}"
: "${RC_BUILDDIR:?RC_BUILDDIR must be set (run through make check-2host)}"
: "${QEMU:=qemu-system-x86_64}"
: "${VM_CACHE:=$RC_BUILDDIR/tests/vm/cache}"
: "${VM_TIMEOUT:=600}"
: "${VM_MEM:=1G}"
: "${VM_SMP:=2}"
: "${VM_APPEND:=}"
: "${VM_2HOST_GRACE:=120}"
: "${VM_BOOT_TIMEOUT:=150}"
: "${VM_2HOST_RMEM:=4194304}"
. "$here/kernels.sh"
. "$here/host-lib.sh"

name=$pair@$kernel
rundir=$RC_BUILDDIR/tests/vm/run/$name
results=$RC_BUILDDIR/tests/vm/results/$name
now() { date +%s.%N | cut -c1-14; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
t_start=$(now)

bail()
{
	echo "not ok 1 - $name: $*"
	echo "1..1"
	echo "$name: $*" >&2
	exit 1
}

comment_file()
{
	sed 's/\r$//; s/^/# /' "$1"
}

for r in server client; do
	[ -f "$RC_SRCDIR/tests/vm/suites/$pair-$r.sh" ] ||
		bail "no suite tests/vm/suites/$pair-$r.sh"
done
command -v "$QEMU" >/dev/null 2>&1 ||
	bail "QEMU ($QEMU) not found: apt-get install qemu-system-x86"
mkdir -p "$RC_BUILDDIR/tests/vm" || bail "cannot create $RC_BUILDDIR/tests/vm"
kinfo=$RC_BUILDDIR/tests/vm/.kinfo.$$
rc_kernel_info "$kernel" 2>"$kinfo" || bail "$(cat "$kinfo"; rm -f "$kinfo")"
rm -f "$kinfo"

rm -rf "$rundir" "$results"
mkdir -p "$rundir/a" "$rundir/b" "$results" || bail "cannot create $rundir"
{ mkdir -p "$VM_CACHE" && VM_CACHE=$(cd "$VM_CACHE" && pwd); } ||
	bail "cannot create the kernel cache $VM_CACHE"

# --- kernel (no module: the pair suites do not load regcache.ko) -------
if ! sh "$here/vm-kernel.sh" "$kernel" "$VM_CACHE" >"$rundir/prepare.log" 2>&1; then
	comment_file "$rundir/prepare.log"
	bail "cannot prepare kernel $kernel: $(tail -n 1 "$rundir/prepare.log")"
fi
kdir=$VM_CACHE/$KVER
t_kernel=$(now)

# --- the link: two free UDP ports on the loopback -------------------------
# Loopback only: the link never leaves this machine.
udp_busy()
{
	ss -Hlun "sport = :$1" 2>/dev/null | grep -q .
}
port_a=
i=0
while [ $i -lt 50 ]; do
	p=$((20000 + ($$ * 7 + i * 131) % 20000 * 2))
	if ! udp_busy "$p" && ! udp_busy $((p + 1)); then
		port_a=$p
		break
	fi
	i=$((i + 1))
done
[ -n "$port_a" ] || bail "no free UDP port pair on 127.0.0.1"
port_b=$((port_a + 1))

addr_a=10.0.3.1
addr_b=10.0.3.2
cm_port=18515

# guest.env ROLE LETTER ADDR PEER_ADDR
write_env()
{
	cat >"$rundir/$2/guest.env" <<EOS
RC_SUITE=$(rc_q "$pair-$1")
RC_SRCDIR=$(rc_q "$RC_SRCDIR")
RC_BUILDDIR=$(rc_q "$RC_BUILDDIR")
RC_KMOD=''
RC_KERNEL=$(rc_q "$kernel")
RC_KVER=$(rc_q "$KVER")
RC_RESULTS=$(rc_q "$results")
RC_RUNDIR=$(rc_q "$rundir/$2")
RC_TAP=$(rc_q "$rundir/$2/tap")
RC_TAP_COUNT='/tmp/rc-tap-count'
RXE_DEV='rxe0'
RC_CI='$([ "${CI:-}" = true ] && echo 1 || echo 0)'
RXE_ADDR='$3'
RC_PEER_ADDR='$4'
RC_2HOST_PORT='$cm_port'
EOS
	: >"$rundir/$2/tap"
}
write_env server a "$addr_a" "$addr_b"
write_env client b "$addr_b" "$addr_a"
# Where the trees are, for each guest's initramfs (see host-lib.sh).
for l in a b; do
	rc_guest_files "$rundir/$l" "$kdir" 2>"$rundir/mounts.err" ||
		bail "cannot write guest $l's mount list: $(cat "$rundir/mounts.err")"
done
rc_guest_run "$rundir/a" >/dev/null 2>"$rundir/mounts.err" ||
	bail "$(cat "$rundir/mounts.err")"
rc_guest_initrd "$kdir" "$rundir/initrd.img" ||
	bail "cannot append initramfs-init.sh to $kdir/initrd.img"

tsc_khz=$("$RC_BUILDDIR/tests/vm/tsc-khz" 2>/dev/null) || tsc_khz=
[ -n "$tsc_khz" ] || echo "# warning: tests/vm/tsc-khz gave no TSC frequency: the guests calibrate their own"

# --- cleanup on every path ---------------------------------------------
pid_a='' pid_b='' rmem_old='' lockfd_open=''
rmem=/proc/sys/net/core/rmem_default
rmem_restore()
{
	if [ -n "$rmem_old" ]; then
		echo "$rmem_old" >"$rmem" 2>/dev/null
		echo "# host net.core.rmem_default restored to $rmem_old"
		rmem_old=
	fi
	if [ -n "$lockfd_open" ]; then
		exec 9>&-
		lockfd_open=
	fi
}
kill_qemu()
{
	for p in "$@"; do
		[ -n "$p" ] && kill "$p" 2>/dev/null
	done
	sleep 0.5
	for p in "$@"; do
		[ -n "$p" ] && { kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; }
	done
}
# shellcheck disable=SC2317 # called by the traps below
cleanup()
{
	rmem_restore
	kill_qemu "$pid_a" "$pid_b"
	pid_a='' pid_b=''
}
trap cleanup EXIT
trap 'cleanup; echo "# interrupted"; exit 1' INT TERM HUP

# boot LETTER LOCAL_PORT REMOTE_PORT MAC: one guest in the background.
boot()
{
	rc_qemu_start "$rundir/$1" "$kdir/vmlinux" "$rundir/initrd.img" \
		"socket,id=n0,udp=127.0.0.1:$3,localaddr=127.0.0.1:$2" \
		"virtio-net-pci,netdev=n0,mac=$4"
}

# The boot watchdog, as in run-vm.sh: a guest whose init has printed
# nothing within VM_BOOT_TIMEOUT (a TCG boot that never reached the
# initramfs; seen once in CI), or whose kernel panicked before its init
# came up (rc_early_panic), has both guests killed and the pair booted
# once more, with a warning; a second such boot fails the pair.
tries=0
while :; do
	tries=$((tries + 1))
	# --- raise rmem_default around the creation of the two sockets ---------
	exec 9>"$RC_BUILDDIR/tests/vm/.2host-rmem-lock" && lockfd_open=1
	[ -n "$lockfd_open" ] && flock -w 60 9
	cur=$(cat "$rmem" 2>/dev/null)
	if [ -n "$cur" ] && [ "$cur" -lt "$VM_2HOST_RMEM" ]; then
		if echo "$VM_2HOST_RMEM" >"$rmem" 2>/dev/null; then
			rmem_old=$cur
			echo "# host net.core.rmem_default $cur -> $VM_2HOST_RMEM while the QEMUs open their sockets"
		else
			echo "# warning: cannot raise net.core.rmem_default ($cur): rxe over the link will stall on drops"
		fi
	fi

	boot a "$port_a" "$port_b" 52:54:00:2a:00:01
	pid_a=$!
	boot b "$port_b" "$port_a" 52:54:00:2a:00:02
	pid_b=$!
	# Both sockets exist once both QEMUs bound their ports (bounded wait).
	i=0
	while [ $i -lt 100 ]; do
		udp_busy "$port_a" && udp_busy "$port_b" && break
		{ kill -0 "$pid_a" 2>/dev/null && kill -0 "$pid_b" 2>/dev/null; } || break
		sleep 0.1
		i=$((i + 1))
	done
	ss -Haunm "( sport = :$port_a or sport = :$port_b )" 2>/dev/null |
		sed -n 's/.*\(rb[0-9]*\).*/# QEMU link socket receive buffer: \1/p'
	rmem_restore

	# --- wait for both, bounded ------------------------------------------------
	t_boot=$(now)
	t_boot_s=$(date +%s)
	st_a='' st_b='' t_first='' up='' hung=''
	while [ -z "$st_a" ] || [ -z "$st_b" ]; do
		if [ -z "$st_a" ] && ! kill -0 "$pid_a" 2>/dev/null; then
			wait "$pid_a"; st_a=$?; pid_a=
		fi
		if [ -z "$st_b" ] && ! kill -0 "$pid_b" 2>/dev/null; then
			wait "$pid_b"; st_b=$?; pid_b=
		fi
		if [ -z "$up" ]; then
			if rc_guest_up "$rundir/a" && rc_guest_up "$rundir/b"; then
				up=1
			elif { [ -n "$st_a" ] && rc_early_panic "$rundir/a"; } ||
			     { [ -n "$st_b" ] && rc_early_panic "$rundir/b"; }; then
				# a kernel panic before the init (host-lib.sh)
				hung=1
				kill_qemu "$pid_a" "$pid_b"
				pid_a='' pid_b='' st_a='' st_b=''
				break
			elif [ $(($(date +%s) - t_boot_s)) -ge "$VM_BOOT_TIMEOUT" ] &&
			     { { [ -z "$st_a" ] && ! rc_guest_up "$rundir/a"; } ||
			       { [ -z "$st_b" ] && ! rc_guest_up "$rundir/b"; }; }; then
				hung=1
				kill_qemu "$pid_a" "$pid_b"
				pid_a='' pid_b='' st_a='' st_b=''
				break
			fi
		fi
		if [ -z "$t_first" ] && { [ -n "$st_a" ] || [ -n "$st_b" ]; }; then
			t_first=$(date +%s)
		fi
		if [ -n "$t_first" ] && [ $(($(date +%s) - t_first)) -gt "$VM_2HOST_GRACE" ]; then
			echo "# one guest ended, the other did not within ${VM_2HOST_GRACE}s: killed"
			kill_qemu "$pid_a" "$pid_b"
			[ -n "$st_a" ] || st_a=124
			[ -n "$st_b" ] || st_b=124
			pid_a='' pid_b=''
			break
		fi
		sleep 1
	done
	[ -n "$hung" ] || break
	for l in a b; do
		rc_guest_up "$rundir/$l" && continue
		cp "$rundir/$l/console.log" "$rundir/$l/console-hung$tries.log" 2>/dev/null
		if rc_early_panic "$rundir/$l"; then
			echo "# warning: boot $tries: guest $l's kernel panicked before its init came up: both killed (console: $rundir/$l/console-hung$tries.log)"
		else
			echo "# warning: boot $tries: guest $l printed nothing from its init in ${VM_BOOT_TIMEOUT}s (VM_BOOT_TIMEOUT): both killed (console: $rundir/$l/console-hung$tries.log)"
		fi
	done
	if [ "$tries" -ge 2 ]; then
		for l in a b; do
			if rc_guest_up "$rundir/$l"; then
				eval "st_$l=peer"
			else
				eval "st_$l=boot"
			fi
		done
		break
	fi
	echo "# warning: booting the pair $name once more"
	rm -rf "$results" && mkdir -p "$results"
	for l in a b; do
		: >"$rundir/$l/tap"
		rm -f "$rundir/$l/boot-seconds"
	done
done
t_end=$(now)

# --- verdict ------------------------------------------------------------
# why LETTER QEMU_STATUS: empty when the guest ran its suite to the end.
why()
{
	d=$rundir/$1
	case $2 in
	1) ;;
	peer) echo "killed: the other guest did not come up in two boots" ;;
	boot) if rc_early_panic "$d"; then
		echo "the guest did not come up in two boots: its kernel panicked before its init ($(rc_panic_line "$d"))"
	      else
		echo "the guest did not come up in two boots (nothing from its init within ${VM_BOOT_TIMEOUT}s each: VM_BOOT_TIMEOUT)"
	      fi ;;
	124|137) echo "timeout: the guest did not finish (VM_TIMEOUT ${VM_TIMEOUT}s, grace ${VM_2HOST_GRACE}s)" ;;
	0) if [ -n "$(rc_panic_line "$d")" ]; then
		echo "kernel panic: $(rc_panic_line "$d")"
	   else
		echo "the guest rebooted or powered off before the suite ended"
	   fi ;;
	*) if [ $(($2 & 1)) = 1 ] && [ "$2" -lt 256 ]; then
		case $(($2 >> 1)) in
		2) echo "rxe setup failed in the guest: $(cat "$d/reason" 2>/dev/null)" ;;
		3) echo "initramfs failed: $(grep 'rc-initramfs: FAILED' "$d/console.log" | tail -n 1 | tr -d '\r')" ;;
		4) echo "guest init could not read its environment file" ;;
		*) echo "guest reported status $(($2 >> 1))" ;;
		esac
	   else
		echo "QEMU exited with status $2: $(tail -n 3 "$d/qemu.out" | tr '\n' ' ')"
	   fi ;;
	esac
}

n=0
fail=0
# relay LETTER ROLE: the guest's points, renumbered, then its dmesg point.
relay()
{
	d=$rundir/$1
	st=$3
	awk -v n="$n" -v role="$2" '
		/^ok/ || /^not ok/ {
			n++
			pfx = /^not ok/ ? "not ok" : "ok"
			rest = $0
			sub(/^(not )?ok *[0-9]* *(- *)?/, "", rest)
			printf "%s %d - %s: %s\n", pfx, n, role, rest
			next
		}
		{ print }
		END { print n + 0 > "/dev/stderr" }' "$d/tap" 2>"$d/tap.count"
	n=$(cat "$d/tap.count")
	grep -q '^not ok' "$d/tap" && fail=1
	n=$((n + 1))
	w=$(why "$1" "$st")
	if [ -n "$w" ]; then
		echo "not ok $n - $2: $w"
		echo "# ---- last 60 lines of the serial console ($d/console.log) ----"
		tail -n 60 "$d/console.log" 2>/dev/null | sed 's/\r$//; s/^/# /'
		echo "$name $2: $w (see $d/console.log)" >&2
		fail=1
		return
	fi
	if ! rc_dmesg_bad "$d/dmesg.txt" "$d/dmesg.bad"; then
		echo "not ok $n - $2: dmesg clean"
		comment_file "$d/dmesg.bad"
		fail=1
	else
		echo "ok $n - $2: dmesg clean"
	fi
	sst=$(cat "$d/suite-status" 2>/dev/null)
	[ "$sst" = 0 ] || echo "# $2 suite script exited with status $sst"
}

for l in b a; do
	role=client
	[ $l = a ] && role=server
	echo "# ---- $role guest console from the suite start ($rundir/$l/console.log) ----"
	sed -n '/rc-guest: ===== suite/,$p' "$rundir/$l/console.log" 2>/dev/null |
		sed 's/\r$//; s/^/# /'
done
relay b "client@$kernel" "$st_b"
relay a "server@$kernel" "$st_a"
[ -f "$results/write_bw.txt" ] && sed 's/^/# /' "$results/write_bw.txt"
for l in a b; do
	boot_s=$(cat "$rundir/$l/boot-seconds" 2>/dev/null)
	suite_s=$(cat "$rundir/$l/suite-seconds" 2>/dev/null)
	echo "# timing guest $l: boot ${boot_s:-?}s, suite ${suite_s:-?}s"
done
echo "# timing: kernel prep $(secs "$t_start" "$t_kernel")s, both guests $(secs "$t_boot" "$t_end")s, total $(secs "$t_start" "$t_end")s"
echo "1..$n"
exit $fail
