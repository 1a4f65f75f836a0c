# SPDX-License-Identifier: MIT
# The launcher of `dtrain run -n`: mpirun started, supervised, restarted.
libdtrain_la_SOURCES += src/launch/hosts.h src/launch/hosts.c
libdtrain_la_SOURCES += src/launch/banner.h src/launch/banner.c
libdtrain_la_SOURCES += src/launch/launch.h src/launch/launch_priv.h \
	src/launch/launch.c src/launch/mpirun_cmd.c src/launch/exit_note.c \
	src/launch/child.c src/launch/teardown.c src/launch/elastic.c \
	src/launch/restart.c src/launch/cancel.c

# launch/hosts.c: the hostfile, the placement of ranks and the probe of an
# elastic launch (tests/cluster/elastic.sh runs it on simulated hosts).
UNIT_TESTS += tests/unit/test_hosts

# The command line built for mpirun, the ranks' notes (torn and hostile
# ones rejected) and the decisions after a launch ends.
UNIT_TESTS += tests/unit/test_launch
