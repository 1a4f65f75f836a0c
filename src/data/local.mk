# SPDX-License-Identifier: MIT
# src/data: IDX reading, datasets, shuffle and sharding
libdtrain_la_SOURCES += src/data/data.h src/data/idx.c src/data/dataset.c \
	src/data/shuffle.c
# sources (fetch: libcurl, OpenSSL's sha256) and more formats
libdtrain_la_SOURCES += src/data/fetch.h src/data/fetch.c src/data/fetch_head.c \
	src/data/data_priv.h src/data/blob.c src/data/csv.c src/data/npy.c \
	src/data/tokens.c src/data/shards.c src/data/text.c src/data/sniff.c \
	src/data/header.c src/data/digest.c \
	src/data/bpe.h src/data/bpe_priv.h src/data/bpe.c src/data/bpe_learn.c \
	src/data/bpe_files.c src/data/norm.c

UNIT_TESTS += tests/unit/test_data tests/unit/test_fetch \
	tests/unit/test_formats
# the flat temporary directory of test_data and test_formats
SCRATCH_DIR_SOURCES = tests/unit/scratch_dir.c tests/unit/scratch_dir.h
tests_unit_test_data_SOURCES = tests/unit/test_data.c $(SCRATCH_DIR_SOURCES)
tests_unit_test_formats_SOURCES = tests/unit/test_formats.c \
	$(SCRATCH_DIR_SOURCES)

# the HTTP server test_fetch starts on 127.0.0.1
EXTRA_DIST += tests/http_server.py

# the tokenizer's Check suite
UNIT_TESTS += tests/unit/test_bpe
