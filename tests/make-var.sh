# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# make-var.sh: sourced by tests/install-check.sh and tests/dkms-check.sh.
# make_var DIR VAR prints make's fully expanded value of VAR in the build
# directory DIR (the Makefile configure wrote there).
#
# Run from make (make check-dkms, make -C BUILD ...): the flags make
# exports (w: 'Entering directory' on stdout) reach every make below,
# dkms's and configure's included, and pollute what they capture.
unset MAKEFLAGS MFLAGS MAKELEVEL

make_var()
{
	make -s --no-print-directory -C "$1" -f Makefile -f - print-var VAR="$2" <<'EOF_MK'
print-var:
	@echo '$($(VAR))'
EOF_MK
}
