libdtrain_la_SOURCES += src/util/status.h src/util/error.c \
	src/util/alloc.h src/util/alloc.c src/util/rng.h src/util/rng.c \
	src/util/sysmem.h src/util/sysmem.c src/util/tfevents.h src/util/tfevents.c

check_PROGRAMS += tests/unit/test_tfevents
TESTS += tests/unit/test_tfevents
tests_unit_test_tfevents_SOURCES = tests/unit/test_tfevents.c
tests_unit_test_tfevents_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_tfevents_LDADD = $(UNIT_LDADD)
