#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# summary.sh DIR: one closing line counting every test case that the TAP
# driver recorded under DIR (host programs and guest suites alike).
dir=${1:-tests}
find "$dir" -name '*.trs' -exec cat {} + 2>/dev/null | awk '
	/^:test-result: (PASS|XFAIL)/ { pass++ }
	/^:test-result: (FAIL|XPASS|ERROR)/ { fail++ }
	/^:test-result: SKIP/ { skip++ }
	END { printf "tests: %d passed, %d failed, %d skipped\n", pass, fail, skip }'
