#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# run-main.sh: the project's main job in one command, on a fresh Debian 12
# machine: install the dependencies, build everything, and run the
# benchmark on a real RDMA device if there is one, else inside a QEMU guest
# on soft-RoCE (rxe).
#
# The benchmark is scripts/bench-compare.sh: rdmaxfer-bench against
# perftest at the same sizes, interleaved, medians; raw registration vs a
# cache hit; and the NIXL scenario (register + transfer every iteration)
# with the cache off and on, which shows the problem and the cure in one
# table.  On a real device it runs on this host over the device's own
# address (loopback); otherwise scripts/bench-compare-host.sh boots a QEMU
# guest per kernel with soft-RoCE and runs it there.
#
# Environment: BUILD (build directory, default ./build-main),
# RC_NO_INSTALL=1 (skip apt-get), VM_KERNELS (default "6.1": Debian 12's
# kernel; "6.1 7.3" adds the newest Debian kernel), RC_BENCH_SCALE
# (quick|full, default full: about 10 minutes per kernel under QEMU).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build-main}
kernels=${VM_KERNELS:-6.1}
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
	say "RDMA device $real_dev found: benchmarking it on this host"
	ibv_devinfo -d "$real_dev" || true
	# The IPv4 address of the device's network interface: client and
	# server both run here, as perftest's loopback runs do.
	ndev=$(rdma link show 2>/dev/null |
		awk -v d="$real_dev" '$2 ~ "^" d "/" { for (i = 1; i < NF; i++) if ($i == "netdev") { print $(i + 1); exit } }')
	addr=
	[ -n "$ndev" ] && addr=$(ip -4 -o addr show dev "$ndev" 2>/dev/null |
		awk '{ sub("/.*", "", $4); print $4; exit }')
	if [ -z "$addr" ]; then
		say "$real_dev has no IPv4 address (netdev '${ndev:-none}'): cannot run the loopback benchmark"
		return 1
	fi
	sh "$top/scripts/bench-compare.sh" --bench "$build/utils/rdmaxfer-bench" \
		--device "$real_dev" --addr "$addr" --out "$build/bench-results" \
		--scale "${RC_BENCH_SCALE:-full}"
}

run_vm()
{
	say "benchmark in a QEMU guest on soft-RoCE, kernels: $kernels (speeds under emulation are only meaningful as ratios)"
	"$top/scripts/bench-compare-host.sh" "$build" $kernels
}

if [ -n "$real_dev" ]; then
	run_real_device
else
	say "no RDMA device on this machine: using a QEMU guest with soft-RoCE"
	run_vm
fi
