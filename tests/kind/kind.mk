# kind cluster targets (included by the top Makefile). Offline by default when no
# registry is reachable: the node image is built from Debian packages and Go
# modules (tests/kind/node, tests/kind/build), cached under $(JH_CACHE).
KIND_CLUSTER_NAME ?= jobhandlers
# the Kubernetes minor of the cluster: its wrapper module is build/k8s/v$(KIND_K8S)/, its node
# image jobhandlers/kind-node:v$(KIND_K8S); `make kind-up KIND_K8S=1.29` for an older one
KIND_K8S          ?= 1.37
# KIND_CONTAINERD=2 (the default): the node runs containerd 2.4, built from its Go module, over
# Debian's 1.6: Kubernetes 1.35 is the last release that supports containerd 1.x, and 1.x ignores
# lifecycle.stopSignal (scenario 13d). KIND_CONTAINERD=1 keeps Debian's 1.6, in a node image of
# its own (…-containerd1); the version suite's 1.29 cluster runs it.
KIND_CONTAINERD   ?= 2
KIND_NODE_IMAGE   ?= jobhandlers/kind-node:v$(KIND_K8S)$(if $(filter 1,$(KIND_CONTAINERD)),-containerd1)
KIND_WORKERS      ?= 2
# KIND_POOL_WORKERS=N: N more workers, labelled and tainted jobhandlers.test/pool=nodes, which
# only a pass run with KIND_NODE_POOL=nodes uses (tests/kind/scenarios/jhkind/pool.py): .ci/run
# runs the node scenarios there, beside the main pass on the same cluster. 0 (the default): none.
KIND_POOL_WORKERS ?= 0
KIND_KUBECONFIG   ?= $(ROOT)/tests/kind/.work/kubeconfig
JH_CACHE          ?= /var/cache/jobhandlers
# KIND_REGISTRY=1 (the default): the nodes pull the docker.io images (jobhandlers/...) from the
# local registry (tests/kind/scripts/registry.sh: one container, jh-registry, on the kind
# network, storage in $(JH_CACHE)/registry), which `make kind-load` pushes them to; 0: `kind load`
# copies every image into every node, as before.
KIND_REGISTRY     ?= 1
export KIND_K8S KIND_CONTAINERD KIND_CLUSTER_NAME KIND_NODE_IMAGE KIND_WORKERS KIND_POOL_WORKERS KIND_KUBECONFIG JH_CACHE KIND_REGISTRY
KIND_ENV := KIND=$(KIND)

.PHONY: docker-up kind-node-image kind-up kind-down kind-load kind-registry-down kind-postgres test-kind-versions test-kind-smoke test-kind netpol-image metrics-server-image

docker-up: ## start dockerd (installs docker.io when missing; runc wrapper for this kernel)
	tests/images/docker-up.sh

kind-node-image: docker-up ## build the offline kind node image (cached by its inputs)
	tests/kind/node/build-node.sh $(KIND_NODE_IMAGE) $(KIND_K8S)

# the local registry's binary (tests/oci/oci.mk): kind-up starts the registry; in .ci/run it may
# run before `make tools` has built it
kind-up: $(KIND) docker-up $(if $(filter 1,$(KIND_REGISTRY)),$(BIN)/registry) ## create the kind cluster, wait for Ready; kubeconfig in $(KIND_KUBECONFIG)
	$(KIND_ENV) tests/kind/scripts/kind-up.sh

kind-down: $(KIND) ## delete the kind cluster, fail if any of its containers remain (the local registry stays: other clusters may use it)
	$(KIND_ENV) tests/kind/scripts/kind-down.sh

kind-registry-down: ## remove the local registry's container (its storage in $(JH_CACHE)/registry stays)
	tests/kind/scripts/registry.sh down

kind-load: image kind-up venv ## push the workload, PostgreSQL and app images to the local registry the nodes pull from (KIND_REGISTRY=0: kind load them into the nodes); the scenarios do it too
	cd tests/kind/scenarios && $(KIND_ENV) $(abspath $(PY)) -c 'from jhkind import setup; from jhkind.progress import Progress; print("loaded:", " ".join(setup.load_images(Progress("kind-load"))))'

# The scenarios' external PostgreSQL (namespace jh-postgres; the scenarios apply it too, and find
# it running): .ci/run starts it beside make test, so the first scenarios do not wait for initdb.
kind-postgres: venv ## start the scenarios' external PostgreSQL on the cluster (after kind-load) and wait until it answers
	cd tests/kind/scenarios && KUBECONFIG=$(KIND_KUBECONFIG) $(abspath $(PY)) -c 'from jhkind import postgres, setup; from jhkind.cluster import Kube; postgres.install(Kube(setup.kubeconfig()), timeout=600); print("PostgreSQL answers")'

test-kind-smoke: kind-up venv ## smoke tests on the live kind cluster
	KUBECONFIG=$(KIND_KUBECONFIG) $(KIND_ENV) $(PY) -m pytest -v --durations 10 tests/kind/test_smoke.py

# Scenarios run KIND_JOBS at a time (they mostly wait on migrations and jobs); the node
# scenarios (marker `nodes`: drain, node loss, and 19's NetworkPolicy engine in every worker's
# packet path) take workers away, so they run alone, after the others; with them, one at a time,
# the scenarios marked `sequential` (that pass, on a cluster of its own in .ci/run, ends long
# before the main one: stop 36's lanes table).
KIND_JOBS ?= 3
# A scenario that fails is run once more (pytest-rerunfailures; "R" in the log and a RERUN line):
# they share two cores and a cluster, and a probe or an install can miss its window under load.
KIND_RERUNS ?= 1
# The smoke tests run in the first pass with the scenarios (their slowest, a throwaway second
# cluster for kind-down, would otherwise hold up every scenario for ~2 min).
# KIND_PART=main runs the first pass, KIND_PART=nodes the node scenarios; empty (the default): both.
# The scenarios marked `heavy` (16b, 22e: an install of their own takes most of a lane) are in the
# main pass, after the lifecycle basics (HEAVY_AFTER in tests/kind/conftest.py), each in an xdist
# group of its own: they start as lanes free up (stops 43-44: a pass of their own after the main
# one, which .ci/run skipped when the main pass ended late). -raR prints why a rerun scenario
# failed the first time.
KIND_PART ?=
# KIND_KEEP_RESULTS=1: append to bench-results/kind-scenarios.json instead of starting it afresh
# (.ci/run runs both passes at once, the node pass on the cluster's pool, and removes it before)
KIND_KEEP_RESULTS ?=
# COLUMNS: pytest cuts each short-summary line (FAILED/RERUN ... - the assertion) to the terminal's
# width, 80 in CI's log; 400 keeps the reason of a failed scenario in the lines .ci/run prints.
# KIND_PYTEST_ARGS: more pytest arguments (.ci/run deselects the smoke test that boots a
# throwaway cluster for kind-down: its own cleanup checks the cluster's kind-down instead).
KIND_PYTEST_ARGS ?=
KIND_PYTEST = COLUMNS=400 KUBECONFIG=$(KIND_KUBECONFIG) $(KIND_ENV) $(PY) -m pytest -v -raR --reruns $(KIND_RERUNS) --reruns-delay 5 --durations 0 $(KIND_PYTEST_ARGS)
test-kind: image kind-up venv ## every kind test (smoke and scenarios KIND_JOBS at a time, the heavy ones after 1-8, then the node scenarios alone)
	@case "$(KIND_PART)" in ""|main|nodes) ;; *) echo "make test-kind: KIND_PART is main, nodes or empty (both), not '$(KIND_PART)'"; exit 2;; esac
ifneq ($(KIND_PART),nodes)
	@$(if $(KIND_KEEP_RESULTS),true,rm -f bench-results/kind-scenarios.json)
	$(KIND_PYTEST) -n $(KIND_JOBS) --dist loadgroup -m 'not nodes and not sequential' tests/kind/test_smoke.py tests/kind/scenarios
endif
ifneq ($(KIND_PART),main)
	$(KIND_PYTEST) -m 'nodes or sequential' tests/kind/scenarios
endif

# The NetworkPolicy engine of scenario 19 (kube-router's firewall alone, built from its Go module:
# a cold build takes ~1.5 min on this machine, where its whole command took 12-25; warm,
# seconds). Part of `make image`, so the scenario's fixture finds it built.
netpol-image: docker-up ## jobhandlers/kind-netpol:<hash>: the NetworkPolicy engine of kind scenario 19
	@t0=$$SECONDS; tests/kind/scripts/netpol-image.sh >/dev/null; echo "netpol-image: $$((SECONDS - t0)) s"
image: netpol-image

# metrics-server v0.8.0 from its Go module (tests/kind/build/metrics-server), the HPA's real metrics
# source in scenario 26e (~1,300 packages: a few minutes cold, seconds warm). Part of `make image`.
metrics-server-image: docker-up ## jobhandlers/metrics-server:<hash>: the metrics source of kind scenario 26e
	@t0=$$SECONDS; tests/kind/scripts/metrics-server-image.sh >/dev/null; echo "metrics-server-image: $$((SECONDS - t0)) s"
image: metrics-server-image

# The version-gate suite on a second, older live cluster (issue 19): its own node image (built
# from the Kubernetes modules of build/k8s/v$(KIND_VERSIONS_K8S), ~26 min cold, cached after),
# its own cluster, the scenarios marked `versions` one at a time (two of them drain nodes), then
# the cluster is deleted. Not part of .ci/run (the second node image does not fit its budget).
KIND_VERSIONS_K8S ?= 1.29
# KIND_REGISTRY=0: its nodes get the images by `kind load`. Their containerd 1.6 takes the same
# config_path key and hosts.toml, but that was not tried on this cluster yet.
VERSIONS_ENV = KIND_K8S=$(KIND_VERSIONS_K8S) KIND_CONTAINERD=1 KIND_REGISTRY=0 KIND_CLUSTER_NAME=jobhandlers-v$(subst .,-,$(KIND_VERSIONS_K8S)) \
  KIND_NODE_IMAGE=jobhandlers/kind-node:v$(KIND_VERSIONS_K8S) \
  KIND_KUBECONFIG=$(ROOT)/tests/kind/.work/kubeconfig-v$(KIND_VERSIONS_K8S)
test-kind-versions: image venv $(KIND) ## the version-gate suite on an older live cluster (KIND_VERSIONS_K8S, default 1.29): node image, cluster, scenarios marked versions, kind-down
	$(MAKE) --no-print-directory kind-node-image $(VERSIONS_ENV)
	$(MAKE) --no-print-directory kind-up kind-load $(VERSIONS_ENV)
	rc=0; $(VERSIONS_ENV) KUBECONFIG=$(ROOT)/tests/kind/.work/kubeconfig-v$(KIND_VERSIONS_K8S) $(KIND_ENV) \
	  $(PY) -m pytest -v --reruns $(KIND_RERUNS) --reruns-delay 5 --durations 0 -m versions tests/kind/scenarios || rc=$$?; \
	  $(MAKE) --no-print-directory kind-down $(VERSIONS_ENV); exit $$rc
