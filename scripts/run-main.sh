#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# run-main.sh: the project's main job in one command, on a fresh Debian 12
# machine: install the dependencies, build everything, and run the
# benchmark on a real RDMA device if there is one, else inside a QEMU guest
# on soft-RoCE (rxe).
#
# The benchmark is not wired into this script yet: until it is, both
# branches run the VM smoke suite (rxe, ODP capabilities, loopback
# ib_write_bw, regcache.ko load/unload) and say so.  To wire it in, change
# run_real_device() and MAIN_SUITE below.
#
# Environment: BUILD (build directory, default ./build-main),
# RC_NO_INSTALL=1 (skip apt-get), VM_KERNELS (default "6.1 7.3").
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build-main}
kernels=${VM_KERNELS:-6.1 7.3}
MAIN_SUITE=smoke
jobs=$(nproc 2>/dev/null || echo 2)

say() { echo "run-main: $*"; }

if [ "${RC_NO_INSTALL:-0}" != 1 ]; then
	if [ "$(id -u)" = 0 ]; then
		say "installing dependencies (scripts/install-deps.sh)"
		"$top/scripts/install-deps.sh"
	else
		say "not root: skipping apt-get (set RC_NO_INSTALL=1 to silence)"
	fi
fi

if [ ! -x "$top/configure" ]; then
	say "autoreconf -fi"
	(cd "$top" && autoreconf -fi)
fi
mkdir -p "$build"
if [ ! -f "$build/config.status" ]; then
	say "configuring in $build"
	(cd "$build" && "$top/configure")
fi
say "building (make -j$jobs)"
make -C "$build" -j"$jobs"

# A device that is not a software one (rxe, siw) counts as real hardware.
real_dev=
if command -v ibv_devices >/dev/null 2>&1; then
	real_dev=$(ibv_devices 2>/dev/null | awk 'NR > 2 && $1 !~ /^(rxe|siw)/ { print $1; exit }')
fi

run_real_device()
{
	say "RDMA device $real_dev found"
	ibv_devinfo -d "$real_dev" || true
	say "the benchmark is not wired into run-main.sh yet: running the VM smoke suite instead"
	run_vm
}

run_vm()
{
	say "no benchmark yet: running the VM suite '$MAIN_SUITE' on rxe, kernels: $kernels"
	rc=0
	rm -f "$build/tests/test-suite.log"
	make -C "$build/tests" check-vm VM_KERNELS="$kernels" VM_SUITES="$MAIN_SUITE" || rc=$?
	sh "$top/tests/summary.sh" "$build/tests"
	return $rc
}

if [ -n "$real_dev" ]; then
	run_real_device
else
	say "no RDMA device on this machine: using a QEMU guest with soft-RoCE"
	run_vm
fi
