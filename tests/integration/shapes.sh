#!/bin/sh
# SPDX-License-Identifier: MIT
# shapes.sh - every buffer in src/train and src/plan says its shape, batch
# first (STYLE.md, "Comments"): a local variable or struct field that
# points to float, double or integer data carries a comment that opens
# with the shape, "/* (n_trained) */" or "/* name: (k + 1, n + 1) */", on
# its own line, the next one (a declaration that goes on), or as the
# comment just above it. Function parameters are left to the contract
# comments. With files as arguments (relative to top_srcdir), those are
# checked instead. Then checks the check itself on a made-up file.
top=$(cd "${top_srcdir:-.}" && pwd)
. "$top/tests/integration/lib.sh"

# unshaped FILE...: "file:line: text" for each pointer declaration without
# a shape comment. Parameters are told apart by the open parentheses
# around them; comments, strings and character literals are passed over
# when counting those.
types='float|double|int|long|bool|size_t|ssize_t|u?int(8|16|32|64)_t'
types="$types|unsigned|unsigned[ \t]+(char|int|long)"
star='[ \t]*\*[ \t*]*(const[ \t]+)?[A-Za-z_]'
# The patterns go through the environment, where awk leaves backslashes as
# they are.
export SHAPE_RE='/\*[ \t]*([^()*/]*:[ \t]*)?\('
export DECL_RE="^[ \t]+(static[ \t]+)?(const[ \t]+)?($types)([ \t]+const)?$star"
unshaped() {
	awk '
	BEGIN { shape = ENVIRON["SHAPE_RE"]; decl = ENVIRON["DECL_RE"] }
	function code_of(s,    out, c, i) {
		out = ""
		for (i = 1; i <= length(s); i++) {
			c = substr(s, i, 1)
			if (incomment) {
				if (substr(s, i, 2) == "*/") {
					incomment = 0
					i++
				}
			} else if (substr(s, i, 2) == "/*") {
				incomment = 1
				i++
			} else if (substr(s, i, 2) == "//") {
				break
			} else if (c == "\"" || c == "\047") {
				for (i++; i <= length(s); i++) {
					if (substr(s, i, 1) == c)
						break
					if (substr(s, i, 1) == "\\")
						i++
				}
			} else {
				out = out c
			}
		}
		return out
	}
	function report() {
		if (pending != "")
			print pending
		pending = ""
	}
	FNR == 1 { report(); depth = 0; incomment = 0; shaped_above = 0 }
	{
		shaped = $0 ~ shape
		# a declaration left open by the line before: this line ends it
		if (pending != "" && shaped)
			pending = ""
		report()
		start_in_comment = incomment
		code = code_of($0)
		if (!start_in_comment && depth == 0 && $0 ~ decl && !shaped &&
		    !shaped_above) {
			pending = FILENAME ":" FNR ": " $0
			if (code ~ /;[ \t]*$/)
				report()
		}
		depth += gsub(/\(/, "(", code) - gsub(/\)/, ")", code)
		# a comment that ends here and opened with a shape covers the
		# next line
		if (start_in_comment || $0 ~ /\/\*/)
			shaped_above = !incomment && $0 ~ /\*\/[ \t]*$/ &&
				       code ~ /^[ \t]*$/ &&
				       (opened_shaped || $0 ~ shape)
		else
			shaped_above = 0
		if (!start_in_comment && $0 ~ /\/\*/)
			opened_shaped = $0 ~ shape
	}
	END { report() }' "$@"
}

if [ $# -gt 0 ]; then
	where="$*"
	found=$(cd "$top" && unshaped "$@")
else
	where="src/train, src/plan"
	found=$(cd "$top" && unshaped src/train/*.[ch] src/plan/*.[ch])
fi
[ -z "$found" ] || fail "buffers without a shape comment in $where:
$found"

# A made-up file: lines 3, 10, 19 and 21 must be found, and nothing else.
cat >made-up.c <<'EOF'
/* SPDX-License-Identifier: MIT */
struct x {
	uint16_t *w;
	size_t *lo;	/* (n_nodes) */
};
static void
f(int n, float *p,
  double *q)
{
	float *a;
	double *b;	/* (n) */
	int64_t *c = g(n,
		       2);	/* (n, 2) */
	/* d: (k) */
	float *d;
	/* e: (k + 1), the next
	 * line's */
	int *e;
	const double *h = p;	/* the loop's (counter) */
	char *s = "float *z;";
	float *i = g(n,
		     3);
}
EOF
found=$(unshaped made-up.c)
want='made-up.c:3: 	uint16_t *w;
made-up.c:10: 	float *a;
made-up.c:19: 	const double *h = p;	/* the loop'"'"'s (counter) */
made-up.c:21: 	float *i = g(n,'
[ "$found" = "$want" ] || fail "the check on a made-up file found:
$found
where it should have found:
$want"
echo "ok: every buffer in $where says its shape"
