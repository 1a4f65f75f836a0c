#!/bin/sh
# SPDX-License-Identifier: MIT
# Under parallel.accum_schedule: breadth_first, a run stopped by SIGTERM
# in the middle (step 37 of 60, between the checkpoints of 25 and 50) and
# resumed ends with the parameters and the loss lines of the uninterrupted
# run, byte for byte, at np=1 and np=2 (3 micro-batches a rank, overlap
# on, buckets of a few KiB), and those are the bits of depth_first.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_ckpt_job job.yaml 60
bf="--set parallel.accum_schedule=breadth_first --set parallel.bucket_mb=0.004"
for np in 1 2; do
	# shellcheck disable=SC2086
	mpi $np "$DTRAIN" run -q --run-dir full$np job.yaml $bf >/dev/null
	export_of full$np full$np.st
	losses full$np >full$np.l
	[ "$(wc -l <full$np.l)" -eq 12 ] || fail "np=$np: expected 12 logged steps"
	d=stop$np
	set +e
	# shellcheck disable=SC2086
	DTRAIN_TEST_SIGNAL_AT_STEP=37 mpi $np -x DTRAIN_TEST_SIGNAL_AT_STEP \
		"$DTRAIN" run -q --run-dir $d job.yaml $bf >/dev/null 2>$d.err
	rc=$?
	set -e
	[ "$rc" -eq 3 ] || { cat $d.err >&2; fail "np=$np: the stopped run exited $rc, expected 3"; }
	[ -f $d/checkpoints/step-000000037/MANIFEST.json ] ||
		fail "np=$np: no checkpoint at step 37"
	grep -q '"accum_schedule": *"breadth_first"' $d/plan.json ||
		fail "np=$np: the run did not use breadth_first"
	mpi $np "$DTRAIN" resume -q $d >/dev/null 2>$d.err2 ||
		{ cat $d.err2 >&2; fail "np=$np: resume failed"; }
	grep -q "resuming from .*step 37" $d.err2 || fail "np=$np: did not resume from 37"
	export_of $d $d.st
	losses $d >$d.l
	cmp full$np.st $d.st || fail "np=$np: resumed parameters differ"
	cmp full$np.l $d.l || fail "np=$np: resumed loss lines differ"
	mpi $np "$DTRAIN" run -q --run-dir df$np job.yaml \
		--set parallel.accum_schedule=depth_first >/dev/null
	export_of df$np df$np.st
	cmp full$np.st df$np.st || fail "np=$np: breadth_first differs from depth_first"
	echo "ok: np=$np: stopped at 37, resumed: the uninterrupted bits"
done
