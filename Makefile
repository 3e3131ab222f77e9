# The two commands a new user needs: `make dev` runs the whole system on this
# machine; `make test` runs every test. Everything they need is installed
# here, at pinned versions, into .bin/ (nothing global).

SHELL      := /bin/bash
GO         ?= go
ROOT       := $(CURDIR)
BIN        := $(ROOT)/.bin
SERVICES   := taxonomy catalog media webhook gateway
# MinIO has no tagged Go module versions; this pseudo-version is the
# RELEASE.2026-02-12 source, built from the module proxy (about 5 minutes on
# 2 cores the first time, cached after).
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
HELM_VERSION  := v3.22.0
# Workspace modules (go.work) as package patterns, e.g. github.com/doclib/libs/...
MODULES     = $(shell $(GO) list -m -f '{{.Path}}/...')
GO_DIRS    := api libs services e2e tools charts deploy
CHART      := charts/doclib
# Modules of their own, outside go.work, that check the deployment files:
# the Helm chart rendered (Helm, client-go) and compose.yaml (compose-go).
CHECKS     := charts/chartcheck deploy/composecheck

export DOCLIB_BIN_DIR := $(BIN)

.PHONY: help dev test lint tools build bench bench-tools clean-data helm-lint docs-assets browser

help:
	@echo "make dev    run the whole stack on 127.0.0.1 (public :8080, admin :8090; Ctrl-C stops it)"
	@echo "make test   gofmt, go vet, every test (race detector on), helm lint and the chart and compose checks"
	@echo "make bench  the benchmarks (figures written under bench/)"

dev: tools build
	@$(BIN)/devstack

# DOCLIB_REQUIRE_BROWSER: the /docs browser test fails instead of skipping
# when Chromium is missing (the browser target installs it).
test: tools lint helm-lint browser
	DOCLIB_REQUIRE_BROWSER=1 $(GO) test -race -count=1 -timeout 20m $(MODULES)
	cd tools && GOWORK=off $(GO) test -race -count=1 ./...
	@for d in $(CHECKS); do (cd $$d && GOWORK=off $(GO) test -count=1 ./...) || exit 1; done

lint: docs-assets
	@out=$$(gofmt -l $(GO_DIRS)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(MODULES)
	cd tools && GOWORK=off $(GO) vet ./...
	@for d in $(CHECKS); do (cd $$d && GOWORK=off $(GO) vet ./...) || exit 1; done

tools: $(BIN)/minio $(BIN)/ferretdb $(BIN)/devstack

# FerretDB and devstack are rebuilt when their sources change (go's cache
# makes a no-op rebuild take a second).
$(BIN)/ferretdb $(BIN)/devstack: FORCE
	@mkdir -p $(BIN)
	@cd tools && GOWORK=off $(GO) build -o $(BIN)/$(notdir $@) ./cmd/$(notdir $@)

$(BIN)/minio:
	@mkdir -p $(BIN)
	@echo ">> building MinIO $(MINIO_VERSION) from source into .bin/ (first time only: about 5 minutes on 2 cores)"
	@GOBIN=$(BIN) GOWORK=off $(GO) install github.com/minio/minio@$(MINIO_VERSION)
	@echo ">> MinIO built"

build: docs-assets
	@mkdir -p $(BIN)
	@for s in $(SERVICES); do $(GO) build -o $(BIN)/$$s ./services/$$s/cmd/$$s || exit 1; done

bench: tools build bench-tools
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./e2e/...

# The listing benchmark compares with nginx under wrk (Debian packages).
bench-tools:
	@command -v nginx >/dev/null && command -v wrk >/dev/null || \
	  { echo ">> installing nginx-light and wrk (Debian packages)"; \
	    apt-get update -qq && apt-get install -y -qq nginx-light wrk >/dev/null; }

$(BIN)/helm:
	@GOBIN=$(BIN) GOWORK=off $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

# Lints and renders the chart for every values file of charts/doclib/ci;
# a render without back-office credentials must fail. Part of `make test`.
helm-lint: $(BIN)/helm
	$(BIN)/helm lint --strict $(CHART)
	@for f in $(CHART)/ci/*-values.yaml; do \
	  echo ">> $$f"; \
	  $(BIN)/helm lint --strict $(CHART) -f $$f >/dev/null && \
	  $(BIN)/helm template doclib $(CHART) -f $$f >/dev/null || exit 1; \
	done
	@if $(BIN)/helm template doclib $(CHART) -f $(CHART)/ci/fail-no-credentials.yaml >/dev/null 2>&1; then \
	  echo "$(CHART) rendered without back-office credentials"; exit 1; fi

clean-data:
	rm -rf .data

FORCE:

# The /docs page's renderer (Swagger UI), pinned with its integrity hash in
# api/docs/package-lock.json, is copied into api/docs/dist, which the gateway
# embeds at build time (nothing is fetched at run time). Install scripts are
# not run (the package's only dependency is an install-time analytics hook).
DOCS_DIR := api/docs
docs-assets: $(DOCS_DIR)/dist/swagger-ui-bundle.js

$(DOCS_DIR)/dist/swagger-ui-bundle.js: $(DOCS_DIR)/package.json $(DOCS_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo ">> installing npm (Debian package)"; \
	  apt-get update -qq && apt-get install -y -qq npm >/dev/null; }
	@echo ">> vendoring the /docs renderer (npm ci, pinned by api/docs/package-lock.json)"
	@cd $(DOCS_DIR) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
	@cp $(DOCS_DIR)/node_modules/swagger-ui-dist/swagger-ui.css $(DOCS_DIR)/node_modules/swagger-ui-dist/LICENSE \
	  $(DOCS_DIR)/node_modules/swagger-ui-dist/NOTICE $(DOCS_DIR)/dist/
	@cp $(DOCS_DIR)/node_modules/swagger-ui-dist/swagger-ui-bundle.js $@

# Chromium (Debian package) for the test that opens /docs in a browser.
browser:
	@command -v chromium >/dev/null || { echo ">> installing chromium (Debian package) for the /docs browser test"; \
	  apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }
