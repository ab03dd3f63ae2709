#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# man-commands.sh PAGE: prints the commands of a man page's example
# blocks, one a line: every line between .EX and .EE that starts with
# "# " (a command run as root), with the roff escapes the pages use
# (\-, \(aq, \(dq, \e, \\) turned back into the characters typed.  The
# tuning VM suite runs each line of rdmaxfer-tuning(7) this way, so the
# guide's commands are tested as written.
page=${1:?usage: man-commands.sh PAGE}
[ -r "$page" ] || { echo "man-commands: cannot read $page" >&2; exit 1; }
awk '
	/^\.EX/ { ex = 1; next }
	/^\.EE/ { ex = 0; next }
	ex && /^# / {
		line = substr($0, 3)
		gsub(/\\-/, "-", line)
		gsub(/\\\(aq/, "\047", line)
		gsub(/\\\(dq/, "\"", line)
		gsub(/\\e/, "\\", line)
		gsub(/\\\\/, "\\", line)
		print line
	}
' "$page"
