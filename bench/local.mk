EXTRA_PROGRAMS = bench/bench_mlp bench/bench_layers
bench_bench_mlp_SOURCES = bench/bench_mlp.c
bench_bench_mlp_LDADD = libdtrain.la $(DT_LIBS)
bench_bench_layers_SOURCES = bench/bench_layers.c
bench_bench_layers_LDADD = libdtrain.la $(DT_LIBS)
CLEANFILES += bench/bench_mlp bench/bench_layers

# make bench: single-rank throughput against the sgemm peak on all cores,
# then the data-parallel run at 2 ranks (1 thread each) for sync overhead,
# then every 2-rank layout (data, pipeline, tensor) of the MLP and the
# char-GPT job; first the per-layer time of a char-GPT micro-batch at one
# thread (bench/README).
bench: bench/bench_mlp bench/bench_layers dtrain
	OPENBLAS_NUM_THREADS=1 ./bench/bench_layers $(srcdir)/jobs/char-gpt.yaml 50
	OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS:-$$(nproc)} \
	  ./bench/bench_mlp $(srcdir)/jobs/fashion-mnist-mlp.yaml 300
	OPENBLAS_NUM_THREADS=1 ./bench/bench_mlp $(srcdir)/jobs/fashion-mnist-mlp.yaml 300
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	  $(srcdir)/bench/sync-overhead.sh ./dtrain $(srcdir)/jobs/fashion-mnist-mlp.yaml
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	  $(srcdir)/bench/layouts.sh ./dtrain $(srcdir)/jobs/fashion-mnist-mlp.yaml 96 400
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	  $(srcdir)/bench/layouts.sh ./dtrain $(srcdir)/jobs/char-gpt.yaml 32 30
.PHONY: bench
EXTRA_DIST += bench/sync-overhead.sh bench/layouts.sh bench/compare-losses.sh \
	bench/README
