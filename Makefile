# skiff: `make run` starts the agent on this machine, `make test` runs every
# test (unit + e2e) and installs what they need when run as root.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
MAKEFLAGS += --no-print-directory

GO ?= go
BIN := bin/skiff
IMAGES_DIR := _output/images
ROOT_DIR ?= /var/lib/skiff
MANIFESTS ?= examples/manifests
GOLANGCI_LINT_VERSION := v2.15.0

.PHONY: all build images setup unit e2e test run lint bench bench-quick clean

all: build

## build: the static skiff binary at bin/skiff
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN) ./cmd/skiff

## images: test image archives (busybox, testserver) into _output/images; skips unchanged ones
images:
	$(GO) run ./test/images/build -out $(IMAGES_DIR)

## setup: install containerd, runc, CNI plugins, busybox-static... (root only; skipped otherwise)
setup:
	@if [ "$$(id -u)" = 0 ]; then test/setup.sh; else echo "setup: not root, skipping test/setup.sh"; fi

## unit: unit tests with the race detector; no root needed
unit:
	env -u SKIFF_E2E $(GO) test -race ./...

## e2e: end-to-end tests against a real containerd (root)
e2e: setup build images
	@[ "$$(id -u)" = 0 ] || { echo "make e2e: the e2e suite must run as root" >&2; exit 1; }
	SKIFF_E2E=1 SKIFF_BIN=$(CURDIR)/$(BIN) SKIFF_IMAGES=$(CURDIR)/$(IMAGES_DIR) \
		$(GO) test -v -count=1 -timeout 30m ./test/e2e/...

## test: everything CI runs: setup, unit, e2e
test:
	$(MAKE) setup
	$(MAKE) unit
	$(MAKE) e2e

## run: start the agent with the example manifests (root)
run: setup build images
	install -d $(ROOT_DIR)/images
	cp $(IMAGES_DIR)/busybox.tar $(ROOT_DIR)/images/busybox.tar
	exec $(BIN) agent --pod-manifest-path $(MANIFESTS) --root-dir $(ROOT_DIR)

## lint: golangci-lint (pinned); not part of test
lint:
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) run ./...

bench bench-quick:
	@echo "$@: not implemented yet (issue 5)"

clean:
	rm -rf bin _output test/images/out
