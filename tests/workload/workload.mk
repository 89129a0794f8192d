# Reference workload (tests/workload): images, tests, benchmark. Included by the top Makefile.
WORKLOAD_DIR := $(ROOT)/tests/workload

.PHONY: image workload-image postgres-image test-workload test-image bench-workload workload-dev

image: venv docker-up ## build jobhandlers/workload:1, :2, :3 and jobhandlers/postgres:15 (no registry needed)
	PY=$(PY) $(WORKLOAD_DIR)/build-images.sh all

workload-image: venv docker-up ## build only jobhandlers/workload:1, :2 and :3
	PY=$(PY) $(WORKLOAD_DIR)/build-images.sh workload

postgres-image: docker-up ## build only jobhandlers/postgres:15
	PY=$(PY) $(WORKLOAD_DIR)/build-images.sh postgres

test-workload: venv deps ## workload tests against a real PostgreSQL server
	$(PY) -m pytest tests/workload -q

bench-workload: venv deps ## workload lifecycle benchmark (drain vs naive handlers)
	$(PY) bench/workload_bench.py

workload-dev: venv ## install the workload package into .venv (editable) for interactive use
	$(PY) -m pip install -q -e tests/workload

test-image: ## smoke-test the built images (read-only, caps dropped) against jobhandlers/postgres:15
	$(WORKLOAD_DIR)/image-smoke.sh
