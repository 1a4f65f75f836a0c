# SPDX-License-Identifier: MIT
# src/optim: optimizers and learning-rate schedules
libdtrain_la_SOURCES += src/optim/optim.h src/optim/optim.c \
	src/optim/schedule.h src/optim/schedule.c

check_PROGRAMS += tests/unit/test_optim
TESTS += tests/unit/test_optim
tests_unit_test_optim_SOURCES = tests/unit/test_optim.c
tests_unit_test_optim_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_optim_LDADD = $(UNIT_LDADD)
