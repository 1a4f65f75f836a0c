libdtrain_la_SOURCES += src/util/status.h src/util/error.c \
	src/util/alloc.h src/util/alloc.c src/util/rng.h src/util/rng.c \
	src/util/pool.h src/util/pool.c

check_PROGRAMS += tests/unit/test_pool
TESTS += tests/unit/test_pool
tests_unit_test_pool_SOURCES = tests/unit/test_pool.c
tests_unit_test_pool_CFLAGS = $(UNIT_CFLAGS) -pthread
tests_unit_test_pool_LDADD = $(UNIT_LDADD) -lpthread
