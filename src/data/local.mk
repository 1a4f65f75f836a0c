# SPDX-License-Identifier: MIT
# src/data: IDX reading, datasets, shuffle and sharding
libdtrain_la_SOURCES += src/data/data.h src/data/idx.c src/data/dataset.c \
	src/data/shuffle.c
# sources (fetch: libcurl, OpenSSL's sha256) and more formats
libdtrain_la_SOURCES += src/data/fetch.h src/data/fetch.c \
	src/data/data_priv.h src/data/blob.c src/data/csv.c src/data/npy.c \
	src/data/tokens.c src/data/text.c src/data/sniff.c src/data/header.c \
	src/data/bpe.h src/data/bpe_priv.h src/data/bpe.c src/data/bpe_learn.c \
	src/data/bpe_files.c

check_PROGRAMS += tests/unit/test_data
TESTS += tests/unit/test_data
tests_unit_test_data_SOURCES = tests/unit/test_data.c
tests_unit_test_data_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_data_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_fetch
TESTS += tests/unit/test_fetch
tests_unit_test_fetch_SOURCES = tests/unit/test_fetch.c
tests_unit_test_fetch_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_fetch_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_formats
TESTS += tests/unit/test_formats
tests_unit_test_formats_SOURCES = tests/unit/test_formats.c
tests_unit_test_formats_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_formats_LDADD = $(UNIT_LDADD)

# the HTTP server test_fetch starts on 127.0.0.1
EXTRA_DIST += tests/http_server.py

check_PROGRAMS += tests/unit/test_bpe
TESTS += tests/unit/test_bpe
tests_unit_test_bpe_SOURCES = tests/unit/test_bpe.c
tests_unit_test_bpe_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_bpe_LDADD = $(UNIT_LDADD)
