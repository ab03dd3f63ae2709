# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench-ring2-plan: what both guests of the pair bench-ring2 run, in the
# same order (sourced by bench-ring2-server.sh and bench-ring2-client.sh).
# SIZE:GRAINS per rdmaxfer-bench ring run, as bench-ring.sh (1K:60: fewer
# grains than N = 64, so no credit is waited for there); a fresh port
# pair per run (a target process listens on its port and the next).
# shellcheck disable=SC2034 # read by the scripts that source this file
ring2_plan="1K:1000 1K:60 64K:160 1M:16 4M:8 8M:4"
ring2_reps=$(sed -n 's/.*rc\.reps=\([0-9]*\).*/\1/p' /proc/cmdline)
ring2_reps=${ring2_reps:-3}
ring2_port() { echo $((RC_2HOST_PORT + 20 + 2 * $1)); }
ring2_wport() { echo $((RC_2HOST_PORT + 200 + $1)); }
