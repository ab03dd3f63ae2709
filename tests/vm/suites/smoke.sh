# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# smoke: proves the harness on each kernel.  soft-RoCE is up, its verbs
# capabilities are what this kernel's rxe is known to offer (explicit ODP
# on 7.3, none on 6.1), a loopback RDMA WRITE bandwidth run completes, and
# regcache.ko loads, creates /dev/regcache and unloads cleanly.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

# --- rxe0 -------------------------------------------------------------
state=$(cat "/sys/class/infiniband/$RXE_DEV/ports/1/state" 2>&1)
case $state in
*ACTIVE*) rc_ok "$RXE_DEV is ACTIVE" ;;
*) rc_fail "$RXE_DEV is ACTIVE" "port state: $state" ;;
esac
rc_check "rdma link shows $RXE_DEV on eth0" \
	sh -c "rdma link show $RXE_DEV/1 | tee /dev/stderr | grep -q 'state ACTIVE.*netdev eth0'"

# --- ODP capabilities per kernel --------------------------------------
info=$(ibv_devinfo -v -d "$RXE_DEV" 2>&1)
echo "$info"
# rdma-core prints "general_odp_caps:" followed by indented capability
# names; the RC transport line lists what RC QPs may do on demand.
# "NO SUPPORT" stands for an empty list.
odp_caps()
{
	echo "$info" | awk -v key="$1:" '$1 == key { on = 1; next }
		on && /^\t\t\t\t\t/ { if ($0 !~ /NO SUPPORT/) print $1; next }
		{ on = 0 }' | tr '\n' ' '
}
gen=$(odp_caps general_odp_caps)
rc_caps=$(odp_caps rc_odp_caps)
echo "general_odp_caps: [$gen] rc_odp_caps: [$rc_caps]"
case $RC_KERNEL in
7.3)
	if echo "$gen" | grep -q ODP_SUPPORT && echo "$rc_caps" | grep -q SUPPORT_WRITE &&
	   echo "$rc_caps" | grep -q SUPPORT_READ; then
		rc_ok "ibv_devinfo: explicit ODP (RC write/read) on $RC_KERNEL"
	else
		rc_fail "ibv_devinfo: explicit ODP (RC write/read) on $RC_KERNEL" "general [$gen] rc [$rc_caps]"
	fi ;;
6.1)
	if [ -z "$gen$rc_caps" ] && echo "$info" | grep -q 'rc_odp_caps'; then
		rc_ok "ibv_devinfo: no ODP capability on $RC_KERNEL"
	elif ! echo "$info" | grep -q 'hca_id'; then
		rc_fail "ibv_devinfo: no ODP capability on $RC_KERNEL" "ibv_devinfo failed"
	elif ! echo "$info" | grep -q 'rc_odp_caps'; then
		rc_fail "ibv_devinfo: no ODP capability on $RC_KERNEL" "no rc_odp_caps line to check"
	else
		rc_fail "ibv_devinfo: no ODP capability on $RC_KERNEL" "general [$gen] rc [$rc_caps]"
	fi ;;
*)
	rc_skip "ibv_devinfo: ODP capabilities" "no expectation recorded for kernel $RC_KERNEL" ;;
esac

# --- loopback ib_write_bw -----------------------------------------------
bw="-d $RXE_DEV -x $RXE_GID_INDEX -s 65536 -n 200 -F --report_gbits"
# $bw: the options, split into words on purpose
# shellcheck disable=SC2086
timeout 90 stdbuf -oL ib_write_bw $bw >/tmp/bw-server.log 2>&1 &
server=$!
# The client is refused if it comes before the server listens.
i=0
while ! grep -q 'Waiting for client' /tmp/bw-server.log 2>/dev/null && [ $i -lt 300 ]; do
	sleep 0.2
	i=$((i + 1))
done
# shellcheck disable=SC2086
timeout 60 ib_write_bw $bw "$RXE_ADDR" >/tmp/bw-client.log 2>&1
crc=$?
# The server is bounded by its own timeout: this wait cannot hang.
wait $server
src=$?
cat /tmp/bw-server.log /tmp/bw-client.log
# The result row: size, iterations, peak, average, msg rate.
row=$(awk '$1 == 65536 && $2 == 200 { print }' /tmp/bw-client.log)
if [ $crc = 0 ] && [ $src = 0 ] && [ -n "$row" ]; then
	rc_ok "loopback ib_write_bw 64 KiB x 200 completes"
	echo "# ib_write_bw 64KiB: $row" >>"$RC_TAP"
else
	rc_fail "loopback ib_write_bw 64 KiB x 200 completes" "client status $crc, server status $src, result row '$row'"
fi

# --- regcache.ko ------------------------------------------------------
if [ ! -f "$RC_KMOD" ]; then
	rc_fail "insmod regcache.ko" "$RC_KMOD not built"
	exit 1
fi
if rc_check "insmod regcache.ko ($RC_KVER)" insmod "$RC_KMOD"; then
	i=0
	while [ ! -c /dev/regcache ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
	if [ -c /dev/regcache ]; then
		rc_ok "/dev/regcache appears"
	else
		rc_fail "/dev/regcache appears" "$(ls -l /dev/regcache 2>&1)"
	fi
	rc_check "rmmod regcache" rmmod regcache
	if grep -q '^regcache ' /proc/modules || [ -e /dev/regcache ]; then
		rc_fail "regcache unloaded cleanly" "still in /proc/modules or /dev/regcache left"
	else
		rc_ok "regcache unloaded cleanly"
	fi
else
	rc_skip "/dev/regcache appears" "insmod failed"
	rc_skip "regcache unloaded cleanly" "insmod failed"
fi
