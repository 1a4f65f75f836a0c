# SPDX-License-Identifier: MIT
libdtrain_la_SOURCES += src/plan/plan.h src/plan/batch.c src/plan/describe.c \
	src/plan/link.c src/plan/pipeline.c src/plan/stages.c src/plan/build.c \
	src/plan/sync_plan.h src/plan/sync_plan.c
UNIT_TESTS += tests/unit/test_plan
