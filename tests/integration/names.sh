#!/bin/sh
# SPDX-License-Identifier: MIT
# names.sh - the names of the source files under src/ (doc/DESIGN.md,
# "Names"): no two share a stem unless they are one concept's header and
# body in one folder (x.h and x.c), and each opens with its SPDX line and
# then a comment that starts with its own name, "/* x.c - ". Then checks
# the check itself on a made-up tree that breaks each rule once.
top=$(cd "${top_srcdir:-.}" && pwd)
. "$top/tests/integration/lib.sh"

# check_names ROOT: one line per broken rule for ROOT/src; nothing when
# all hold.
check_names() {
	(cd "$1" && find src -name '*.[ch]' | sort) | awk '
	{
		file = $0
		n = split(file, part, "/")
		base = part[n]
		dir = substr(file, 1, length(file) - length(base) - 1)
		stem = base; sub(/\.[ch]$/, "", stem)
		ext = substr(base, length(base))
		count[stem]++
		files[stem] = files[stem] " " file
		dirs[stem] = dirs[stem] == "" || dirs[stem] == dir ? dir : "*"
		exts[stem] = exts[stem] ext
	}
	END {
		for (s in count) {
			if (count[s] == 1)
				continue
			if (count[s] == 2 && dirs[s] != "*" &&
			    (exts[s] == "ch" || exts[s] == "hc"))
				continue
			printf "stem %s shared by%s\n", s, files[s]
		}
	}'
	(cd "$1" && find src -name '*.[ch]' | sort) | while read -r f; do
		base=$(basename "$f")
		line1=$(sed -n 1p "$1/$f")
		line2=$(sed -n 2p "$1/$f")
		[ "$line1" = "/* SPDX-License-Identifier: MIT */" ] ||
			echo "$f: line 1 is not the SPDX line"
		case $line2 in
		"/* $base - "*) ;;
		*) echo "$f: line 2 does not start with \"/* $base - \"" ;;
		esac
	done
}

found=$(check_names "$top")
[ -z "$found" ] || fail "source file names under src/:
$found"

# A made-up tree: a.c beside a.h passes; b.c in two folders, c.h with
# c.c in another folder, and d.c with d.h beside a second d.c fail; e.c
# names another file, f.c has no comment on line 2.
fake=$SCRATCH/fake
mkdir -p "$fake/src/x" "$fake/src/y"
good() {
	printf '/* SPDX-License-Identifier: MIT */\n/* %s - what it is. */\n' \
		"$(basename "$1")" >"$fake/src/$1"
}
for f in x/a.c x/a.h x/b.c y/b.c x/c.h y/c.c x/d.c x/d.h y/d.c; do
	good "$f"
done
printf '/* SPDX-License-Identifier: MIT */\n/* other.c - no. */\n' \
	>"$fake/src/x/e.c"
printf '/* SPDX-License-Identifier: MIT */\n#include <stdio.h>\n' \
	>"$fake/src/x/f.c"
found=$(check_names "$fake")
for want in 'stem b shared by src/x/b.c src/y/b.c' \
	'stem c shared by src/x/c.h src/y/c.c' \
	'stem d shared by src/x/d.c src/x/d.h src/y/d.c' \
	'src/x/e.c: line 2 does not start with "/* e.c - "' \
	'src/x/f.c: line 2 does not start with "/* f.c - "'; do
	echo "$found" | grep -qF "$want" ||
		fail "the check missed: $want
it found:
$found"
done
[ "$(echo "$found" | wc -l)" -eq 5 ] || fail "the check found more than the
five broken rules of the made-up tree:
$found"
echo "ok: no two source files under src/ share a stem, each names itself"
