# SPDX-License-Identifier: MIT
libdtrain_la_SOURCES += src/cmd/cmd.h src/cmd/common.c src/cmd/cmd_run.c
libdtrain_la_SOURCES += src/cmd/hosts.h src/cmd/hosts.c
libdtrain_la_SOURCES += src/cmd/banner.h src/cmd/banner.c
libdtrain_la_SOURCES += src/cmd/opt.h src/cmd/opt.c src/cmd/cmd_help.c
libdtrain_la_SOURCES += src/cmd/cmd_export.c src/cmd/cmd_eval.c src/cmd/cmd_predict.c
libdtrain_la_SOURCES += src/cmd/model_io.h src/cmd/model_io.c
libdtrain_la_SOURCES += src/cmd/torch_export.h src/cmd/torch_export.c
libdtrain_la_SOURCES += src/cmd/cmd_plan.c
libdtrain_la_SOURCES += src/cmd/cmd_report.h src/cmd/cmd_report.c src/cmd/report_script.c
libdtrain_la_SOURCES += src/cmd/cmd_fetch.c
libdtrain_la_SOURCES += src/cmd/cmd_sample.c
libdtrain_la_SOURCES += src/cmd/cmd_tokenize.c
libdtrain_la_SOURCES += src/cmd/cmd_version.c src/cmd/cmd_complete.c

check_PROGRAMS += tests/unit/test_cmd
TESTS += tests/unit/test_cmd
tests_unit_test_cmd_SOURCES = tests/unit/test_cmd.c
tests_unit_test_cmd_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_cmd_LDADD = $(UNIT_LDADD)

# train/progress.c's lines and ticker, tested here with the launcher that
# depends on them (src/train/ is being restructured).
check_PROGRAMS += tests/unit/test_progress
TESTS += tests/unit/test_progress
tests_unit_test_progress_SOURCES = tests/unit/test_progress.c
tests_unit_test_progress_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_progress_LDADD = $(UNIT_LDADD)

# cmd/hosts.c: the hostfile, the placement of ranks and the probe of an
# elastic launch (tests/cluster/elastic.sh runs it on simulated hosts).
check_PROGRAMS += tests/unit/test_hosts
TESTS += tests/unit/test_hosts
tests_unit_test_hosts_SOURCES = tests/unit/test_hosts.c
tests_unit_test_hosts_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_hosts_LDADD = $(UNIT_LDADD)
