#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# install-deps.sh [--list]: install (as root, with apt-get) every Debian 12
# package needed to build regcache/rdmaxfer and run its tests, host and
# VM.  --list prints the packages instead.  Used by .ci/run and
# scripts/run-main.sh; the one place the list lives.
set -eu

packages="
autoconf automake libtool pkg-config make gcc g++
libibverbs-dev librdmacm-dev liburing-dev libcunit1-dev libssl-dev
linux-headers-amd64 mandoc shellcheck
qemu-system-x86 busybox-static cpio kmod xz-utils zstd
rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest
iproute2 debootstrap debian-archive-keyring util-linux
ucx-utils gnuplot-nox
dkms linux-source-6.1 flex bison bc libelf-dev
libcurl4-openssl-dev libjson-c-dev etcd-server etcd-client openssl
valgrind
"
# build: autotools, gcc, rdma-core/liburing/CUnit headers, the 6.1 kernel
#   headers for regcache.ko, mandoc for the man page lint, shellcheck for
#   that of the shell scripts (tests/check-scripts.sh); g++ only for
#   the test that the uapi header compiles as C++ (tests/test_kmod_uapi.sh);
#   libssl-dev for libcrypto, the HMAC of librdmaxfer's connection
#   authentication (rdmaxfer(7) SECURITY).
# VM harness: QEMU, static busybox + cpio + kmod + xz/zstd for the guest's
#   initramfs, the rdma-core tools and perftest the guest runs from the host
#   root, iproute2 (ip, rdma), debootstrap for the Debian 13 build root of
#   the 7.3 module, the archive keyring for trixie.
# benchmark: ucx_perftest (the UCX column of scripts/bench-compare.sh) and
#   gnuplot for rdmaxfer-bench --plot (6 packages without recommends).
# install checks: dkms (tests/dkms-check.sh proves dkms.conf), and
#   linux-source-6.1 for the kernel's scripts/checkpatch.pl, which Debian
#   packages nowhere else (tests/checkpatch.sh extracts it; 139 MB).
# directory: libcurl and json-c for librdmaxfer's etcd directory
#   (configure --with-etcd, auto); etcd-server, which its tests start on
#   loopback and in the guests, etcd-client (etcdctl) for the test of
#   etcd's user/password authentication, openssl for the TLS test's
#   certificates.
# budgets: valgrind, whose callgrind checks the locked-instruction count
#   of tests/budget_count.c (tests/test_budget.sh; skipped without it).
# debug kernel: linux-source-6.1 again, built with KASAN, lockdep and
#   kmemleak by tests/vm/debug-kernel.sh; flex, bison, bc and libelf-dev
#   are what its build needs beyond gcc and make.

if [ "${1:-}" = --list ]; then
	# shellcheck disable=SC2086 # one line, the words apart
	echo $packages
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "install-deps.sh: run as root (apt-get install)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $packages
