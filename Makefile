# The two commands a new user needs: `make dev` runs the whole system on this
# machine; `make test` runs every test. What they build (MinIO, FerretDB,
# Helm, the Kubernetes control plane the chart is installed into) goes into
# .bin/ at pinned versions; the Debian packages a command
# needs are listed below (DEBS_*) and installed by one target,
# debian-packages (as root). No Node, no npm.

SHELL      := /bin/bash
GO         ?= go
ROOT       := $(CURDIR)
BIN        := $(ROOT)/.bin
SERVICES   := taxonomy catalog media webhook console gateway
# MinIO has no tagged Go module versions; this pseudo-version is the
# RELEASE.2026-02-12 source, built from the module proxy (about 5 minutes on
# 2 cores the first time, cached after).
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
HELM_VERSION  := v3.22.0
# The control plane the chart is installed into by `make test` (controlplane
# target): kube-apiserver, kube-controller-manager, kube-scheduler and etcd at
# the versions charts/controlplane/go.mod pins (Kubernetes v1.37.2 and the
# etcd it is tested with), and kwok, which plays the nodes and the pods'
# containers. Built from source once, cached in .bin/.
KUBE_VERSION  := v1.37.2
KWOK_VERSION  := v0.8.0
CONTROLPLANE  := etcd kube-apiserver kube-controller-manager kube-scheduler kwok
# Workspace modules (go.work) as package patterns, e.g. github.com/doclib/libs/...
MODULES     = $(shell $(GO) list -m -f '{{.Path}}/...')
GO_DIRS    := api libs services e2e tools charts deploy cmd
CHART      := charts/doclib
# Modules of their own, outside go.work, that check the deployment files:
# the Helm chart rendered (Helm, client-go), compose.yaml (compose-go) and
# the API reference (libopenapi-validator, oasdiff); and the e2e tests' real
# OpenID provider (zitadel/oidc's example, whose OpenTelemetry and oauth2
# would raise the services' pinned versions in the workspace).
CHECKS     := charts/chartcheck deploy/composecheck api/apicheck e2e/oidcprovider

export DOCLIB_BIN_DIR := $(BIN)

.PHONY: help dev test lint tools build bench clean-data helm-lint debian-packages fresh-clone-check controlplane \
	dev-packages test-packages bench-packages

help:
	@echo "make dev    run the whole stack on 127.0.0.1 (public :8080, admin :8090; Ctrl-C stops it)"
	@echo "make test   gofmt, go vet, every test (race detector on), helm lint, the chart and compose checks, and the chart installed on a control plane built into .bin/"
	@echo "make bench  the benchmarks (figures written under bench/)"

# Debian packages, by the command that needs them: add yours to the list of
# the command that needs it (a name, or name=version where Debian keeps that
# version: a stable release keeps only the current one, so a version pin
# breaks at its next security update, and the names are left unpinned).
# Checked with dpkg; only the missing ones are installed.
# libvips-dev: the media service's image renditions (cgo, through govips);
# libvips-tools: the vipsthumbnail the rendition benchmark compares with.
# poppler-utils: pdfinfo, pdftoppm and pdftotext, which read PDFs for media (covers, text).
# time: GNU time, doclib's peak RSS in TestHugeMediaStreams and the export benchmark.
DEBS_DEV   := libvips-dev poppler-utils
DEBS_TEST  := $(DEBS_DEV) chromium time
DEBS_BENCH := $(DEBS_DEV) nginx-light wrk libvips-tools time

dev: tools build
	@$(BIN)/devstack

# DOCLIB_REQUIRE_BROWSER: the /docs browser test fails instead of skipping
# when Chromium is missing; DOCLIB_REQUIRE_HELM: the test of the platform
# guide's install command fails instead of skipping when .bin/helm is;
# DOCLIB_REQUIRE_CONTROLPLANE: the chart's life cycle on a control plane
# (charts/chartcheck/lifecycle) fails instead of skipping without .bin/kwok etc.
test: test-packages tools controlplane lint helm-lint fresh-clone-check
	DOCLIB_REQUIRE_BROWSER=1 DOCLIB_REQUIRE_HELM=1 $(GO) test -race -count=1 -timeout 45m $(MODULES)
	cd tools && GOWORK=off $(GO) test -race -count=1 ./...
	@for d in $(CHECKS); do (cd $$d && DOCLIB_REQUIRE_CONTROLPLANE=1 GOWORK=off $(GO) test -count=1 ./...) || exit 1; done

lint: dev-packages
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

# media alone uses cgo (libvips, for image renditions); the other services
# are built without it, so they stay static binaries.
build: dev-packages
	@mkdir -p $(BIN)
	@for s in $(SERVICES); do cgo=0; [ $$s = media ] && cgo=1; \
	  CGO_ENABLED=$$cgo $(GO) build -o $(BIN)/$$s ./services/$$s/cmd/$$s || exit 1; done

# The listing benchmark compares with nginx under wrk (DEBS_BENCH).
bench: bench-packages tools build
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./e2e/...

dev-packages:
	@$(MAKE) --no-print-directory debian-packages DEBS="$(DEBS_DEV)" FOR=dev
test-packages:
	@$(MAKE) --no-print-directory debian-packages DEBS="$(DEBS_TEST)" FOR=test
bench-packages:
	@$(MAKE) --no-print-directory debian-packages DEBS="$(DEBS_BENCH)" FOR=bench

# Installs the packages of DEBS that are missing: as root with apt-get,
# otherwise with `sudo -n` where sudo needs no password; else it names them
# with the command to run as root, and fails (FOR names the command). On a
# system without dpkg it names them and goes on: install them yourself.
debian-packages:
	@missing=; for p in $(DEBS); do \
	  dpkg-query -W -f='$${Status}' "$${p%%=*}" 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; done; \
	[ -z "$$missing" ] && exit 0; \
	if ! command -v dpkg-query >/dev/null; then echo ">> make $(FOR) uses$$missing (not a Debian system: install them yourself)"; exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then sudo=; elif sudo -n true 2>/dev/null; then sudo="sudo -n"; else \
	  echo "make $(FOR) needs the Debian packages$$missing, and installing them needs root:"; \
	  echo "  sudo apt-get install --no-install-recommends$$missing"; exit 1; fi; \
	echo ">> installing Debian packages for make $(FOR):$$missing"; \
	$$sudo apt-get update -qq && $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null

$(BIN)/helm:
	@GOBIN=$(BIN) GOWORK=off $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

controlplane: $(addprefix $(BIN)/,$(CONTROLPLANE))

# k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces its staging
# modules with local folders), so the small module charts/controlplane requires
# it, pins each staging module to the same release and lists the commands as
# tools; etcd comes from the same module at the version Kubernetes requires.
# The first build takes about 15 minutes on 2 idle cores (65 measured on
# busy shared ones); later runs build nothing; a binary is rebuilt (relinked
# from Go's cache, ~1.5 minutes) only when that go.mod changes. Built at low
# priority.
KUBE_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 \
	-X k8s.io/component-base/version.gitTreeState=clean
$(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/kube-scheduler: charts/controlplane/go.mod
	@mkdir -p $(BIN)
	@echo ">> building $(notdir $@) $(KUBE_VERSION) from source into .bin/ (first time only: minutes)"
	@cd charts/controlplane && GOWORK=off nice -n 10 $(GO) build -ldflags '$(KUBE_LDFLAGS)' \
	  -o $@ k8s.io/kubernetes/cmd/$(notdir $@)

$(BIN)/etcd: charts/controlplane/go.mod
	@mkdir -p $(BIN)
	@echo ">> building etcd from source into .bin/ (first time only: about a minute)"
	@cd charts/controlplane && GOWORK=off nice -n 10 $(GO) build -o $@ go.etcd.io/etcd/server/v3

$(BIN)/kwok:
	@mkdir -p $(BIN)
	@echo ">> building kwok $(KWOK_VERSION) from source into .bin/ (first time only: about 2 minutes)"
	@GOBIN=$(BIN) GOWORK=off nice -n 10 $(GO) install sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)

# Lints and renders the chart for every values file of charts/doclib/ci;
# a render without back-office credentials must fail. Part of `make test`.
# Helm's output is shown only when it fails: linted with its default values,
# the chart's guards (a `fail` without credentials, e-mail or database) are
# reported by Helm as "[INFO] Fail: ...", which is the expected outcome.
helm-lint: $(BIN)/helm
	@out=$$($(BIN)/helm lint --strict $(CHART) 2>&1) || { echo "$$out"; exit 1; }
	@for f in $(CHART)/ci/*-values.yaml; do \
	  out=$$($(BIN)/helm lint --strict $(CHART) -f $$f 2>&1) || { echo ">> $$f"; echo "$$out"; exit 1; }; \
	  $(BIN)/helm template doclib $(CHART) -f $$f >/dev/null || { echo ">> $$f"; exit 1; }; \
	done
	@if $(BIN)/helm template doclib $(CHART) -f $(CHART)/ci/fail-no-credentials.yaml >/dev/null 2>&1; then \
	  echo "$(CHART) rendered without back-office credentials"; exit 1; fi

clean-data:
	rm -rf .data

FORCE:

# A fresh clone's `make dev` needs no Node: the files git keeps, copied
# alone, plan `make dev` (make -n) with an npm that fails on PATH, and the
# gateway builds from them (the /docs renderer, Swagger UI, comes from the
# Go module github.com/swaggo/files/v2, pinned in api/go.mod). Part of
# `make test`.
fresh-clone-check:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	git ls-files -z | xargs -0 cp -P --parents -t "$$tmp" && \
	mkdir "$$tmp/.nonode" && printf '#!/bin/sh\necho "npm called: $$*" >&2\nexit 1\n' >"$$tmp/.nonode/npm" && \
	chmod +x "$$tmp/.nonode/npm" && \
	plan=$$(cd "$$tmp" && PATH="$$tmp/.nonode:$$PATH" $(MAKE) -n --no-print-directory dev 2>&1) || { echo "$$plan"; exit 1; }; \
	if grep -Eqw 'npm|node|npx' <<<"$$plan"; then echo "a fresh clone's make dev would run Node:"; grep -Ew 'npm|node|npx' <<<"$$plan"; exit 1; fi; \
	cd "$$tmp" && PATH="$$tmp/.nonode:$$PATH" $(GO) build -o /dev/null ./services/gateway/cmd/gateway
