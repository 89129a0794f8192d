# The chart as an OCI artifact: `make package` (helm package, version from chart/Chart.yaml;
# signed, with its provenance file, when SIGN_KEY and KEYRING are given) and a local CNCF distribution registry built from its Go module (pinned) for the push
# test and the kind scenario that installs from oci://. Included by the top Makefile.
REGISTRY_VERSION := v3.1.2
REGISTRY         := $(BIN)/registry
CHART_VERSION     = $(shell sed -n 's/^version: *//p' chart/Chart.yaml)
export JOBHANDLERS_REGISTRY := $(REGISTRY)

.PHONY: package registry-tool test-key
tools: $(REGISTRY)

$(BIN)/.registry-$(REGISTRY_VERSION):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) CGO_ENABLED=0 go install github.com/distribution/distribution/v3/cmd/registry@$(REGISTRY_VERSION)
	@touch $@
$(REGISTRY): $(BIN)/.registry-$(REGISTRY_VERSION)
registry-tool: $(REGISTRY) ## build the pinned CNCF distribution registry into bin/

# SIGN_KEY: the signing key's name (or part of it: helm matches it against the key's user id);
# KEYRING: a secret keyring in the legacy format (`gpg --export-secret-keys > FILE`; helm reads
# no gpg-agent and no passphrase-less prompt). With both, helm writes
# $(DIST)/jobhandlers-<version>.tgz.prov beside the chart, and `helm push` uploads it with it.
DIST     ?= dist
SIGN_KEY ?=
KEYRING  ?=
package: tools ## helm package the chart into dist/jobhandlers-<Chart.yaml version>.tgz (SIGN_KEY=NAME KEYRING=FILE: signed, with its .prov)
	@test -z "$(SIGN_KEY)$(KEYRING)" || test -n "$(SIGN_KEY)" -a -f "$(KEYRING)" || \
	  { echo "make package: SIGN_KEY (a key name) and KEYRING (a secret keyring file) go together"; exit 2; }
	@mkdir -p $(DIST)
	$(HELM) package chart -d $(DIST) $(if $(SIGN_KEY),--sign --key '$(SIGN_KEY)' --keyring '$(KEYRING)')
	@echo "$(DIST)/jobhandlers-$(CHART_VERSION).tgz"
	@$(if $(SIGN_KEY),echo "$(DIST)/jobhandlers-$(CHART_VERSION).tgz.prov",:)

# A throwaway key to sign with (never for a real release): KEY_DIR/secring.gpg for KEYRING,
# KEY_DIR/pubring.gpg for `helm verify --keyring`; the key's name is "jobhandlers test key".
KEY_DIR ?= dist/test-key
test-key: ## make a throwaway signing key in dist/test-key (make package SIGN_KEY='jobhandlers test key' KEYRING=dist/test-key/secring.gpg)
	tests/oci/test-key.sh $(KEY_DIR)
