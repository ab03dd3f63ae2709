#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# check-scripts.sh: every shell script of the tree parses, and
# ShellCheck finds nothing in it (make check runs it on the host).  The scripts are found at
# run time, so a new one is checked without a list to update: every file
# under scripts/, tests/ and .ci/ whose name ends in .sh or .sh.in or
# whose first line is a #! line naming sh, bash or busybox sh.
#
# Point 1: "sh -n" (dash, Debian's /bin/sh) on each, "bash -n" on the
# bash ones: a syntax error fails whatever shellcheck says.
# Point 2: shellcheck on all of them, every severity (style included);
# any finding fails.  A finding that is intended is kept with a
# "# shellcheck disable=SCnnnn" comment on the line before it, saying
# why.  Files without a #! line are sourced by sh scripts (libraries of
# the VM harness, its suites) and are checked as POSIX sh.  SC1091 (a
# sourced file shellcheck cannot open: its path is a variable) is off:
# each sourced file is checked on its own here.  Before that, a snippet
# with a known finding (the `: "${a:=1}" b=2` slip, an assignment that
# is only an argument of ":") must fail, so a shellcheck that checks
# nothing cannot pass.  No shellcheck (Debian: shellcheck, installed by
# scripts/install-deps.sh): point 2 is a skip.
#
# Environment: SHELLCHECK (default shellcheck), srcdir (set by make
# check; default: this script's folder).
set -u

here=$(cd "${srcdir:-$(dirname "$0")}" && pwd) || exit 99
top=$(cd "$here/.." && pwd) || exit 99
sc=${SHELLCHECK:-shellcheck}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-scripts.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

# kind FILE: bash, sh (a #! line naming sh or busybox sh), lib (no #!
# line: sourced) or nothing (not a shell script).
kind()
{
	first=$(head -c 128 "$1" | head -n 1 | tr -d '\0')
	case $first in
	'#!'*bash*) echo bash; return ;;
	'#!'*/sh|'#!'*/sh\ *|'#!'*busybox\ sh*) echo sh; return ;;
	'#!'*) return ;;
	esac
	case $1 in
	*.sh|*.sh.in) echo lib ;;
	esac
}

for d in scripts tests .ci; do
	[ -d "$top/$d" ] && find "$top/$d" -type f
done | LC_ALL=C sort | while read -r f; do
	k=$(kind "$f")
	[ -n "$k" ] && echo "$k ${f#"$top"/}"
done >"$tmp/list"
n=$(wc -l <"$tmp/list")
echo "1..2"
if [ "$n" -lt 10 ]; then
	echo "not ok 1 - sh -n: only $n shell scripts found under $top (scripts/, tests/, .ci/)"
	echo "not ok 2 - shellcheck: not run"
	exit 1
fi

rc=0
bad=0
while read -r k f; do
	shell='sh'
	[ "$k" = bash ] && shell='bash'
	if ! "$shell" -n "$top/$f" 2>"$tmp/err"; then
		sed 's/^/# /' "$tmp/err"
		bad=$((bad + 1))
	fi
done <"$tmp/list"
if [ $bad = 0 ]; then
	echo "ok 1 - sh -n / bash -n: $n scripts parse"
else
	echo "not ok 1 - sh -n / bash -n: $bad of $n scripts do not parse"
	rc=1
fi

if ! command -v "$sc" >/dev/null 2>&1; then
	echo "ok 2 - shellcheck # SKIP $sc not installed (apt-get install shellcheck)"
	exit $rc
fi
cat >"$tmp/known-bad.sh" <<'EOF'
#!/bin/sh
: "${a:=1}" b=2
echo "$a $b"
EOF
if "$sc" "$tmp/known-bad.sh" >/dev/null 2>&1; then
	echo "not ok 2 - shellcheck: $sc passed a script with a known finding (SC2154)"
	exit 1
fi
# One file at a time, from the top (so that the messages name tree
# paths): a finding must not depend on which other files are checked
# beside it (SC2119, for one, looks at the functions of all of them).
# -x: follow a file that a "source=" directive names (tree paths).
scrc=0
while read -r k f; do
	case $k in
	lib) opt="-s sh" ;;
	*) opt= ;;
	esac
	# shellcheck disable=SC2086 # $opt: none or two words
	(cd "$top" && "$sc" -f gcc -x -e SC1091 $opt "$f") || scrc=1
done <"$tmp/list" >"$tmp/sc.out" 2>&1
if [ $scrc = 0 ] && [ ! -s "$tmp/sc.out" ]; then
	echo "ok 2 - shellcheck $("$sc" --version | sed -n 's/^version: //p'): $n scripts, no finding"
else
	sed 's/^/# /' "$tmp/sc.out"
	echo "not ok 2 - shellcheck: $(grep -c '' "$tmp/sc.out") finding(s) (fix, or disable with the reason on the line before)"
	rc=1
fi
exit $rc
