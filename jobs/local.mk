# SPDX-License-Identifier: MIT
# The example jobs, installed with the README so that dtrain(1)'s
# examples run after `make install` (docdir/examples).
examplesdir = $(docdir)/examples
dist_examples_DATA = jobs/fashion-mnist-mlp.yaml
dist_examples_DATA += jobs/fashion-mnist-mlp-http.yaml
dist_examples_DATA += jobs/fashion-mnist-cnn.yaml
dist_examples_DATA += jobs/char-gpt.yaml
dist_examples_DATA += jobs/gpt2-124m.yaml
dist_examples_DATA += jobs/gpt2-350m.yaml
dist_examples_DATA += jobs/tabular-csv.yaml
dist_examples_DATA += jobs/regression-npy.yaml
dist_examples_DATA += jobs/fortunes-bpe.yaml
# their data, small, and the script that writes it (numpy); the BPE
# tokenizer of jobs/fortunes-bpe.yaml is `dtrain tokenize --vocab-size 512
# -o jobs/data/fortunes-bpe.json /usr/share/games/fortunes/cookie`
examplesdatadir = $(examplesdir)/data
dist_examplesdata_DATA = jobs/data/make-data.py \
	jobs/data/tabular-train.csv jobs/data/tabular-eval.csv \
	jobs/data/regression-train-x.npy jobs/data/regression-train-y.npy \
	jobs/data/regression-eval-x.npy jobs/data/regression-eval-y.npy \
	jobs/data/fortunes-bpe.json

DEMO_RANKS = 2
demo: dtrain
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	./dtrain run -n $(DEMO_RANKS) --run-dir runs/demo-$$(date +%Y%m%d-%H%M%S) \
		$(srcdir)/jobs/fashion-mnist-mlp.yaml
.PHONY: demo

# The demo with its data over HTTP: tests/http_server.py serves the
# Fashion-MNIST files on 127.0.0.1:DEMO_HTTP_PORT (the port written in the
# job's URLs) for at most half an hour, and stops when the target ends. The
# first run downloads the files into an emptied DEMO_HTTP_CACHE; the second
# finds them there and sends the server no request.
DEMO_HTTP_PORT = 8765
DEMO_HTTP_ROOT = /usr/share/datasets/fashion-mnist
DEMO_HTTP_CACHE = $(abs_top_builddir)/demo-http-cache
demo-http: dtrain
	@set -e; \
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; \
	export DTRAIN_CACHE='$(DEMO_HTTP_CACHE)'; \
	job='$(srcdir)/jobs/fashion-mnist-mlp-http.yaml'; \
	tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/dtrain-demo-http.XXXXXX"); \
	python3 '$(srcdir)/tests/http_server.py' --root '$(DEMO_HTTP_ROOT)' \
		--port $(DEMO_HTTP_PORT) --max-seconds 1800 \
		--log "$$tmp/requests" >"$$tmp/port" 2>"$$tmp/err" & \
	server=$$!; \
	trap 'kill '$$server' 2>/dev/null || :; rm -rf "'$$tmp'"' EXIT; \
	i=0; \
	while [ ! -s "$$tmp/port" ]; do \
		if ! kill -0 $$server 2>/dev/null || [ $$i -ge 100 ]; then \
			cat "$$tmp/err" >&2; exit 1; \
		fi; \
		i=$$((i + 1)); sleep 0.1; \
	done; \
	touch "$$tmp/requests"; \
	rm -rf "$$DTRAIN_CACHE"; \
	echo "demo-http: serving $(DEMO_HTTP_ROOT) on 127.0.0.1:$(DEMO_HTTP_PORT), cache $$DTRAIN_CACHE"; \
	stamp=$$(date +%Y%m%d-%H%M%S); \
	echo "demo-http: first run, downloading"; \
	./dtrain run -n $(DEMO_RANKS) --run-dir runs/demo-http-$$stamp "$$job"; \
	n=$$(wc -l <"$$tmp/requests"); \
	echo "demo-http: the first run sent $$n requests"; \
	./dtrain plan --dry-run "$$job" | sed -n '/^data sources:/,$$p'; \
	echo "demo-http: second run, from the cache"; \
	./dtrain run -n $(DEMO_RANKS) --run-dir runs/demo-http-$$stamp-cached "$$job"; \
	echo "demo-http: the second run sent $$(($$(wc -l <"$$tmp/requests") - n)) requests"
.PHONY: demo-http
