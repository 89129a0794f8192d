# jobhandlers — see README.md. Every target that needs helm uses $(HELM).
SHELL := /bin/bash
.DEFAULT_GOAL := help

ROOT        := $(abspath .)
BIN         := $(ROOT)/bin
HELM        := $(BIN)/helm
HELM3       := $(BIN)/helm3
KIND        := $(BIN)/kind
HELM_DOCS   := $(BIN)/helm-docs
KUBECONFORM := $(BIN)/kubeconform
VENV        := $(ROOT)/.venv
PY          := $(VENV)/bin/python
JH          := $(VENV)/bin/jobhandlers
export PATH := $(BIN):$(VENV)/bin:$(PATH)
export JOBHANDLERS_HELM := $(HELM)
export JOBHANDLERS_HELM3 := $(HELM3)

HELM_VERSION  := v4.3.2
HELM3_VERSION := v3.21.4
KIND_VERSION  := v0.33.0
# make test runs pytest twice (tests sharing an expensive fixture share a worker): the tests that
# compute (unit, render, generated) on PYTEST_JOBS workers, one per core, then the tests that
# mostly wait on real processes (apps, workload, packaging: shutdown timeouts, heartbeats, pip)
# on PYTEST_WAIT_JOBS. Stop 27: the second pass took 169 s on 4 workers, ~550 s on 2. Not the
# other way round: stop 28 ran the waiting pass first, beside .ci/run's kind load, and 4 of its
# 92 tests (lock races, signal timings, 180 s timeouts) failed; the computing pass takes it.
# TEST_PART=cpu runs the freshness checks and the computing pass, TEST_PART=wait the waiting
# pass (.ci/run runs the first beside the cluster side, the second beside the node scenarios);
# empty (the default): all of it.
TEST_PART ?=
PYTEST_JOBS ?= 2
PYTEST_WAIT_JOBS ?= 4
# The waiting pass times signals, locks and subprocesses of real apps; beside the kind scenarios
# (.ci/run) a loaded machine misses a window now and then (stop 34's rehearsal: a 2 s Celery
# window and a 120 s django-admin at load 40), so a failed test runs once more, as a kind
# scenario does; -raR prints each rerun's first reason. WAIT_RERUNS= (empty) runs each once.
WAIT_RERUNS ?= --reruns 1 --reruns-delay 5 -raR
CPU_TESTS  := tests/unit tests/render tests/generated
# tests/apiserver (a real kube-apiserver + etcd, the oracle of what a cluster accepts) waits too:
# the waiting pass builds its binaries first (`make apiserver-bin`: the node image's own builds and
# caches, a no-op when `make kind-node-image` built them).
WAIT_TESTS := tests/apps tests/workload tests/packaging tests/apiserver
HELM_DOCS_VERSION := v1.14.2
KUBECONFORM_VERSION := v0.8.0
export JOBHANDLERS_KUBECONFORM := $(KUBECONFORM)

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | sort

# ---- tools: pinned helm 4, helm 3 and kind, built from their Go modules ----
.PHONY: tools kind-bin
tools: $(KIND) $(HELM) $(HELM3) $(HELM_DOCS) $(KUBECONFORM) ## build pinned helm, helm3, kind, helm-docs and kubeconform into bin/
kind-bin: $(KIND) ## build only the pinned kind (.ci/run: the cluster side needs it long before the other tools)

$(BIN)/.helm-$(HELM_VERSION):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) CGO_ENABLED=0 go install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)
	@touch $@
$(HELM): $(BIN)/.helm-$(HELM_VERSION)

$(BIN)/.helm3-$(HELM3_VERSION):
	@mkdir -p $(BIN)/.helm3
	GOBIN=$(BIN)/.helm3 CGO_ENABLED=0 go install helm.sh/helm/v3/cmd/helm@$(HELM3_VERSION)
	mv $(BIN)/.helm3/helm $(HELM3)
	@touch $@
$(HELM3): $(BIN)/.helm3-$(HELM3_VERSION)

$(BIN)/.kind-$(KIND_VERSION):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) CGO_ENABLED=0 go install sigs.k8s.io/kind@$(KIND_VERSION)
	@touch $@
$(KIND): $(BIN)/.kind-$(KIND_VERSION)

$(BIN)/.helm-docs-$(HELM_DOCS_VERSION):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) CGO_ENABLED=0 go install github.com/norwoodj/helm-docs/cmd/helm-docs@$(HELM_DOCS_VERSION)
	@touch $@
$(HELM_DOCS): $(BIN)/.helm-docs-$(HELM_DOCS_VERSION)

# kubeconform validates rendered/ in make test (tests/render/test_peer_suites.py)
$(BIN)/.kubeconform-$(KUBECONFORM_VERSION):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) CGO_ENABLED=0 go install github.com/yannh/kubeconform/cmd/kubeconform@$(KUBECONFORM_VERSION)
	@touch $@
$(KUBECONFORM): $(BIN)/.kubeconform-$(KUBECONFORM_VERSION)

# ---- Python environment ----
# Every venv is filled by uv (pinned, in a venv of its own, installed by pip): it installs in
# parallel from one cache of unpacked wheels. Stop 28, warm: checkov's venv 88 s with pip, 5 s
# with uv. `uv pip install` takes pip's arguments; the system's CA store, as pip's.
UV_VERSION := 0.13.9
UV_VENV    := $(ROOT)/.venv-uv
UV         := $(UV_VENV)/bin/uv
UV_STAMP   := $(UV_VENV)/.uv-$(UV_VERSION)
export UV_NATIVE_TLS := 1
# byte-compile at install, as pip does (uv does not by default): with PYTHONDONTWRITEBYTECODE set,
# as on our CI machines, nothing caches .pyc later and every interpreter start compiles its imports
# (stop 28's rehearsal without it: the computing pass 759 s instead of 539 s, the waiting pass 383 s
# instead of 201 s)
export UV_COMPILE_BYTECODE := 1
export UV_PYTHON_DOWNLOADS := never
# `$(UV_PIP) <venv python> <pip install arguments>`; `$(UV_MKVENV) <dir>`: a venv without pip
# (python3 -m venv costs 3-11 s each for ensurepip; the test venv keeps pip, the image scripts use it)
UV_PIP      = $(UV) pip install -q --python
UV_MKVENV   = $(UV) venv -q --python python3

$(UV_STAMP):
	test -x $(UV_VENV)/bin/python || python3 -m venv $(UV_VENV)
	$(UV_VENV)/bin/python -m pip install -q uv==$(UV_VERSION)
	@touch $@

.PHONY: venv
venv: $(VENV)/.installed ## create .venv with the jobhandlers tool and test dependencies

$(VENV)/.installed: pyproject.toml $(UV_STAMP)
	test -x $(PY) || python3 -m venv $(VENV)
	$(UV_PIP) $(PY) -e '.[test,kind,bench]'
	@touch $@

# checkov (a peer policy suite, tests/render/test_peer_suites.py) in a venv of its own: its pins
# conflict with the test venv's (tests/render/requirements-checkov.txt says which).
CHECKOV_VENV := $(ROOT)/.venv-checkov
export JOBHANDLERS_CHECKOV := $(CHECKOV_VENV)/bin/checkov
.PHONY: checkov-venv
checkov-venv: $(CHECKOV_VENV)/.installed ## create .venv-checkov with the pinned checkov

$(CHECKOV_VENV)/.installed: tests/render/requirements-checkov.txt $(UV_STAMP)
	test -x $(CHECKOV_VENV)/bin/python || $(UV_MKVENV) $(CHECKOV_VENV)
	$(UV_PIP) $(CHECKOV_VENV)/bin/python -r tests/render/requirements-checkov.txt
	@touch $@

# PostgreSQL server binaries for the workload tests, redis-server for the Celery app's Redis
# transport tests, gpg for the signed chart's test key (tests/packaging/test_signing.py) (Debian
# packages; the package's service is not started here).
.PHONY: deps
deps: ## install the system packages the tests need (PostgreSQL server, redis-server, gnupg)
	@command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql; }
	@command -v redis-server >/dev/null || test -x /usr/bin/redis-server || \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server; }
	@command -v gpg >/dev/null || \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q gnupg; }

# .ci/run's measurement of the scenario phase by program (.ci/acct.py): the kernel's process
# accounting, turned on and read with the acct package's accton and dump-acct
.PHONY: ci-deps
ci-deps: ## install what .ci/run measures with (acct: process accounting)
	@command -v dump-acct >/dev/null || \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q acct; }

# ---- the two commands of the README ----
.PHONY: render
render: tools venv ## render every values example x kube version into rendered/ (and the check's chart cache, the schema's lists and docs/rules.md from chart/lifecycle.yaml)
	$(PY) -m generator.lifecycle
	$(PY) -m generator.refdocs
	$(PY) -m generator.charts.precompute
	$(JH) render

.PHONY: check
check: tools venv ## policy-check every values example
	$(JH) check values-examples/*.yaml

.PHONY: changes
changes: venv ## write chart/Chart.yaml's artifacthub.io/changes from CHANGELOG.md's section of its version
	$(PY) -m generator.changelog

.PHONY: gen-tests
gen-tests: venv ## regenerate tests/generated/ from values-examples/
	$(JH) gen-tests

# chart/README.md: helm-docs renders chart/README.md.gotmpl with the values table from
# the values.yaml `# --` comments (values.schema.json descriptions for keys without one).
.PHONY: chart-docs
chart-docs: $(HELM_DOCS) ## regenerate chart/README.md (values table) with helm-docs
	$(HELM_DOCS) --chart-search-root chart --log-level warning

.PHONY: chart-docs-check
chart-docs-check: $(HELM_DOCS) ## fail when chart/README.md is stale
	@tmp=$$(mktemp); trap 'rm -f $$tmp' EXIT; \
	$(HELM_DOCS) --chart-search-root chart --dry-run --log-level warning > $$tmp && \
	if diff -u chart/README.md $$tmp; then echo "chart-docs --check: chart/README.md is up to date"; \
	else echo "chart-docs --check: chart/README.md is stale; run \`make chart-docs\`"; exit 1; fi

.PHONY: lint
lint: tools ## helm lint --strict every values example
	@for f in values-examples/*.yaml; do echo "lint $$f"; $(HELM) lint --strict chart -f $$f >/dev/null || { $(HELM) lint --strict chart -f $$f; exit 1; }; done

.PHONY: test
test: tools venv checkov-venv deps ## unit, render, generated and workload tests, plus freshness checks
	@case "$(TEST_PART)" in ""|cpu|wait) ;; *) echo "make test: TEST_PART is cpu, wait or empty (both), not '$(TEST_PART)'"; exit 2;; esac
ifneq ($(TEST_PART),wait)
	$(JH) render --check
	$(PY) -m generator.lifecycle --check
	$(PY) -m generator.refdocs --check
	$(PY) -m generator.charts.precompute --check
	$(PY) -m generator.changelog --check
	$(MAKE) --no-print-directory chart-docs-check
	$(JH) gen-tests --check
	$(JH) check values-examples/*.yaml
	@test "$$(ls -d tests/*/ | grep -v -e tests/kind/ -e tests/images/ -e tests/oci/ | sort | tr -d '\n')" = \
	  "$$(printf '%s/' $(sort $(CPU_TESTS) $(WAIT_TESTS)))" || \
	  { echo "make test: a test folder is in neither CPU_TESTS nor WAIT_TESTS (Makefile)"; exit 2; }
	$(PY) -m pytest -n $(PYTEST_JOBS) --dist loadgroup --durations 15 $(CPU_TESTS)
endif
ifneq ($(TEST_PART),cpu)
	$(MAKE) --no-print-directory apiserver-bin
	$(PY) -m pytest -n $(PYTEST_WAIT_JOBS) --dist loadgroup --durations 15 $(WAIT_RERUNS) $(WAIT_TESTS)
endif

# tests/apiserver's kube-apiserver, kubectl (Kubernetes 1.37) and etcd: the kind node image's own
# build scripts and caches (/var/cache/jobhandlers), so each is built once for both; a no-op
# (an inputs-hash check, < 1 s) when `make kind-node-image` or an earlier run built them. Cold
# (empty Go caches, stop 30's build phases): Kubernetes 741 s (its seven binaries are one
# `go build`), etcd/CoreDNS/pause/crictl 234 s, ≈ 16 min on 2 cores.
# The oldest minor the version suite runs (1.29) gets its kube-apiserver alone (the `go build` of
# that one command from its wrapper module, tests/kind/build/k8s/v1.29).
APISERVER_K8S := 1.37
APISERVER_K8S_OLDEST := 1.29
JH_CACHE ?= /var/cache/jobhandlers
.PHONY: apiserver-bin
apiserver-bin: ## build tests/apiserver's kube-apiserver (1.37 and 1.29), kubectl and etcd into /var/cache/jobhandlers (only what is missing or stale)
	tests/kind/build/k8s/build.sh $(APISERVER_K8S) $(JH_CACHE)/k8s-bin-v$(APISERVER_K8S)
	tests/kind/build/k8s/build.sh $(APISERVER_K8S_OLDEST) $(JH_CACHE)/k8s-apiserver-v$(APISERVER_K8S_OLDEST) kube-apiserver
	tests/kind/build/build-extras.sh $(JH_CACHE)/extras-bin

.PHONY: fuzz
fuzz: venv apiserver-bin ## property-based fuzzing of check/grace/gen-tests/render, check-vs-helm and check-vs-API-server parity, 10x the examples of make test
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -q -p no:cacheprovider tests/unit/test_fuzz_check.py \
	  tests/unit/test_fuzz_grace.py tests/unit/test_fuzz_render.py tests/unit/test_fuzz_regressions.py \
	  tests/unit/test_fuzz_parity.py tests/unit/test_fastcheck.py tests/apiserver/test_apiserver_parity.py

.PHONY: bench
bench: tools venv deps ## benchmarks: check vs helm lint, render vs serial helm, workload lifecycle
	$(PY) bench/run.py

.PHONY: bench-kind
bench-kind: tools venv image kind-up ## gated vs naive chart on the kind cluster: table, JSON, PNG in bench-results/
	KUBECONFIG=$(KIND_KUBECONFIG) $(PY) bench/kind_bench.py

.PHONY: bench-probes
bench-probes: tools venv kind-load ## what the heartbeat probes cost a node: CPU-s per pod-hour by readiness period, in bench-results/probe-cost.json
	KUBECONFIG=$(KIND_KUBECONFIG) $(PY) bench/probe_cost.py $(BENCH_PROBES_ARGS)

-include tests/workload/workload.mk
-include tests/kind/kind.mk
include tests/apps/apps.mk
-include tests/oci/oci.mk
