# SPDX-License-Identifier: MIT
# src/optim: optimizers and learning-rate schedules
libdtrain_la_SOURCES += src/optim/optim.h src/optim/optim.c \
	src/optim/schedule.h src/optim/schedule.c

UNIT_TESTS += tests/unit/test_optim
