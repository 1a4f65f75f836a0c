# SPDX-License-Identifier: MIT
# src/graph: the model graph, one file per layer type (see layer.h).
libdtrain_la_SOURCES += src/graph/graph.h src/graph/graph.c src/graph/model.h \
	src/graph/stage.c src/graph/stage.h src/graph/tensor.c \
	src/graph/layer.h src/graph/registry.c src/graph/kern.h src/graph/kern.c \
	src/graph/kern_bf16.c \
	src/graph/kern_small.c src/graph/kern_paths.h src/graph/kern_paths.c \
	src/graph/dense.c src/graph/activation.c src/graph/softmax_xent.c \
	src/graph/mse.c src/graph/l1_huber.c \
	src/graph/conv2d.c src/graph/pooling.c \
	src/graph/shape.c src/graph/dropout.c src/graph/softmax.c \
	src/graph/add.c src/graph/concat.c \
	src/graph/layernorm.c src/graph/batchnorm.c src/graph/embedding.c \
	src/graph/pos_embedding.c src/graph/attention.c \
	src/graph/flash.c src/graph/flash.h \
	src/graph/recompute.c src/graph/recompute.h \
	src/graph/init.c src/graph/init.h src/graph/tied.c \
	src/graph/products.c src/graph/rows.c

# The finite-difference rig every layer suite links, and the registry test
# that holds the types it checked against DT_LAYER_TYPES; it reads what the
# three suites recorded, so it runs after them.
GRADCHECK_SOURCES = tests/unit/gradcheck.c tests/unit/gradcheck.h
GRADCHECK_SUITES = tests/unit/test_graph tests/unit/test_graph_layers \
	tests/unit/test_graph_nlp
CLEANFILES += $(GRADCHECK_SUITES:=.gradcheck)

UNIT_TESTS += $(GRADCHECK_SUITES) tests/unit/test_layer_registry \
	tests/unit/test_graph_threads tests/unit/test_graph_tp \
	tests/unit/test_graph_kern tests/unit/test_graph_init
UNIT_TESTS += tests/unit/test_graph_tp_block tests/unit/test_graph_rows
tests_unit_test_graph_rows_SOURCES = tests/unit/test_graph_rows.c \
	$(GRADCHECK_SOURCES)
tests_unit_test_graph_SOURCES = tests/unit/test_graph.c $(GRADCHECK_SOURCES)
tests_unit_test_graph_nlp_SOURCES = tests/unit/test_graph_nlp.c \
	$(GRADCHECK_SOURCES)
tests_unit_test_graph_layers_SOURCES = tests/unit/test_graph_layers.c \
	$(GRADCHECK_SOURCES)
tests_unit_test_layer_registry_SOURCES = tests/unit/test_layer_registry.c \
	$(GRADCHECK_SOURCES)
tests_unit_test_graph_init_SOURCES = tests/unit/test_graph_init.c
tests_unit_test_graph_threads_SOURCES = tests/unit/test_graph_threads.c \
	$(GRADCHECK_SOURCES)
# (through a variable: automake takes a plain NAME.log target for an
# override of its rule)
GRADCHECK_REGISTRY_LOG = tests/unit/test_layer_registry.log
$(GRADCHECK_REGISTRY_LOG): $(GRADCHECK_SUITES:=.log)
