# src/graph: the model graph, one file per layer type (see layer.h).
libdtrain_la_SOURCES += src/graph/graph.h src/graph/graph.c \
	src/graph/layer.h src/graph/registry.c \
	src/graph/dense.c src/graph/activation.c src/graph/softmax_xent.c

check_PROGRAMS += tests/unit/test_graph
TESTS += tests/unit/test_graph
tests_unit_test_graph_SOURCES = tests/unit/test_graph.c
tests_unit_test_graph_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_graph_LDADD = $(UNIT_LDADD)
