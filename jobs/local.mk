dist_noinst_DATA += jobs/fashion-mnist-mlp.yaml

DEMO_RANKS = 2
demo: dtrain
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	./dtrain run -n $(DEMO_RANKS) --run-dir runs/demo-$$(date +%Y%m%d-%H%M%S) \
		$(srcdir)/jobs/fashion-mnist-mlp.yaml
.PHONY: demo
