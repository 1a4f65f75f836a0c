# SPDX-License-Identifier: MIT
libdtrain_la_SOURCES += src/comm/comm.h src/comm/comm_priv.h src/comm/comm.c src/comm/comm_self.c \
	src/comm/comm_mpi.c src/comm/mpi_priv.h src/comm/watch.h src/comm/watchdog.c \
	src/comm/ps.h src/comm/ps_priv.h src/comm/ps.c src/comm/ps_server.c \
	src/comm/ps_worker.c src/comm/mpi_version.c \
	src/comm/hier.h src/comm/hier.c
libdtrain_la_CPPFLAGS += $(MPI_CFLAGS)

# Check suite (no MPI: layout checks, shards, split on one process)
UNIT_TESTS += tests/unit/test_ps

# Check suite (no MPI: the cut of the sharded collectives, their one-rank
# forms)
UNIT_TESTS += tests/unit/test_comm

# The toy problem under mpirun, run by tests/integration/ps-toy.sh
check_PROGRAMS += tests/ps/ps_toy
tests_ps_ps_toy_SOURCES = tests/ps/ps_toy.c
tests_ps_ps_toy_LDADD = libdtrain.la $(DT_LIBS)

# dt_agree_check under mpirun, run by tests/integration/agree.sh
check_PROGRAMS += tests/agree/agree_probe
tests_agree_agree_probe_SOURCES = tests/agree/agree_probe.c
tests_agree_agree_probe_LDADD = libdtrain.la $(DT_LIBS)
