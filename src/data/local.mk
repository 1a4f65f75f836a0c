# src/data: IDX reading, datasets, shuffle and sharding
libdtrain_la_SOURCES += src/data/data.h src/data/idx.c src/data/dataset.c \
	src/data/shuffle.c

check_PROGRAMS += tests/unit/test_data
TESTS += tests/unit/test_data
tests_unit_test_data_SOURCES = tests/unit/test_data.c
tests_unit_test_data_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_data_LDADD = $(UNIT_LDADD)
