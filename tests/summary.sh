#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# summary.sh DIR: one closing line counting every test case of the last
# test run under DIR (host programs and guest suites alike).
#
# The counts come from DIR/test-suite.log, which the automake harness
# writes for exactly the tests it just ran (the top-level targets delete it
# first, so a run that never reached the tests does not report an old
# one).  Without it nothing ran, and the line says so.
dir=${1:-tests}
if [ -f "$dir/test-suite.log" ]; then
	awk '
		/^# PASS:/ || /^# XFAIL:/ { pass += $3 }
		/^# FAIL:/ || /^# XPASS:/ || /^# ERROR:/ { fail += $3 }
		/^# SKIP:/ { skip += $3 }
		/^# ERROR:/ { exit }
		END { printf "tests: %d passed, %d failed, %d skipped\n", pass, fail, skip }' \
		"$dir/test-suite.log"
	exit 0
fi
echo "tests: 0 passed, 0 failed, 0 skipped (no $dir/test-suite.log: the tests did not run)"
