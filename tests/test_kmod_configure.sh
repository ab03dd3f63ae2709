#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# test_kmod_configure.sh: configure refuses a kernel without
# CONFIG_MMU_NOTIFIER with a sentence that says so (host test, TAP).
#
# The kernel is Debian's 6.1 headers with the option taken out: a copy
# of the per-flavour folder (3 MB: .config, include/generated,
# include/config; its Makefile includes the shared -common tree, its
# scripts and tools links are made absolute) whose configuration lacks
# CONFIG_MMU_NOTIFIER.  configure runs in a scratch build folder against
# it and must fail with the message, and the probe's build log (in
# config.log) must show that the compiler reached the probe's #error:
# the toolchain and the copy worked, only the option was missing.  One configure run, up
# to the kernel probes (10-15 s on a quiet machine).  Skips without the
# headers.
set -u

srcdir=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck disable=SC2012 # Debian header folder names: no odd characters
hdr=$(ls -d /usr/src/linux-headers-6.1*-amd64 2>/dev/null | sort -V | tail -n 1)
echo "1..1"
if [ -z "$hdr" ] || [ ! -f "$hdr/Makefile" ]; then
	echo "ok 1 - refused # SKIP no linux-headers-6.1 (apt-get install linux-headers-amd64)"
	exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kmod-configure.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

cp -a "$hdr" "$tmp/linux" || exit 99
for l in "$tmp"/linux/*; do
	[ -L "$l" ] || continue
	t=$(readlink -f "$hdr/${l##*/}") && rm -f "$l" && ln -s "$t" "$l" || exit 99
done
sed -i '/CONFIG_MMU_NOTIFIER\b/d' "$tmp/linux/.config" \
	"$tmp/linux/include/generated/autoconf.h" "$tmp/linux/include/config/auto.conf"

mkdir "$tmp/build"
if (cd "$tmp/build" && "$srcdir/configure" --with-linux="$tmp/linux" \
	--enable-kmod=yes >"$tmp/log" 2>&1); then
	echo "not ok 1 - refused # configure succeeded"
	tail -n 20 "$tmp/log" | sed 's/^/# /'
	exit 1
fi
probe=$tmp/build/config.log
if grep -q 'error: the kernel at .* is built without CONFIG_MMU_NOTIFIER' "$tmp/log" &&
	grep -q 'error: #error "CONFIG_MMU_NOTIFIER is not set"' "$probe"; then
	echo "ok 1 - refused"
	grep 'without CONFIG_MMU_NOTIFIER' "$tmp/log" | sed 's/^/# /'
else
	echo "not ok 1 - refused # not for that reason"
	tail -n 20 "$tmp/log" | sed 's/^/# /'
	[ -f "$probe" ] && grep '^| ' "$probe" | tail -n 20 | sed 's/^/# /'
	exit 1
fi
