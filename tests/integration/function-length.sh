#!/bin/sh
# SPDX-License-Identifier: MIT
# function-length.sh - no function in src/train/*.c, src/cmd/*.c or
# src/launch/*.c is longer than 80 lines, counted from the line that names
# it (at the start of a line, the style's definition form) to its closing
# brace at the start of a line. With files as arguments (relative to
# top_srcdir), those are checked instead. Then checks the check itself: a
# made-up 81-line function fails.
top=$(cd "${top_srcdir:-.}" && pwd)
. "$top/tests/integration/lib.sh"

MAX=80

# long_functions FILE...: "file:line name length" for each too long.
long_functions() {
	awk -v max="$MAX" '
	FNR == 1 { name = "" }
	/^[A-Za-z_][A-Za-z0-9_]*\(/ && name == "" {
		name = $0; sub(/\(.*/, "", name); start = FNR
	}
	/^}/ && name != "" {
		len = FNR - start + 1
		if (len > max)
			printf "%s:%d %s %d lines\n", FILENAME, start, name, len
		name = ""
	}' "$@"
}

if [ $# -gt 0 ]; then
	where="$*"
	found=$(cd "$top" && long_functions "$@")
else
	where="src/train, src/cmd, src/launch"
	found=$(cd "$top" && long_functions src/train/*.c src/cmd/*.c \
		src/launch/*.c)
fi
[ -z "$found" ] || fail "functions over $MAX lines in $where:
$found"

# A function of 81 lines must be found, and one of 80 must not.
{
	printf 'static int\nlong_one(void)\n{\n'
	i=0
	while [ $i -lt 78 ]; do
		printf '\t(void)0;\n'
		i=$((i + 1))
	done
	printf '}\n'
} >long.c
{
	printf 'static int\nshort_one(void)\n{\n'
	i=0
	while [ $i -lt 77 ]; do
		printf '\t(void)0;\n'
		i=$((i + 1))
	done
	printf '}\n'
} >short.c
long_functions long.c | grep -q 'long_one 81 lines' ||
	fail "the check missed an 81-line function"
[ -z "$(long_functions short.c)" ] || fail "the check refused 80 lines"
echo "ok: no function in $where over $MAX lines"
