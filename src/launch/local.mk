# SPDX-License-Identifier: MIT
# The launcher of `dtrain run -n`: mpirun started, supervised, restarted.
libdtrain_la_SOURCES += src/launch/hosts.h src/launch/hosts.c
libdtrain_la_SOURCES += src/launch/banner.h src/launch/banner.c

# launch/hosts.c: the hostfile, the placement of ranks and the probe of an
# elastic launch (tests/cluster/elastic.sh runs it on simulated hosts).
check_PROGRAMS += tests/unit/test_hosts
TESTS += tests/unit/test_hosts
tests_unit_test_hosts_SOURCES = tests/unit/test_hosts.c
tests_unit_test_hosts_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_hosts_LDADD = $(UNIT_LDADD)
