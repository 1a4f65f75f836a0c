#!/bin/sh
# SPDX-License-Identifier: MIT
# design-doc.sh - doc/DESIGN.md against the tree: every src/ folder and
# file it names exists, every folder under src/ (read from the tree, so a
# folder added later must be described) is named there, every folder
# has a layer in its "Who may include whom" table, every #include
# "folder/x.h" of src/ goes to the file's own folder or a lower layer, a
# folder's *_priv.h is included only there, and only src/comm/ includes
# mpi.h. Then checks the check itself on a
# made-up tree that breaks each rule once.
top=$(cd "${top_srcdir:-.}" && pwd)
. "$top/tests/integration/lib.sh"

# check_design ROOT: prints one line per broken rule for the tree at
# ROOT (its doc/DESIGN.md and src/); prints nothing when all hold.
check_design() {
	root=$1
	doc=$root/doc/DESIGN.md
	if [ ! -f "$doc" ]; then
		echo "no doc/DESIGN.md"
		return
	fi
	# Named paths: src/NAME/, src/NAME/FILE.[ch] and src/FILE.c.
	for p in $(grep -o -e 'src/[A-Za-z0-9_]*/\([A-Za-z0-9_]*\.[ch]\)\{0,1\}' \
			-e 'src/[A-Za-z0-9_]*\.c' "$doc" | sort -u); do
		[ -e "$root/$p" ] || echo "DESIGN.md names $p, which does not exist"
	done
	for d in "$root"/src/*/; do
		[ -d "$d" ] || continue
		name=$(basename "$d")
		grep -q "src/$name/" "$doc" ||
			echo "src/$name/ exists but DESIGN.md does not describe it"
	done
	# The layer table: lines "    N  src/a/ src/b/" under its heading.
	awk '/^## / { in_table = ($0 == "## Who may include whom") }
	     in_table && /^    [0-9]+  / {
		for (i = 2; i <= NF; i++) {
			m = $i; sub(/^src\//, "", m); sub(/\/$/, "", m)
			sub(/\.c$/, "", m)
			print m, $1
		}
	     }' "$doc" >"$SCRATCH/layers"
	[ -s "$SCRATCH/layers" ] ||
		echo "DESIGN.md has no layer table under \"## Who may include whom\""
	for d in "$root"/src/*/; do
		[ -d "$d" ] || continue
		name=$(basename "$d")
		grep -q "^$name " "$SCRATCH/layers" ||
			echo "src/$name/ has no layer in DESIGN.md's table"
	done
	# Every quoted include with a folder, as "file folder target".
	(cd "$root" && find src -name '*.[ch]' | sort) | while read -r f; do
		from=$(echo "$f" | cut -d/ -f2)
		case $from in main.c) from=main ;; esac
		sed -n 's/^#[ 	]*include[ 	]*"\([A-Za-z0-9_]*\)\/.*/\1/p' \
			"$root/$f" | while read -r to; do
			echo "$f $from $to"
		done
	done | awk 'NR == FNR { layer[$1] = $2; next }
		$2 == $3 { next }
		!($2 in layer) || !($3 in layer) {
			printf "%s includes %s/, which has no layer\n", $1, $3
			next
		}
		layer[$3] + 0 >= layer[$2] + 0 {
			printf "%s (layer %d) includes %s/ (layer %d)\n",
			       $1, layer[$2], $3, layer[$3]
		}' "$SCRATCH/layers" -
	# A folder's *_priv.h is included from that folder only.
	(cd "$root" && grep -rn --include='*.[ch]' \
		'^#[ 	]*include[ 	]*"[A-Za-z0-9_]*/[A-Za-z0-9_]*_priv\.h"' src) |
		awk -F: '{
			split($1, f, "/")
			h = $3; sub(/^[^"]*"/, "", h); sub(/".*/, "", h)
			split(h, t, "/")
			if (f[2] != t[1])
				printf "%s includes %s, private to src/%s/\n",
				       $1, h, t[1]
		}'
	(cd "$root" && find src -name '*.[ch]' -not -path 'src/comm/*' \
		-exec grep -l '^#[ 	]*include[ 	]*<mpi\.h>' {} +) |
		sed 's/$/ includes mpi.h outside src\/comm\//'
}

found=$(check_design "$top")
[ -z "$found" ] || fail "doc/DESIGN.md and the tree disagree:
$found"

# The check must catch each broken rule of a made-up tree: a named
# folder that is missing (gone/), a folder that is not named (extra/), a
# named file that is missing, an include that goes up a layer, another
# folder's private header, and mpi.h outside comm/.
fake=$SCRATCH/fake
mkdir -p "$fake/doc" "$fake/src/util" "$fake/src/comm" "$fake/src/extra"
cat >"$fake/doc/DESIGN.md" <<'EOF'
# fake
src/util/ src/comm/ src/gone/ src/util/nothere.h

## Who may include whom

    1  src/comm/
    0  src/util/ src/gone/

## After
EOF
printf '#include "comm/comm.h"\n#include <mpi.h>\n' >"$fake/src/util/a.c"
printf '#include "util/a.h"\n#include <mpi.h>\n#include "util/u_priv.h"\n' \
	>"$fake/src/comm/b.c"
printf '#include "util/u_priv.h"\n' >"$fake/src/util/u.c"
found=$(check_design "$fake")
for want in 'names src/gone/, which does not exist' \
	'names src/util/nothere.h, which does not exist' \
	'src/extra/ exists but DESIGN.md does not describe it' \
	'src/extra/ has no layer' \
	'src/util/a.c (layer 0) includes comm/ (layer 1)' \
	'src/util/a.c includes mpi.h outside src/comm/' \
	'src/comm/b.c includes util/u_priv.h, private to src/util/'; do
	echo "$found" | grep -qF "$want" ||
		fail "the check missed: $want
it found:
$found"
done
[ "$(echo "$found" | wc -l)" -eq 7 ] || fail "the check found more than the
seven broken rules of the made-up tree:
$found"
echo "ok: doc/DESIGN.md names every src/ folder, and the include layers hold"
