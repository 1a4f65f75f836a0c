# SPDX-License-Identifier: MIT
# tests/fuzz: libFuzzer targets for the readers of untrusted input (the
# job parser, every data format, the checkpoint and safetensors readers,
# the HTTP header lines and the download sniffer, the hostfile of an
# elastic launch, the run files `dtrain report` reads), with seed corpora.
#
# make check builds each target with replay.c as its main and runs it on
# its seeds and on tests/fuzz/regress/NAME/ (no clang needed). make fuzz
# runs tests/fuzz/run.sh: a separate clang build with libFuzzer, ASan and
# UBSan, each target for FUZZ_SECONDS (60) seconds. fuzz-targets is what
# run.sh makes in that build; it is no use in a gcc build.
FUZZ_TARGETS = job idx csv npy tokens llmc vocab safetensors ckpt_meta ckpt_manifest http_header \
	sniff hostfile report
FUZZ_SECONDS = 60
LIBFUZZER_FLAGS = -fsanitize=fuzzer
FUZZ_COMMON = tests/fuzz/fuzz.h tests/fuzz/fuzz_file.c

check_PROGRAMS += tests/fuzz/replay_job
TESTS += tests/fuzz/replay_job
tests_fuzz_replay_job_SOURCES = tests/fuzz/fuzz_job.c tests/fuzz/replay.c \
	$(FUZZ_COMMON)
tests_fuzz_replay_job_CPPFLAGS = $(AM_CPPFLAGS) -DDT_FUZZ_NAME='"job"'
tests_fuzz_replay_job_LDADD = libdtrain.la $(DT_LIBS)

check_PROGRAMS += tests/fuzz/replay_idx
TESTS += tests/fuzz/replay_idx
tests_fuzz_replay_idx_SOURCES = tests/fuzz/fuzz_idx.c tests/fuzz/replay.c \
	$(FUZZ_COMMON)
tests_fuzz_replay_idx_CPPFLAGS = $(AM_CPPFLAGS) -DDT_FUZZ_NAME='"idx"'
tests_fuzz_replay_idx_LDADD = libdtrain.la $(DT_LIBS)

check_PROGRAMS += tests/fuzz/replay_csv
TESTS += tests/fuzz/replay_csv
tests_fuzz_replay_csv_SOURCES = tests/fuzz/fuzz_csv.c tests/fuzz/replay.c \
	$(FUZZ_COMMON)
tests_fuzz_replay_csv_CPPFLAGS = $(AM_CPPFLAGS) -DDT_FUZZ_NAME='"csv"'
tests_fuzz_replay_csv_LDADD = libdtrain.la $(DT_LIBS)

check_PROGRAMS += tests/fuzz/replay_npy
TESTS += tests/fuzz/replay_npy
tests_fuzz_replay_npy_SOURCES = tests/fuzz/fuzz_npy.c tests/fuzz/replay.c \
	$(FUZZ_COMMON)
tests_fuzz_replay_npy_CPPFLAGS = $(AM_CPPFLAGS) -DDT_FUZZ_NAME='"npy"'
tests_fuzz_replay_npy_LDADD = libdtrain.la $(DT_LIBS)

check_PROGRAMS += tests/fuzz/replay_llmc
TESTS += tests/fuzz/replay_llmc
tests_fuzz_replay_llmc_SOURCES = tests/fuzz/fuzz_llmc.c tests/fuzz/replay.c \
	$(FUZZ_COMMON)
tests_fuzz_replay_llmc_CPPFLAGS = $(AM_CPPFLAGS) -DDT_FUZZ_NAME='"llmc"'
tests_fuzz_replay_llmc_LDADD = libdtrain.la $(DT_LIBS)

check_PROGRAMS += tests/fuzz/replay_tokens
TESTS += tests/fuzz/replay_tokens
tests_fuzz_replay_tokens_SOURCES = tests/fuzz/fuzz_tokens.c tests/fuzz/replay.c \
	$(FUZZ_COMMON)
tests_fuzz_replay_tokens_CPPFLAGS = $(AM_CPPFLAGS) -DDT_FUZZ_NAME='"tokens"'
tests_fuzz_replay_tokens_LDADD = libdtrain.la $(DT_LIBS)

check_PROGRAMS += tests/fuzz/replay_vocab
TESTS += tests/fuzz/replay_vocab
tests_fuzz_replay_vocab_SOURCES = tests/fuzz/fuzz_vocab.c tests/fuzz/replay.c \
	$(FUZZ_COMMON)
tests_fuzz_replay_vocab_CPPFLAGS = $(AM_CPPFLAGS) -DDT_FUZZ_NAME='"vocab"'
tests_fuzz_replay_vocab_LDADD = libdtrain.la $(DT_LIBS)

check_PROGRAMS += tests/fuzz/replay_safetensors
TESTS += tests/fuzz/replay_safetensors
tests_fuzz_replay_safetensors_SOURCES = tests/fuzz/fuzz_safetensors.c tests/fuzz/replay.c \
	$(FUZZ_COMMON)
tests_fuzz_replay_safetensors_CPPFLAGS = $(AM_CPPFLAGS) -DDT_FUZZ_NAME='"safetensors"'
tests_fuzz_replay_safetensors_LDADD = libdtrain.la $(DT_LIBS)

check_PROGRAMS += tests/fuzz/replay_ckpt_meta
TESTS += tests/fuzz/replay_ckpt_meta
tests_fuzz_replay_ckpt_meta_SOURCES = tests/fuzz/fuzz_ckpt_meta.c tests/fuzz/replay.c \
	$(FUZZ_COMMON)
tests_fuzz_replay_ckpt_meta_CPPFLAGS = $(AM_CPPFLAGS) -DDT_FUZZ_NAME='"ckpt_meta"'
tests_fuzz_replay_ckpt_meta_LDADD = libdtrain.la $(DT_LIBS)

check_PROGRAMS += tests/fuzz/replay_ckpt_manifest
TESTS += tests/fuzz/replay_ckpt_manifest
tests_fuzz_replay_ckpt_manifest_SOURCES = tests/fuzz/fuzz_ckpt_manifest.c tests/fuzz/replay.c \
	$(FUZZ_COMMON)
tests_fuzz_replay_ckpt_manifest_CPPFLAGS = $(AM_CPPFLAGS) -DDT_FUZZ_NAME='"ckpt_manifest"'
tests_fuzz_replay_ckpt_manifest_LDADD = libdtrain.la $(DT_LIBS)

check_PROGRAMS += tests/fuzz/replay_http_header
TESTS += tests/fuzz/replay_http_header
tests_fuzz_replay_http_header_SOURCES = tests/fuzz/fuzz_http_header.c tests/fuzz/replay.c \
	$(FUZZ_COMMON)
tests_fuzz_replay_http_header_CPPFLAGS = $(AM_CPPFLAGS) -DDT_FUZZ_NAME='"http_header"'
tests_fuzz_replay_http_header_LDADD = libdtrain.la $(DT_LIBS)

check_PROGRAMS += tests/fuzz/replay_sniff
TESTS += tests/fuzz/replay_sniff
tests_fuzz_replay_sniff_SOURCES = tests/fuzz/fuzz_sniff.c tests/fuzz/replay.c \
	$(FUZZ_COMMON)
tests_fuzz_replay_sniff_CPPFLAGS = $(AM_CPPFLAGS) -DDT_FUZZ_NAME='"sniff"'
tests_fuzz_replay_sniff_LDADD = libdtrain.la $(DT_LIBS)

check_PROGRAMS += tests/fuzz/replay_hostfile
TESTS += tests/fuzz/replay_hostfile
tests_fuzz_replay_hostfile_SOURCES = tests/fuzz/fuzz_hostfile.c tests/fuzz/replay.c \
	$(FUZZ_COMMON)
tests_fuzz_replay_hostfile_CPPFLAGS = $(AM_CPPFLAGS) -DDT_FUZZ_NAME='"hostfile"'
tests_fuzz_replay_hostfile_LDADD = libdtrain.la $(DT_LIBS)

check_PROGRAMS += tests/fuzz/replay_report
TESTS += tests/fuzz/replay_report
tests_fuzz_replay_report_SOURCES = tests/fuzz/fuzz_report.c tests/fuzz/replay.c \
	$(FUZZ_COMMON)
tests_fuzz_replay_report_CPPFLAGS = $(AM_CPPFLAGS) -DDT_FUZZ_NAME='"report"'
tests_fuzz_replay_report_LDADD = libdtrain.la $(DT_LIBS)

EXTRA_DIST += tests/fuzz/run.sh tests/fuzz/corpus tests/fuzz/regress \
	tests/fuzz/job.dict tests/fuzz/ckpt.dict tests/fuzz/safetensors.dict \
	tests/fuzz/npy.dict tests/fuzz/http_header.dict

fuzz:
	$(SHELL) $(srcdir)/tests/fuzz/run.sh $(FUZZ_SECONDS)

# In run.sh's clang build: each target linked with libFuzzer's main.
FUZZ_COMPILE = $(CC) $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) $(CPPFLAGS) \
	$(AM_CFLAGS) $(CFLAGS)
fuzz-targets: libdtrain.la
	@$(MKDIR_P) tests/fuzz
	@for f in fuzz_file $(FUZZ_TARGETS:%=fuzz_%); do \
		echo "  CC       tests/fuzz/lf-$$f.o"; \
		$(FUZZ_COMPILE) -c -o tests/fuzz/lf-$$f.o \
			$(srcdir)/tests/fuzz/$$f.c || exit 1; \
	done
	@for t in $(FUZZ_TARGETS); do \
		echo "  CCLD     tests/fuzz/fuzz_$$t"; \
		$(LIBTOOL) --silent --mode=link $(CC) $(AM_CFLAGS) $(CFLAGS) \
			$(LIBFUZZER_FLAGS) $(AM_LDFLAGS) $(LDFLAGS) \
			-o tests/fuzz/fuzz_$$t tests/fuzz/lf-fuzz_$$t.o \
			tests/fuzz/lf-fuzz_file.o libdtrain.la $(DT_LIBS) || \
			exit 1; \
	done
CLEANFILES += tests/fuzz/lf-*.o $(FUZZ_TARGETS:%=tests/fuzz/fuzz_%)
.PHONY: fuzz fuzz-targets
