#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# test_kmod_uapi.sh: include/regcache_uapi.h is a plain uapi header.  It
# must compile as strict C89, C99, C++98 and C++17 with -pedantic-errors
# (the kernel's own uapi headers do: userspace may be built with any of
# them), carry no __KERNEL__ block and no _Static_assert (the module checks
# the sizes with BUILD_BUG_ON), and userspace must see the same struct
# sizes as the module (checked here with a C89 negative-array trick).
# CC and CXX name the compilers (default cc, g++); a missing C++ compiler
# is a skip of those points, with the reason.
srcdir=$(cd "$(dirname "$0")" && pwd)
hdr=$srcdir/../include/regcache_uapi.h
CC=${CC:-cc}
CXX=${CXX:-g++}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/uapi.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/t.c" <<'_EOF'
#include "regcache_uapi.h"
#define SIZE(name, type, n) typedef char name[sizeof(type) == (n) ? 1 : -1];
SIZE(s_status, struct regcache_status, 64)
SIZE(s_info, struct regcache_info, 72)
SIZE(s_config, struct regcache_config, 32)
SIZE(s_watch, struct regcache_watch, 64)
SIZE(s_batch, struct regcache_watch_batch, 40)
SIZE(s_unwatch, struct regcache_unwatch, 32)
SIZE(s_flush, struct regcache_flush, 32)
SIZE(s_stats, struct regcache_ctx_stats, 88)
SIZE(s_event, struct regcache_event, 72)
SIZE(s_slot, char[REGCACHE_STATUS_SLOT_OFFSET(2)], 80)
int main(void)
{
	return (int)(REGCACHE_SLOT_GEN_MASK & 1) + REGCACHE_REASON_OTHER +
	       (int)(REGCACHE_IOC_FLUSH & 0);
}
_EOF

n=0
fail=0
point()
{
	n=$((n + 1))
	case $1 in
	ok) echo "ok $n - $2" ;;
	skip) echo "ok $n - $2 # SKIP $3" ;;
	*) echo "not ok $n - $2"; fail=1 ;;
	esac
}

echo "1..7"
if grep -n '__KERNEL__\|_Static_assert\|static_assert' "$hdr"; then
	point fail "no __KERNEL__ block or static assertion in the header"
else
	point ok "no __KERNEL__ block or static assertion in the header"
fi
for std in c89 c99 gnu11; do
	if $CC -std=$std -pedantic-errors -Wall -Wextra -Werror -fsyntax-only \
	     -I"$srcdir/../include" "$tmp/t.c"; then
		point ok "compiles as $std"
	else
		point fail "compiles as $std"
	fi
done
if ! command -v "$CXX" >/dev/null 2>&1; then
	for std in c++98 c++17; do
		point skip "compiles as $std" "no C++ compiler ($CXX)"
	done
else
	for std in c++98 c++17; do
		if $CXX -std=$std -pedantic-errors -Wall -Wextra -Werror -fsyntax-only \
		     -x c++ -I"$srcdir/../include" "$tmp/t.c"; then
			point ok "compiles as $std"
		else
			point fail "compiles as $std"
		fi
	done
fi
# the header alone, first, as a uapi header must stand
if printf '#include "regcache_uapi.h"\n' | $CC -std=c89 -pedantic-errors -Werror \
     -fsyntax-only -I"$srcdir/../include" -x c -; then
	point ok "self-contained"
else
	point fail "self-contained"
fi
exit $fail
