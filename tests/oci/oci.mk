# The chart as an OCI artifact: `make package` (helm package, version from chart/Chart.yaml)
# and a local CNCF distribution registry built from its Go module (pinned) for the push
# test and the kind scenario that installs from oci://. Included by the top Makefile.
REGISTRY_VERSION := v3.1.2
REGISTRY         := $(BIN)/registry
CHART_VERSION     = $(shell sed -n 's/^version: *//p' chart/Chart.yaml)
export JOBHANDLERS_REGISTRY := $(REGISTRY)

.PHONY: package registry-tool
tools: $(REGISTRY)

$(BIN)/.registry-$(REGISTRY_VERSION):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) CGO_ENABLED=0 go install github.com/distribution/distribution/v3/cmd/registry@$(REGISTRY_VERSION)
	@touch $@
$(REGISTRY): $(BIN)/.registry-$(REGISTRY_VERSION)
registry-tool: $(REGISTRY) ## build the pinned CNCF distribution registry into bin/

package: tools ## helm package the chart into dist/jobhandlers-<Chart.yaml version>.tgz
	@mkdir -p dist
	$(HELM) package chart -d dist
	@echo "dist/jobhandlers-$(CHART_VERSION).tgz"
