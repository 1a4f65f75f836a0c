# SPDX-License-Identifier: MIT
libdtrain_la_SOURCES += src/cmd/cmd.h src/cmd/common.c src/cmd/cmd_run.c
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

UNIT_TESTS += tests/unit/test_cmd

# train/progress.c's lines and ticker, tested here with the launcher that
# depends on them (src/train/ is being restructured).
UNIT_TESTS += tests/unit/test_progress
