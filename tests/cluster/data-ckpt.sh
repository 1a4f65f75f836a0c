#!/bin/sh
# SPDX-License-Identifier: MIT
# Data and checkpoints across simulated hosts.
#   (a) A job whose four Fashion-MNIST sources are URLs, served by
#       tests/http_server.py from a host of its own on the bridge
#       (198.18.0.200), on 2 hosts x 2 ranks, each host with its own cache
#       (DTRAIN_CACHE, set per host by netns-rsh): every file is requested
#       exactly once by each host (the server logs the client), each cache
#       holds the right bytes, and the losses are those of the same job
#       read from local files on one host.
#   (b) A run stopped by SIGTERM at step 37 on 2 hosts x 1 rank resumes on
#       one host (np=2), and one stopped on one host resumes on the
#       cluster; both end with the parameters of the uninterrupted
#       one-host run, bit for bit (tests/integration/resume-exact.sh).
. "${top_srcdir}/tests/cluster/lib.sh"
need_fmnist
cluster_up 2

FILES="train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz
t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz"
mkdir www
for f in $FILES; do
	cp "$FMNIST/$f" www/
done
www_up "$SCRATCH/www"

# url_job FILE BASE: the small MLP on the four files under BASE (a URL
# with sha256 and size, or a directory).
url_job() {
	{
		echo "name: url"
		echo "seed: 7"
		echo "data:"
		for split in train eval; do
			echo "  $split:"
			for part in images labels; do
				case $split-$part in
				train-images) f=train-images-idx3-ubyte.gz ;;
				train-labels) f=train-labels-idx1-ubyte.gz ;;
				eval-images) f=t10k-images-idx3-ubyte.gz ;;
				eval-labels) f=t10k-labels-idx1-ubyte.gz ;;
				esac
				echo "    $part:"
				echo "      path: $2/$f"
				case $2 in
				http*)
					echo "      sha256: $(sha256sum "www/$f" | cut -d' ' -f1)"
					echo "      size: $(wc -c <"www/$f" | tr -d ' ')" ;;
				esac
			done
		done
		cat <<YAML
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 32, activation: relu}
    - {type: dense, units: 10}
train:
  global_batch: 96
  steps: 6
  optimizer: sgd
  lr: 0.05
eval:
  every_steps: 6
log:
  every_steps: 1
YAML
	} >"$1"
}

# (a)
url_job url.yaml "$WWW"
url_job local.yaml "$SCRATCH/www"
export DTC_CACHE_ROOT="$SCRATCH/cache"
t0=$(date +%s)
cmpi 2 2 "$DTRAIN" run -q --run-dir url url.yaml >url.out 2>url.err ||
	{ cat url.err >&2; fail "(a) the URL job failed on the cluster"; }
unset DTC_CACHE_ROOT
for f in $FILES; do
	for k in 1 2; do
		n=$(grep -c "^/$f range=- status=200 client=198.18.0.$k\$" requests.log || :)
		[ "$n" -eq 1 ] || { cat requests.log >&2; fail "(a) host $k requested $f $n times, expected 1"; }
		c=$(ls cache/h$k/*-"$f")
		cmp -s "$c" "www/$f" || fail "(a) host $k's cached $f differs"
	done
done
[ "$(wc -l <requests.log)" -eq 8 ] || { cat requests.log >&2; fail "(a) $(wc -l <requests.log) requests, expected 8"; }
mpi 4 "$DTRAIN" run -q --run-dir local local.yaml >/dev/null
compare_losses local url 0 >/dev/null || { compare_losses local url 0 || :; fail "(a) URL losses differ from the local run"; }
echo "ok: (a) each host downloaded each file once; losses as from local files ($(( $(date +%s) - t0 )) s)"

# (b)
t0=$(date +%s)
write_ckpt_job ck.yaml 60
mpi 2 "$DTRAIN" run -q --run-dir full ck.yaml >/dev/null
export_of full full.st
# stop WHERE DIR: the job stopped at step 37 on the cluster or one host.
stop() {
	set +e
	if [ "$1" = cluster ]; then
		DTRAIN_TEST_SIGNAL_AT_STEP=37 cmpi 2 1 -x DTRAIN_TEST_SIGNAL_AT_STEP \
			"$DTRAIN" run -q --run-dir "$2" ck.yaml >/dev/null 2>"$2.err"
	else
		DTRAIN_TEST_SIGNAL_AT_STEP=37 mpi 2 -x DTRAIN_TEST_SIGNAL_AT_STEP \
			"$DTRAIN" run -q --run-dir "$2" ck.yaml >/dev/null 2>"$2.err"
	fi
	rc=$?
	set -e
	[ $rc -eq 3 ] || { cat "$2.err" >&2; fail "(b) $2: stopped run exited $rc, expected 3"; }
	[ -f "$2/checkpoints/step-000000037/MANIFEST.json" ] || fail "(b) $2: no checkpoint at step 37"
}
stop cluster c2h
mpi 2 "$DTRAIN" resume -q c2h >/dev/null 2>c2h.err2
grep -q 'resuming from .*step 37' c2h.err2 || { cat c2h.err2 >&2; fail "(b) cluster -> host: no resume"; }
export_of c2h c2h.st
cmp full.st c2h.st || fail "(b) stopped on the cluster, resumed on one host: parameters differ"
stop host h2c
cmpi 2 1 "$DTRAIN" resume -q h2c >/dev/null 2>h2c.err2
grep -q 'resuming from .*step 37' h2c.err2 || { cat h2c.err2 >&2; fail "(b) host -> cluster: no resume"; }
export_of h2c h2c.st
cmp full.st h2c.st || fail "(b) stopped on one host, resumed on the cluster: parameters differ"
echo "ok: (b) cluster -> one host and one host -> cluster resumes give the uninterrupted bits ($(( $(date +%s) - t0 )) s)"
