# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# file: files as transfer endpoints (librdmaxfer/file/) in the guest, on
# each kernel: test_rdmaxfer_file (file <-> local memory through io_uring
# and pread/pwrite, bad input, O_DIRECT) with its files on tmpfs and on
# ext4 on a loop device, then with kernel.io_uring_disabled=2 where the
# kernel has that sysctl (6.6+): the fallback and REQUIRE_URING's error.
# test_rdmaxfer_file_remote: file <-> remote peer on rxe, same two places;
# its file requests (wait/test/progress, caller mode, cancel, timeout,
# O_DIRECT and its buffered fallback, injected failures) on ext4.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

prog=$RC_BUILDDIR/tests/test_rdmaxfer_file
rprog=$RC_BUILDDIR/tests/test_rdmaxfer_file_remote

mkdir -p /tmp/file-tmpfs
rc_run "file (tmpfs)" timeout 200 env RDMAXFER_FILE_DIR=/tmp/file-tmpfs "$prog"
# the file requests' cases (they do not depend on the filesystem) run on
# ext4 only, within the CI budget
rc_run "file remote (tmpfs)" timeout 200 env RDMAXFER_FILE_DIR=/tmp/file-tmpfs \
	RXE_ADDR="$RXE_ADDR" "$rprog" rdmaxfer_file_remote/io_uring_both_ways \
	rdmaxfer_file_remote/pread_both_ways \
	rdmaxfer_file_remote/o_direct_both_ways \
	rdmaxfer_file_remote/bad_input_and_rdma_error

# ext4 on a loop device: the image lives on tmpfs, mkfs.ext4 and losetup
# are the host's (the guest runs the host root over 9p).
ext4_setup()
{
	modprobe loop 2>/dev/null
	modprobe ext4 2>/dev/null
	truncate -s 64M /tmp/file-ext4.img || return 1
	mkfs.ext4 -q -F /tmp/file-ext4.img || return 1
	loopdev=$(losetup -f --show /tmp/file-ext4.img) || return 1
	mnt=/tmp/file-ext4
	mkdir -p $mnt || return 1
	mount -t ext4 "$loopdev" $mnt || { losetup -d "$loopdev"; return 1; }
}
loopdev='' mnt=''
if ext4_setup >/tmp/file-ext4.log 2>&1; then
	rc_run "file (ext4 on loop)" timeout 200 env RDMAXFER_FILE_DIR=$mnt "$prog"
	rc_run "file remote (ext4 on loop)" timeout 200 env \
		RDMAXFER_FILE_DIR=$mnt RXE_ADDR="$RXE_ADDR" "$rprog"
	umount $mnt
	losetup -d "$loopdev"
else
	rc_skip "file (ext4 on loop)" "no ext4 on a loop device in this guest: $(tail -n 1 /tmp/file-ext4.log)"
fi
cat /tmp/file-ext4.log
rm -f /tmp/file-ext4.img

if [ -w /proc/sys/kernel/io_uring_disabled ]; then
	old=$(cat /proc/sys/kernel/io_uring_disabled)
	echo 2 >/proc/sys/kernel/io_uring_disabled
	rc_run "file (io_uring disabled)" timeout 200 env \
		RDMAXFER_FILE_DIR=/tmp/file-tmpfs RDMAXFER_FILE_EXPECT_NO_URING=1 \
		"$prog"
	echo "$old" >/proc/sys/kernel/io_uring_disabled
else
	rc_skip "file (io_uring disabled)" "kernel $RC_KERNEL has no kernel.io_uring_disabled sysctl (6.6+)"
fi
rmdir /tmp/file-tmpfs
