# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# dmabuf: the RDMAXFER_MEM_DMABUF kind on rxe0 (loopback RoCE to
# $RXE_ADDR) with a real dma-buf: udmabuf (memfd -> dma-buf) where the
# kernel has it (7.3), and vgem (DRM dumb buffer + PRIME export: 6.1,
# and 7.3 a second time).  rxe refuses dma-buf MRs on both kernels, so
# this proves the probe, policy on failing clearly, and the fallbacks
# (memfd mapping, staged copy) with every byte checked; then
# rdmaxfer-info reports the same.  Every run is bounded by timeout.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

export RXE_ADDR RXE_GID_INDEX

rc_dmabuf_exporters

rc_run "rdmaxfer dmabuf" timeout 300 env REGCACHE_MONITOR=uffd \
	"$RC_BUILDDIR/tests/test_rdmaxfer_dmabuf"
# vgem too where udmabuf took the first run (its mapping is VM_PFNMAP and
# it has no backing file: the staged path)
if [ -c /dev/udmabuf ] && [ -e /dev/dri/card0 ]; then
	rc_run "rdmaxfer dmabuf (vgem)" timeout 300 env REGCACHE_MONITOR=uffd \
		RDMAXFER_TEST_EXPORTER=vgem \
		"$RC_BUILDDIR/tests/test_rdmaxfer_dmabuf"
fi

# rdmaxfer-info names the device's answer and the fallback
out=$(timeout 60 "$RC_BUILDDIR/utils/rdmaxfer-info" -d "$RXE_DEV" 2>&1)
echo "$out"
rc_check "rdmaxfer-info: dma-buf MRs refused on $RXE_DEV, fallback named" \
	sh -c "echo \"\$1\" | grep -q 'dma-buf path: .*refused.*fallback'" sh "$out"
