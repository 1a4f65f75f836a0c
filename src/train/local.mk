# SPDX-License-Identifier: MIT
# train/: the run (run.c: set-up and teardown), its data (run_data.c), the
# loop's cadence (loop.c), the executor (exec.c), the gradient sync
# (sync.c, sync_ps.c), evaluation (eval.c), what is written (metrics.c),
# checkpoints (state.c, gather.c) and the parts under them.
libdtrain_la_SOURCES += src/train/train.h src/train/run.c \
	src/train/state.h src/train/state.c \
	src/train/run_data.h src/train/run_data.c \
	src/train/datafiles.h src/train/datafiles.c \
	src/train/agree.h src/train/agree.c \
	src/train/loop.h src/train/loop.c \
	src/train/diverge.h src/train/diverge.c \
	src/train/decay.h src/train/decay.c \
	src/train/memcheck.h src/train/memcheck.c \
	src/train/exec.h src/train/exec.c \
	src/train/step_report.h \
	src/train/sync.h src/train/sync_priv.h src/train/sync.c \
	src/train/sync_ps.c src/train/sync_zero.c src/train/sync_zero3.c \
	src/train/tie_sum.h src/train/tie_sum.c \
	src/train/eval.h src/train/eval.c \
	src/train/metrics.h src/train/metrics.c \
	src/train/gather.h src/train/gather.c \
	src/train/init_from.h src/train/init_from.c \
	src/train/best.h src/train/best.c \
	src/train/source.h src/train/source.c \
	src/train/loader.h src/train/loader.c \
	src/train/signals.h src/train/signals.c \
	src/train/rundir.h src/train/rundir.c \
	src/train/progress.h src/train/progress.c

# test_agree: the start-up agreement on the single-process communicator;
# test_sync_optim: the optimizer the sync seam makes and owns
UNIT_TESTS += tests/unit/test_sync tests/unit/test_diverge \
	tests/unit/test_agree tests/unit/test_sync_optim
