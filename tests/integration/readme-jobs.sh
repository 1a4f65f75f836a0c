#!/bin/sh
# SPDX-License-Identifier: MIT
# The README names every example job of jobs/ (as jobs/NAME.yaml), every
# job it names exists, and its first lines keep the two commands a
# newcomer types on a fresh machine. jobs-plan.sh plans each job.
# README=FILE checks another file (to show the test failing).
. "${top_srcdir}/tests/integration/lib.sh"
readme=${README:-$top_srcdir/README}
[ -f "$readme" ] || fail "$readme is missing"
n=0
for job in "$top_srcdir"/jobs/*.yaml; do
	name=jobs/$(basename "$job")
	grep -qF "$name" "$readme" ||
		fail "$readme does not name $name (say what the job is for)"
	n=$((n + 1))
done
[ "$n" -ge 8 ] || fail "only $n jobs found in $top_srcdir/jobs"
for name in $(grep -o 'jobs/[A-Za-z0-9_.-]*\.yaml' "$readme" | sort -u); do
	[ -f "$top_srcdir/$name" ] ||
		fail "$readme names $name, which jobs/ does not hold"
done
head -n 10 "$readme" | grep -qF './bootstrap && make demo' ||
	fail "$readme: './bootstrap && make demo' is not in the first lines"
head -n 10 "$readme" | grep -q '^ *make check' ||
	fail "$readme: 'make check' is not in the first lines"
echo "the README names all $n jobs and keeps the quick start"
