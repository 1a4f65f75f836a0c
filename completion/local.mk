# SPDX-License-Identifier: MIT
## The bash completion script, written at build time from dtrain's own
## tables (src/cmd/cmd_complete.c) and installed where bash-completion looks.
noinst_PROGRAMS += completion/gen
completion_gen_SOURCES = completion/gen.c
completion_gen_LDADD = libdtrain.la $(DT_LIBS)

bashcompletiondir = $(datadir)/bash-completion/completions
bashcompletion_DATA = completion/dtrain
CLEANFILES += completion/dtrain

completion/dtrain: completion/gen$(EXEEXT)
	$(AM_V_GEN)$(MKDIR_P) completion && \
	./completion/gen$(EXEEXT) >$@.tmp && mv $@.tmp $@
