# SPDX-License-Identifier: MIT
# The simulated-cluster tests: network namespaces on a bridge, Open MPI
# over TCP between them (tests/cluster/lib.sh). They need root and
# iproute2; elsewhere they are skipped (exit 77), never passed.
# watchdog.sh runs on one host, without namespaces.
CLUSTER_TESTS = tests/cluster/watchdog.sh tests/cluster/layouts.sh \
	tests/cluster/data-ckpt.sh tests/cluster/faults.sh \
	tests/cluster/hier.sh tests/cluster/elastic.sh \
	tests/cluster/ps-faults.sh tests/cluster/elastic-kill.sh \
	tests/cluster/http-shards-hosts.sh
TESTS += $(CLUSTER_TESTS)
EXTRA_DIST += $(CLUSTER_TESTS) tests/cluster/lib.sh tests/cluster/netns-rsh

# dt_comm_hier_new under mpirun, run by tests/cluster/hier.sh
check_PROGRAMS += tests/cluster/hier_probe
tests_cluster_hier_probe_SOURCES = tests/cluster/hier_probe.c
tests_cluster_hier_probe_LDADD = libdtrain.la $(DT_LIBS)
