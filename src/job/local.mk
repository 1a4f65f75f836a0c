# SPDX-License-Identifier: MIT
# src/job: the job file (YAML -> struct dt_job), its schema, --set, writing.
libdtrain_la_SOURCES += src/job/job.h src/job/layer_types.h \
	src/job/yaml.h src/job/yaml.c src/job/schema.h src/job/schema.c \
	src/job/keys.h src/job/keys.c src/job/error.h src/job/error.c \
	src/job/value.h src/job/value.c src/job/layers.h src/job/layers.c \
	src/job/tree.h src/job/tree.c \
	src/job/apply.h src/job/apply.c src/job/check.h src/job/check.c \
	src/job/job.c src/job/write.c src/job/fingerprint.c

UNIT_TESTS += tests/unit/test_job
tests_unit_test_job_SOURCES = tests/unit/test_job.c tests/unit/test_job_errors.c \
	tests/unit/test_job_layers.c tests/unit/test_job_sections.c \
	tests/unit/test_job_bounds.c tests/unit/test_job_utf8.c \
	tests/unit/job_test.h
