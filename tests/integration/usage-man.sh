#!/bin/sh
# SPDX-License-Identifier: MIT
# The usage that dtrain prints against dtrain(1): the commands of `dtrain
# help` are the commands of the SYNOPSIS; each command's usage line (from
# its option table) equals its SYNOPSIS entry and its COMMANDS heading
# word for word; every option of `dtrain CMD --help` has an item in that
# command's part of COMMANDS, and every option item there is an option of
# the command; `dtrain help CMD` prints what `dtrain CMD --help` prints.
# The checker is then run on two damaged copies of the page, which it must
# refuse, so that it is known to be able to fail.
. "${top_srcdir}/tests/integration/lib.sh"
MAN="$top_srcdir/man/dtrain.1"

cat >check.py <<'PY'
import re, subprocess, sys

man_path, dtrain = sys.argv[1], sys.argv[2]
errors = []

def out(*args):
    r = subprocess.run([dtrain] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        errors.append("dtrain %s: exit %d" % (" ".join(args), r.returncode))
    return r.stdout

def words(line):
    """The words of one mdoc line as the reader sees them, for the macros
    a synopsis uses: Nm, Cm, Ar, Fl, Op (to the end of the line), Ns."""
    toks = line.split()
    if toks and toks[0].startswith("."):
        toks[0] = toks[0][1:]
    res, close, glue = [], 0, False

    def add(w, glue_next):
        nonlocal glue
        if glue and res:
            res[-1] += w
        else:
            res.append(w)
        glue = glue_next

    for t in toks:
        if t == "Ns":
            glue = True
        elif t == "Nm":
            add("dtrain", False)
        elif t in ("Cm", "Ar", "It", "Xo", "Xc"):
            pass
        elif t == "Op":
            add("[", True)
            close += 1
        elif t == "Fl":
            add("-", True)
        else:
            add(t, False)
    if close:
        res[-1] += "]" * close
    return res

lines = open(man_path).read().split("\n")

def section(name):
    start = lines.index(".Sh " + name) + 1
    end = next(i for i in range(start, len(lines))
               if lines[i].startswith(".Sh "))
    return lines[start:end]

# SYNOPSIS: one entry per .Nm line.
entries = []
for l in section("SYNOPSIS"):
    if l == ".Nm":
        entries.append(["dtrain"])
    else:
        entries[-1].extend(words(l))
entries = [" ".join(e) for e in entries]
by_cmd = {}
for e in entries:
    if e != "dtrain --help | --version":
        by_cmd.setdefault(e.split()[1], []).append(e)

# COMMANDS: the .It Xo ... .Xc headings of the outer list, and each
# command's part up to the next heading.
cmds = section("COMMANDS")
heads, i = [], 0
while i < len(cmds):
    if cmds[i] == ".It Xo":
        j = cmds.index(".Xc", i)
        heads.append((i, j, "dtrain " + " ".join(
            sum((words(l) for l in cmds[i + 1:j]), []))))
        i = j
    i += 1
parts = {}
for k, (i, j, text) in enumerate(heads):
    end = heads[k + 1][0] if k + 1 < len(heads) else len(cmds)
    parts[text.split()[1]] = (text, cmds[j + 1:end])

listing = out("help")
names = re.findall(r"^  ([a-z]+)  +\S", listing, re.M)
if not names:
    errors.append("dtrain help lists no commands")
if out("--help") != listing:
    errors.append("dtrain --help differs from dtrain help")
if "  dtrain --help | --version" not in listing.split("\n"):
    errors.append("dtrain help lacks the line 'dtrain --help | --version'")
if "dtrain --help | --version" not in entries:
    errors.append("SYNOPSIS lacks dtrain --help | --version")
for name in sorted(set(by_cmd) - set(names)):
    errors.append("SYNOPSIS has %s, which dtrain help does not list" % name)
desc = "\n".join(section("DESCRIPTION"))
if ".Fl h\n" not in desc or ".Fl -help ,\n" not in desc:
    errors.append("DESCRIPTION does not tell of -h and --help")

for name in names:
    helptext = out(name, "--help")
    if out("help", name) != helptext:
        errors.append("dtrain help %s differs from dtrain %s --help"
                      % (name, name))
    first = helptext.split("\n")[0]
    if not first.startswith("usage: "):
        errors.append("dtrain %s --help: first line %r" % (name, first))
        continue
    usage = " ".join(first[len("usage: "):].split())
    for l in helptext.split("\n")[1:]:  # the usage is one line
        if len(l) > 80:
            errors.append("dtrain %s --help: line over 80 columns: %r"
                          % (name, l))
    syn = by_cmd.get(name, [])
    if syn != [usage]:
        errors.append("%s: usage %r, SYNOPSIS %r" % (name, usage, syn))
    if name not in parts:
        errors.append("%s: no .It Xo heading in COMMANDS" % name)
        continue
    head, body = parts[name]
    if head != usage:
        errors.append("%s: usage %r, COMMANDS heading %r"
                      % (name, usage, head))
    # Options in the help: the left column of the lines after "options:".
    opts = set()
    body_help = helptext.split("\noptions:\n", 1)[-1].split("\n\n")[0]
    for l in body_help.split("\n"):
        m = re.match(r"^  (?:(-[A-Za-z0-9]))?(?:, )?\s*(--[a-z-]+)?", l)
        if m:
            opts.update(x for x in m.groups() if x)
    opts -= {"-h", "--help"}
    # Option items of the command's part of COMMANDS.
    items = set()
    for l in body:
        if l.startswith(".It Fl "):
            items.update("-" + t for t in re.findall(r"Fl (\S+)", l))
    for o in sorted(opts - items):
        errors.append("%s: option %s has no .It item in dtrain(1)"
                      % (name, o))
    for o in sorted(items - opts):
        errors.append("%s: dtrain(1) has an item for %s, which the "
                      "command does not take" % (name, o))

for e in errors:
    print("usage-man: " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY

"$PYTHON" check.py "$MAN" "$DTRAIN" || fail "dtrain(1) and the usage disagree"

# The checker refuses a synopsis word changed, an option item dropped and
# an option item that no command takes.
sed '0,/^\.Op Fl -max-restarts Ar k$/s//.Op Fl -max-restarts Ar n/' \
	"$MAN" >bad1.1
sed '/^\.It Fl -json$/d' "$MAN" >bad2.1
sed 's/^\.It Fl -prompt Ar text$/.It Fl -prompt Ar text , Fl p Ar text/' \
	"$MAN" >bad3.1
for b in bad1 bad2 bad3; do
	! cmp -s "$MAN" $b.1 || fail "$b: the damage did not apply"
	if "$PYTHON" check.py $b.1 "$DTRAIN" 2>$b.err; then
		fail "$b: the checker passed a damaged page"
	fi
done
grep -q "run: usage .*SYNOPSIS" bad1.err || { cat bad1.err >&2; fail bad1; }
grep -q "plan: option --json has no .It item" bad2.err || { cat bad2.err >&2; fail bad2; }
grep -q "sample: dtrain(1) has an item for -p" bad3.err || { cat bad3.err >&2; fail bad3; }
echo "usage-man: $(grep -c . check.py) lines of checker; usage and dtrain(1) agree"
