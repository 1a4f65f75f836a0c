# SPDX-License-Identifier: MIT
# src/ckpt: checkpoint format (safetensors + JSON), atomic save, verify,
# find latest, load, prune, export
libdtrain_la_SOURCES += src/ckpt/ckpt.h src/ckpt/ckpt_priv.h src/ckpt/ckpt.c \
	src/ckpt/io.c src/ckpt/meta.c src/ckpt/safetensors.c

check_PROGRAMS += tests/unit/test_ckpt
TESTS += tests/unit/test_ckpt
tests_unit_test_ckpt_SOURCES = tests/unit/test_ckpt.c
tests_unit_test_ckpt_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_ckpt_LDADD = $(UNIT_LDADD)
