# SPDX-License-Identifier: MIT
libdtrain_la_SOURCES += src/util/status.h src/util/status.c \
	src/util/alloc.h src/util/alloc.c src/util/rng.h src/util/rng.c \
	src/util/fileio.h src/util/fileio.c src/util/endian.h src/util/endian.c \
	src/util/gz.h src/util/gz.c \
	src/util/sysmem.h src/util/sysmem.c src/util/tfevents.h src/util/tfevents.c \
	src/util/threadpool.h src/util/threadpool.c src/util/jsonnum.h src/util/jsonnum.c \
	src/util/bf16.h src/util/bf16.c src/util/span.h src/util/span.c \
	src/util/meter.h src/util/meter.c src/util/cpus.h src/util/cpus.c \
	src/util/cpu_features.h src/util/cpu_features.c \
	src/util/trace.h src/util/trace.c src/util/share.h

UNIT_TESTS += tests/unit/test_tfevents tests/unit/test_util \
	tests/unit/test_threadpool
