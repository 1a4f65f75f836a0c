# SPDX-License-Identifier: MIT
libdtrain_la_SOURCES += src/plan/plan.h src/plan/batch.c src/plan/describe.c \
	src/plan/link.c src/plan/pipeline.c src/plan/stages.c src/plan/build.c \
	src/plan/sync_plan.h src/plan/sync_plan.c
check_PROGRAMS += tests/unit/test_plan
TESTS += tests/unit/test_plan
tests_unit_test_plan_SOURCES = tests/unit/test_plan.c
tests_unit_test_plan_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_plan_LDADD = $(UNIT_LDADD)
