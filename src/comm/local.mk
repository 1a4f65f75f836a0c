# SPDX-License-Identifier: MIT
libdtrain_la_SOURCES += src/comm/comm.h src/comm/comm_priv.h src/comm/comm.c src/comm/comm_self.c \
	src/comm/comm_mpi.c src/comm/mpi_priv.h src/comm/watch.h src/comm/watchdog.c \
	src/comm/ps.h src/comm/ps_priv.h src/comm/ps.c src/comm/ps_server.c \
	src/comm/ps_worker.c src/comm/mpi_version.c \
	src/comm/hier.h src/comm/hier.c
libdtrain_la_CPPFLAGS += $(MPI_CFLAGS)

# Check suite (no MPI: layout checks, shards, split on one process)
check_PROGRAMS += tests/unit/test_ps
TESTS += tests/unit/test_ps
tests_unit_test_ps_SOURCES = tests/unit/test_ps.c
tests_unit_test_ps_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_ps_LDADD = $(UNIT_LDADD)

# Check suite (no MPI: the cut of the sharded collectives, their one-rank
# forms)
check_PROGRAMS += tests/unit/test_comm
TESTS += tests/unit/test_comm
tests_unit_test_comm_SOURCES = tests/unit/test_comm.c
tests_unit_test_comm_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_comm_LDADD = $(UNIT_LDADD) -lm

# The toy problem under mpirun, run by tests/integration/ps-toy.sh
check_PROGRAMS += tests/ps/ps_toy
tests_ps_ps_toy_SOURCES = tests/ps/ps_toy.c
tests_ps_ps_toy_LDADD = libdtrain.la $(DT_LIBS)

# dt_agree_check under mpirun, run by tests/integration/agree.sh
check_PROGRAMS += tests/agree/agree_probe
tests_agree_agree_probe_SOURCES = tests/agree/agree_probe.c
tests_agree_agree_probe_LDADD = libdtrain.la $(DT_LIBS)
