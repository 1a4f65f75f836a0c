# SPDX-License-Identifier: MIT
libdtrain_la_SOURCES += src/util/status.h src/util/status.c \
	src/util/alloc.h src/util/alloc.c src/util/rng.h src/util/rng.c \
	src/util/fileio.h src/util/fileio.c src/util/endian.h src/util/endian.c \
	src/util/gz.h src/util/gz.c \
	src/util/sysmem.h src/util/sysmem.c src/util/tfevents.h src/util/tfevents.c \
	src/util/threadpool.h src/util/threadpool.c src/util/jsonnum.h src/util/jsonnum.c \
	src/util/bf16.h src/util/bf16.c src/util/span.h src/util/span.c \
	src/util/meter.h src/util/meter.c src/util/cpus.h src/util/cpus.c

check_PROGRAMS += tests/unit/test_tfevents
TESTS += tests/unit/test_tfevents
tests_unit_test_tfevents_SOURCES = tests/unit/test_tfevents.c
tests_unit_test_tfevents_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_tfevents_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_util
TESTS += tests/unit/test_util
tests_unit_test_util_SOURCES = tests/unit/test_util.c
tests_unit_test_util_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_util_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_threadpool
TESTS += tests/unit/test_threadpool
tests_unit_test_threadpool_SOURCES = tests/unit/test_threadpool.c
tests_unit_test_threadpool_CFLAGS = $(UNIT_CFLAGS) -pthread
tests_unit_test_threadpool_LDADD = $(UNIT_LDADD) -lpthread
