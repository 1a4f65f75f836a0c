# SPDX-License-Identifier: MIT
INTEGRATION_TESTS = tests/integration/bad-input.sh \
	tests/integration/tabular.sh \
	tests/integration/cpu-features.sh tests/integration/kernels.sh \
	tests/integration/mca-env.sh \
	tests/integration/tcp-eager.sh \
	tests/integration/ps-toy.sh \
	tests/integration/agree.sh \
	tests/integration/ps-train.sh \
	tests/integration/ps-watchdog.sh \
	tests/integration/jobs-plan.sh tests/integration/readme-jobs.sh \
	tests/integration/plan-memory.sh \
	tests/integration/plan-sharded.sh \
	tests/integration/plan-sharded-must.sh \
	tests/integration/plan-tp-must.sh \
	tests/integration/plan-vs-measured.sh \
	tests/integration/plan-tokens.sh \
	tests/integration/job-sweep.sh \
	tests/integration/np-equivalence.sh \
	tests/integration/determinism.sh \
	tests/integration/precision-bf16.sh \
	tests/integration/rank-failure.sh \
	tests/integration/resume-exact.sh \
	tests/integration/ckpt-faults.sh \
	tests/integration/ckpt-shards.sh tests/integration/resume-own.sh \
	tests/integration/ckpt-untrusted.sh \
	tests/integration/restarts.sh \
	tests/integration/ckpt-kill.sh \
	tests/integration/http.sh \
	tests/integration/data-trust.sh \
	tests/integration/output-guard.sh \
	tests/integration/sample.sh tests/integration/tied.sh \
	tests/integration/layouts.sh \
	tests/integration/zero.sh tests/integration/zero3-ckpt-eval.sh \
	tests/integration/zero-float.sh \
	tests/integration/recompute.sh tests/integration/attention-fused.sh \
	tests/integration/attention-bf16.sh \
	tests/integration/loss-in-place.sh \
	tests/integration/layout-resume.sh \
	tests/integration/shards.sh tests/integration/http-shards.sh \
	tests/integration/function-length.sh \
	tests/integration/design-doc.sh \
	tests/integration/names.sh \
	tests/integration/shapes.sh \
	tests/integration/eval-predict.sh \
	tests/integration/predict-token-ids.sh \
	tests/integration/empty-path-args.sh \
	tests/integration/checkpoint-step-best.sh \
	tests/integration/rundir-file.sh \
	tests/integration/refused-rundir.sh \
	tests/integration/torch-loader.sh \
	tests/integration/torch-loader-errors.sh \
	tests/integration/launch-stop.sh \
	tests/integration/scheduler-cancel.sh \
	tests/integration/launch-early-stop.sh \
	tests/integration/launch-quiet.sh \
	tests/integration/launchers.sh \
	tests/integration/install.sh \
	tests/integration/progress-tty.sh \
	tests/integration/progress-tasks.sh \
	tests/integration/usage-man.sh \
	tests/integration/spdx.sh \
	tests/integration/json-strict.sh \
	tests/integration/rundir-lock.sh \
	tests/integration/ckpt-shared.sh \
	tests/integration/resume-history.sh \
	tests/integration/resume-data.sh \
	tests/integration/diverge-aside.sh \
	tests/integration/report.sh \
	tests/integration/init-from.sh \
	tests/integration/best.sh \
	tests/integration/plan-link.sh \
	tests/integration/breakdown.sh \
	tests/integration/trace.sh \
	tests/integration/outputs-full.sh \
	tests/integration/tensorboard.sh \
	tests/integration/diverge.sh \
	tests/integration/diverge-first-step.sh \
	tests/integration/threads-affinity.sh \
	tests/integration/threads-cores.sh \
	tests/integration/stop-final-eval.sh \
	tests/integration/resume-schedule.sh \
	tests/integration/resume-batch.sh \
	tests/integration/mem-precheck.sh \
	tests/integration/mem-fit.sh \
	tests/integration/overlap.sh \
	tests/integration/overlap-progress.sh \
	tests/integration/accum-schedule.sh \
	tests/integration/accum-resume.sh \
	tests/integration/progress.sh \
	tests/integration/ring-sum.sh \
	tests/integration/rsag.sh \
	tests/integration/stdout-full.sh \
	tests/integration/eval-topk.sh \
	tests/integration/eval-predict-memory.sh \
	tests/integration/report-strict-json.sh \
	tests/integration/tokenize.sh \
	tests/integration/bpe-train.sh \
	tests/integration/zero3-gathered-ckpt.sh \
	tests/integration/export-memory.sh \
	tests/integration/tp-vocab.sh \
	tests/integration/tp-slice-mem.sh \
	tests/integration/tp-ckpt.sh \
	tests/integration/zero-tp.sh \
	tests/integration/tp-gpt.sh \
	tests/integration/zero3-bn-ckpt.sh \
	tests/integration/zero3-pages.sh \
	tests/integration/plan-kernels.sh \
	tests/integration/tp-uneven-ckpt.sh \
	tests/integration/seq-par.sh \
	tests/integration/zero-tp-slices.sh \
	tests/integration/tp-norm-bytes.sh \
	tests/integration/zero1-tp-collect.sh \
	tests/integration/tp-setup-peak.sh \
	tests/integration/tp-logits.sh \
	tests/integration/zero-resident-grads.sh \
	tests/integration/tp-zero-block-bytes.sh \
	tests/integration/tp-tied.sh \
	tests/integration/conv-bf16.sh \
	tests/integration/zero-breadth.sh
TESTS += $(INTEGRATION_TESTS)
EXTRA_DIST += $(INTEGRATION_TESTS) tests/integration/lib.sh

check-unit:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS="$(filter tests/unit/%,$(TESTS))"
.PHONY: check-unit
TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)

# The progress thread of the non-blocking sums under mpirun, run by
# tests/integration/progress.sh
check_PROGRAMS += tests/integration/progress_probe
tests_integration_progress_probe_SOURCES = tests/integration/progress_probe.c
tests_integration_progress_probe_LDADD = libdtrain.la $(DT_LIBS)

# The exact sum in 6 bytes a value under mpirun, run by
# tests/integration/ring-sum.sh
check_PROGRAMS += tests/integration/ring_probe
tests_integration_ring_probe_SOURCES = tests/integration/ring_probe.c
tests_integration_ring_probe_LDADD = libdtrain.la $(DT_LIBS) -lm

# The reduce-scatter and the all-gather under mpirun, run by
# tests/integration/rsag.sh
check_PROGRAMS += tests/integration/rsag_probe
tests_integration_rsag_probe_SOURCES = tests/integration/rsag_probe.c
tests_integration_rsag_probe_LDADD = libdtrain.la $(DT_LIBS) -lm

# Sequence parallelism's row collectives under mpirun, run by
# tests/integration/seq-par.sh
check_PROGRAMS += tests/integration/seqpar_probe
tests_integration_seqpar_probe_SOURCES = tests/integration/seqpar_probe.c
tests_integration_seqpar_probe_LDADD = libdtrain.la $(DT_LIBS) -lm

# The Open MPI settings a rank makes for itself, read back through MPI_T,
# for tests/integration/mca-env.sh and tcp-eager.sh
check_PROGRAMS += tests/integration/mca_probe
tests_integration_mca_probe_SOURCES = tests/integration/mca_probe.c
tests_integration_mca_probe_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_integration_mca_probe_LDADD = libdtrain.la $(DT_LIBS)
