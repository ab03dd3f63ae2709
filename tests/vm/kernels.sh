# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# kernels.sh: the kernel matrix of the VM harness, sourced by the host-side
# scripts.  rc_kernel_info NAME sets, for one short kernel name (6.1, 7.3):
#   KVER       the release string (uname -r in the guest)
#   KPKGS      packages holding the kernel image and its modules
#   KHDRS      packages holding its kbuild headers (empty: use the host's)
#   KAPT       "host" (the host's own apt sources) or "trixie" (a separate
#              apt configuration that never touches the host's packages)
#   KCMDLINE   extra kernel command line
# and, for a kernel built here from source (KAPT=source), KSRC (the
# source tarball; tests/vm/debug-kernel.sh builds it).
# New kernels are added here and nowhere else.

# The variables are set for the scripts that source this file:
# shellcheck disable=SC2034

rc_kernel_info()
{
	# no_timer_check: the kernel's boot test of the timer interrupt
	# (check_timer()) counts ticks against a delay loop; under TCG on a
	# loaded host it fails ("MP-BIOS bug: 8254 timer not connected to
	# IO-APIC"), the timer is rerouted as ExtINT through the 8259A, and
	# the serial port's interrupt then never came again in such a guest:
	# its console went silent after that line while its suite ran on.
	# Seen on this 2-core host with a CI run beside it.  Virtual machines
	# skip the test (it exists for broken BIOS tables, not for QEMU's).
	KCMDLINE="tsc=reliable no_timer_check"
	case $1 in
	6.1)
		# The Debian 12 kernel whose headers are installed on the host:
		# the image must match them exactly or the module will not load.
		KVER=
		# Debian's folder names: no white space; sort -V: the newest last
		# shellcheck disable=SC2012
		for d in $(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V); do
			KVER=${d#/usr/src/linux-headers-}
		done
		if [ -z "$KVER" ]; then
			echo "no Debian 6.1 kernel headers in /usr/src (apt-get install linux-headers-amd64)" >&2
			return 1
		fi
		kv=$(dpkg-query -W -f='${Version}' "linux-headers-$KVER" 2>/dev/null)
		KPKGS="linux-image-$KVER${kv:+=$kv}"
		KHDRS=
		KAPT=host
		;;
	7.3)
		# trixie-backports: the image package is a stub; the kernel, the
		# modules (.ko.xz) and modules.builtin/config come in separate
		# packages.
		KVER=7.3.4+deb13-amd64
		KPKGS="linux-binary-$KVER linux-modules-$KVER linux-base-$KVER"
		KHDRS="linux-headers-$KVER linux-headers-7.3.4+deb13-common linux-kbuild-7.3.4+deb13"
		KAPT=trixie
		;;
	debug)
		# Debian 12's kernel source built here with KASAN, lockdep,
		# DEBUG_ATOMIC_SLEEP and kmemleak (tests/vm/debug-kernel.sh), which
		# Debian's own kernels lack: their "dmesg clean" cannot see a
		# use-after-free, a lock inversion or a leak.
		kv=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null)
		KSRC=/usr/src/linux-source-6.1.tar.xz
		if [ -z "$kv" ] || [ ! -f "$KSRC" ]; then
			echo "no $KSRC: the debug kernel is built from it (apt-get install linux-source-6.1)" >&2
			return 1
		fi
		KVER=${kv%-*}-rcdebug
		# Everything runs 2-6x slower: a shorter stress (the kmod suite's
		# knob); the fuzzer keeps its iterations, KASAN is what it is for.
		KCMDLINE="$KCMDLINE kmod.stress=10"
		KPKGS=
		KHDRS=
		KAPT=source
		;;
	*)
		echo "unknown VM kernel '$1' (known: 6.1 7.3 debug; see tests/vm/kernels.sh)" >&2
		return 1
		;;
	esac
}
