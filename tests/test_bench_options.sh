#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# test_bench_options.sh: rdmaxfer-bench's --compare, --reps, --plot and
# --thread-mode, --directory, --publish, --name, --wait, --rkey-mode and
# --rereg refuse every misuse
# before a device is opened or anything
# runs: exit status 2 and a message that names the problem (host test, no
# RDMA device needed).  A missing perftest or gnuplot is simulated with an
# empty PATH.
# Also the table renderer of scripts/bench-compare.sh: its verdicts
# (parity within +-10 %, ahead/behind only when the quartiles agree) on
# made-up runs.  TAP output.
bench=${RC_BENCH:-../utils/rdmaxfer-bench}
srcdir=${srcdir:-.}
table=$srcdir/../scripts/bench-compare-table.py
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_bench_options.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/empty"

if [ ! -x "$bench" ]; then
	echo "1..0 # SKIP $bench not built"
	exit 0
fi

n=0
fails=0
echo "1..32"

ok()
{
	n=$((n + 1))
	echo "ok $n - $1"
}

not_ok()
{
	n=$((n + 1))
	fails=$((fails + 1))
	echo "not ok $n - $1"
	shift
	for l in "$@"; do echo "$l"; done | sed 's/^/# /'
}

# refused NAME PATTERN [env VAR=VALUE] ARGS...: exit status 2 within 10 s
# and PATTERN (a fixed string) in stderr; nothing on stdout
refused()
{
	name=$1
	pat=$2
	shift 2
	timeout 10 "$@" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ "$st" != 2 ]; then
		not_ok "$name" "exit status $st, want 2" "$(cat "$tmp/err")"
	elif ! grep -qF -- "$pat" "$tmp/err"; then
		not_ok "$name" "no '$pat' in:" "$(cat "$tmp/err")"
	elif [ -s "$tmp/out" ]; then
		not_ok "$name" "wrote to stdout: $(head -n 3 "$tmp/out")"
	else
		ok "$name"
	fi
}

refused "--compare: a test perftest lacks (reg)" \
	"perftest has no test matching 'reg'" "$bench" --compare reg 192.0.2.1
refused "--compare: a test perftest lacks (nixl)" \
	"perftest has no test matching 'nixl'" "$bench" --compare nixl 192.0.2.1
refused "--compare: atomics are not compared" \
	"perftest has no test matching 'fadd_lat'" \
	"$bench" --compare fadd_lat 192.0.2.1
refused "--compare without the device's address" \
	"--compare needs SERVER" "$bench" --compare write_bw
refused "--compare with --csv" "--json and --csv do not apply" \
	"$bench" --compare --csv write_bw 192.0.2.1
refused "--compare with --json" "--json and --csv do not apply" \
	"$bench" --compare --json read_bw 192.0.2.1
refused "--compare with -l (no perftest counterpart)" \
	"have no perftest counterpart" \
	"$bench" --compare -l 4 write_bw 192.0.2.1
refused "--compare with --validate" "have no perftest counterpart" \
	"$bench" --compare --validate write_bw 192.0.2.1
refused "--compare: ports would pass 65535" "is too high" \
	"$bench" --compare -p 65534 write_bw 192.0.2.1
refused "--reps without --compare" "--reps applies to --compare only" \
	"$bench" --reps 3 write_bw 192.0.2.1
refused "--reps 0" "invalid repetition count" \
	"$bench" --compare --reps 0 write_bw 192.0.2.1
refused "--reps not a number" "invalid repetition count" \
	"$bench" --compare --reps x write_bw 192.0.2.1
refused "--compare without perftest in PATH" \
	"--compare needs perftest's ib_read_lat (apt-get install perftest)" \
	env PATH="$tmp/empty" "$bench" --compare read_lat 192.0.2.1
refused "--plot: not a .png name" "does not end in .png" \
	"$bench" --plot "$tmp/x.svg" write_bw 192.0.2.1
refused "--plot: a folder that does not exist" "cannot write into" \
	"$bench" --plot "$tmp/nonexistent/x.png" write_bw 192.0.2.1
refused "--plot on a server (no SERVER)" "it needs SERVER" \
	"$bench" --plot "$tmp/x.png" write_lat
refused "--plot of a registration test" "it needs SERVER and one of" \
	"$bench" --plot "$tmp/x.png" reg 192.0.2.1
refused "--plot without gnuplot in PATH" \
	"--plot needs gnuplot, which is not installed (apt-get install gnuplot-nox)" \
	env PATH="$tmp/empty" "$bench" --plot "$tmp/x.png" write_bw 192.0.2.1

refused "--thread-mode: neither single nor multi" \
	"invalid thread mode (single or multi) 'serial'" \
	"$bench" --thread-mode serial write_bw 192.0.2.1
refused "--wait: neither poll, notif nor fd" \
	"invalid --wait (poll, notif or fd) 'sleep'" \
	"$bench" --wait sleep write_lat 192.0.2.1
refused "--wait outside write_lat" "--wait applies to write_lat only" \
	"$bench" --wait fd read_lat 192.0.2.1
refused "--wait with --compare" "(not with --compare)" \
	"$bench" --wait notif --compare write_lat 192.0.2.1
refused "--rkey-mode: not a mode" \
	"invalid --rkey-mode (auto, exact, window or cached) 'loose'" \
	"$bench" --rkey-mode loose write_bw
refused "--rereg outside nixl" "--rereg applies to nixl only" \
	"$bench" --rereg write_bw 192.0.2.1
# the directory: checked before etcd is asked (nothing listens on port 1)
refused "--name without --directory" "need --directory" \
	"$bench" --name srv write_bw
refused "--name with SERVER" "in place of SERVER" \
	"$bench" --directory http://127.0.0.1:1 --name srv write_bw 192.0.2.1
refused "--publish with SERVER" "without SERVER" \
	"$bench" --directory http://127.0.0.1:1 --publish srv write_bw 192.0.2.1
refused "--directory without --publish or --name" "needs --publish" \
	"$bench" --directory http://127.0.0.1:1 write_bw
refused "--directory with reg" "client/server tests only" \
	"$bench" --directory http://127.0.0.1:1 --publish srv reg

refused "bench-compare.sh --rows: not a row of the table" \
	"'read_bw:63' is not a row of the table" \
	sh "$srcdir/../scripts/bench-compare.sh" --bench "$bench" --device rxe0 \
	--addr 192.0.2.1 --out "$tmp/bc" --rows write_bw:64,read_bw:63

refused "bench-compare.sh --scale: not quick, standard or full" \
	"--scale is quick, standard or full, not 'huge'" \
	sh "$srcdir/../scripts/bench-compare.sh" --bench "$bench" --device rxe0 \
	--addr 192.0.2.1 --out "$tmp/bc" --scale huge

# --- the table's verdicts on made-up runs ------------------------------
# Five repetitions; the peers run at 1.0 except perftest default, set so
# that ours1 / pt is 0.5 0.6 0.55 0.7 0.45.
#   ours16 / pt_l16 at 64 B: 1.05 0.95 1.02 0.97 1.08  -> parity
#   ours1 / pt_q1 at 64 B:   1.5 1.4 1.6 1.3 1.45      -> ahead
#   ours1 / pt at 64 B:      0.5 0.6 0.55 0.7 0.45     -> behind
#   ours16 / pt_l16 at 4096: 1.5 0.6 1.4 0.7 1.3       -> unresolved
#     (median 1.3 is outside the band, but the quartiles straddle 1.0)
python3 - "$tmp/raw.csv" <<'EOF'
import sys
o16 = (1.05, 0.95, 1.02, 0.97, 1.08)
o1 = (1.5, 1.4, 1.6, 1.3, 1.45)
r1 = (0.5, 0.6, 0.55, 0.7, 0.45)
o16k = (1.5, 0.6, 1.4, 0.7, 1.3)
with open(sys.argv[1], "w") as f:
    f.write("kernel,tool,test,bytes,rep,value\n")
    for i in range(5):
        r = i + 1
        for tool, size, v in (("ours16", 64, o16[i]), ("pt_l16", 64, 1.0),
                              ("ours1", 64, o1[i]), ("pt_q1", 64, 1.0),
                              ("pt", 64, o1[i] / r1[i]),
                              ("ours16", 4096, o16k[i]),
                              ("pt_l16", 4096, 1.0)):
            f.write(f"t,{tool},write_bw,{size},{r},{v}\n")
EOF
if python3 "$table" "$tmp" >"$tmp/table" 2>&1; then
	v1=$(awk '$1 == "write_bw" && $2 == 64 && /perftest -l 16/ { print $NF }' "$tmp/table")
	v2=$(awk '$1 == "write_bw" && $2 == 64 && /perftest -Q 1/ { print $NF }' "$tmp/table")
	v3=$(awk '$1 == "write_bw" && $2 == 64 && /perftest default/ { print $NF }' "$tmp/table")
	v4=$(awk '$1 == "write_bw" && $2 == 4096 && /perftest -l 16/ { print $NF }' "$tmp/table")
	if [ "$v1 $v2 $v3 $v4" = "parity ahead behind unresolved" ]; then
		ok "table verdicts: parity, ahead, behind, unresolved"
	else
		not_ok "table verdicts: parity, ahead, behind, unresolved" \
			"got '$v1 $v2 $v3 $v4'" "$(cat "$tmp/table")"
	fi
else
	not_ok "table verdicts: parity, ahead, behind, unresolved" \
		"$(cat "$tmp/table")"
fi
[ "$fails" = 0 ]
