# SPDX-License-Identifier: MIT
# src/ckpt: checkpoint format (safetensors + JSON), atomic save, verify,
# find latest, load, prune, export
libdtrain_la_SOURCES += src/ckpt/ckpt.h src/ckpt/ckpt_priv.h src/ckpt/ckpt.c \
	src/ckpt/io.c src/ckpt/meta.c src/ckpt/part.c \
	src/ckpt/safetensors.c

UNIT_TESTS += tests/unit/test_ckpt
