# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# devmem: NIC device memory (rdmaxfer_mem_alloc_device()) on rxe0, loopback
# RoCE to $RXE_ADDR.  rxe has no device memory (max_dm_size 0,
# ibv_alloc_dm EOPNOTSUPP), so this proves the capability probe says so,
# that the host fallback runs end to end (WRITE/READ by a peer, contended
# fetch-and-add from several agents with the exact final value,
# compare-and-swap), that policy on fails clearly, and that rdmaxfer-info
# and rdmaxfer-bench report the fallback.  The KSM/zero-based device
# paths need mlx5: host tests only (test_rdmaxfer_devmem_plan).
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

export RXE_ADDR RXE_GID_INDEX

rc_run "rdmaxfer devmem" timeout 120 env REGCACHE_MONITOR=uffd \
	"$RC_BUILDDIR/tests/test_rdmaxfer_devmem"

# RDMAXFER_DM=on: the allocation fails with the reason, not silently
out=$(RDMAXFER_DM=on timeout 60 "$RC_BUILDDIR/utils/rdmaxfer-info" \
	-d "$RXE_DEV" 2>&1)
echo "$out"
rc_check "rdmaxfer-info: no device memory on $RXE_DEV, host fallback named" \
	sh -c "echo \"\$1\" | grep -q 'device memory path: host'" sh "$out"

# the benchmark runs on the fallback and says so (numbers: doc/BENCHMARKS.md)
res="$RC_RESULTS/dm_atomic.txt"
rc_check "rdmaxfer-bench dm_atomic: fadd_lat, cswap_lat, host fallback said" \
	sh -c "timeout 120 '$RC_BUILDDIR/utils/rdmaxfer-bench' -n 100 \
	dm_atomic '$RXE_ADDR' > '$res' 2>&1 && \
	grep -q 'device memory: host fallback' '$res' && \
	grep -q '^fadd_lat' '$res' && grep -q '^cswap_lat' '$res'"
cat "$res"
