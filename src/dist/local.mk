# SPDX-License-Identifier: MIT
libdtrain_la_SOURCES += src/dist/comm.h src/dist/comm.c src/dist/comm_self.c \
	src/dist/comm_mpi.c src/dist/mpi_priv.h src/dist/watch.h src/dist/watchdog.c \
	src/dist/ps.h src/dist/ps_priv.h src/dist/ps.c src/dist/ps_server.c \
	src/dist/ps_worker.c src/dist/agree.h src/dist/agree.c src/dist/version.c \
	src/dist/hier.h src/dist/hier.c
libdtrain_la_CPPFLAGS += $(MPI_CFLAGS)

# Check suite (no MPI: layout checks, shards, split on one process)
check_PROGRAMS += tests/unit/test_ps
TESTS += tests/unit/test_ps
tests_unit_test_ps_SOURCES = tests/unit/test_ps.c
tests_unit_test_ps_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_ps_LDADD = $(UNIT_LDADD)

# The toy problem under mpirun, run by tests/integration/ps-toy.sh
check_PROGRAMS += tests/ps/ps_toy
tests_ps_ps_toy_SOURCES = tests/ps/ps_toy.c
tests_ps_ps_toy_LDADD = libdtrain.la $(DT_LIBS)

# Check suite of the start-up agreement on the single-process communicator
check_PROGRAMS += tests/unit/test_agree
TESTS += tests/unit/test_agree
tests_unit_test_agree_SOURCES = tests/unit/test_agree.c
tests_unit_test_agree_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_agree_LDADD = $(UNIT_LDADD)

# dt_agree_check under mpirun, run by tests/integration/agree.sh
check_PROGRAMS += tests/agree/agree_probe
tests_agree_agree_probe_SOURCES = tests/agree/agree_probe.c
tests_agree_agree_probe_LDADD = libdtrain.la $(DT_LIBS)
