# skiff: `make run` starts the agent on this machine, `make test` runs every
# test (unit, root, e2e, cgroup v2 VM) and installs what they need when run
# as root. CI (.ci/run) adds lint, test-fresh and bench-quick.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
MAKEFLAGS += --no-print-directory

GO ?= go
BIN := bin/skiff
IMAGES_DIR := _output/images
ROOT_DIR ?= /var/lib/skiff
MANIFESTS ?= examples/manifests
GOLANGCI_LINT_VERSION := v2.15.0
# The Kubernetes release skiff tracks (internal/k8sversion, the one place to
# change): its k8s.io libraries (v0.<minor>.<patch>), the shim's served API,
# the node version it reports, and the control plane, kubelet and
# conformance suite the tests build. hack/bump-kubernetes.sh moves every
# go.mod to it; docs/kubernetes-version.md lists the rest of a bump.
KUBERNETES_VERSION := $(shell sed -n 's/^\tVersion = "\(v[0-9.]*\)"$$/\1/p' internal/k8sversion/version.go)
KUBERNETES_MINOR := $(word 2,$(subst ., ,$(KUBERNETES_VERSION)))
# -ldflags for upstream's binaries built at KUBERNETES_VERSION: /version and
# the skew checks read these.
K8S_VERSION_LDFLAGS = -X k8s.io/component-base/version.gitVersion=$(1) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(1))) \
	-X k8s.io/component-base/version.gitTreeState=clean
# grpcnotrace keeps grpc from linking golang.org/x/net/trace, whose
# html/template rendering would make the linker keep every exported method
# of every reachable type: -6 MB of binary and of the agent's RSS
# (docs/decisions/0073-built-grpcnotrace.md; cmd/skiff/deadcode_test.go).
BUILD_TAGS := grpcnotrace

.PHONY: all build runtime build-apiserver install uninstall run-control-plane images node-image e2e-node-image setup setup-runtime unit integration e2e e2e-external test test-v2 test-systemd test-fresh run lint faults bench bench-quick clean

all: build

## build: the static binaries bin/skiff and bin/skiff-pause (the pods' pause process), and the managed runtime beside them (make runtime)
build: runtime
	CGO_ENABLED=0 $(GO) build -trimpath -tags $(BUILD_TAGS) -ldflags '-s -w' -o $(BIN) ./cmd/skiff
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)-pause ./cmd/skiff-pause

# The managed runtime (issue 31): containerd, its runc shim and runc at
# pinned versions (contrib/runtime's go.mod and go.sum, which must name the
# same versions), built from the Go module proxy once per version into
# RUNTIME_CACHE (minutes cold) and copied beside bin/skiff, where skiff's
# managed mode looks first (docs/decisions/0096-bundled-runtime.md).
# containerd is static (CGO_ENABLED=0, without the btrfs, devmapper and zfs
# snapshotters); runc needs cgo and libseccomp (libseccomp-dev, which
# make setup-runtime installs) and is linked statically, as upstream's
# release binaries are.
CONTAINERD_VERSION := v2.4.2
RUNC_VERSION := v1.5.3
RUNTIME_CACHE ?= $(HOME)/.cache/skiff/runtime
RUNTIME_PROGRAMS := containerd containerd-shim-runc-v2 runc
CONTAINERD_CACHE = $(RUNTIME_CACHE)/containerd-$(CONTAINERD_VERSION)
RUNC_CACHE = $(RUNTIME_CACHE)/runc-$(RUNC_VERSION)

## runtime: containerd $(CONTAINERD_VERSION) and runc $(RUNC_VERSION), built once into $(RUNTIME_CACHE) from contrib/runtime (its go.sum pins them), copied into bin/
runtime:
	@set -e; c=$(CONTAINERD_CACHE); r=$(RUNC_CACHE); \
	if [ ! -x $$c/containerd ] || [ ! -x $$c/containerd-shim-runc-v2 ]; then \
		echo "building containerd $(CONTAINERD_VERSION) into $$c (about 2 minutes, once)" >&2; \
		rm -rf $$c.tmp && mkdir -p $$c.tmp; \
		for p in containerd containerd-shim-runc-v2; do \
			(cd contrib/runtime && CGO_ENABLED=0 $(GO) build -trimpath -tags no_btrfs,no_devmapper,no_zfs \
				-ldflags '-s -w -X github.com/containerd/containerd/v2/version.Version=$(CONTAINERD_VERSION)' \
				-o $$c.tmp/$$p github.com/containerd/containerd/v2/cmd/$$p) || exit 1; \
		done; \
		rm -rf $$c && mv $$c.tmp $$c; \
	fi; \
	if [ ! -x $$r/runc ]; then \
		pkg-config --exists libseccomp 2>/dev/null || { echo "make runtime: runc needs gcc, pkg-config and libseccomp-dev (make setup-runtime installs them)" >&2; exit 1; }; \
		echo "building runc $(RUNC_VERSION) into $$r (about 30 seconds, once)" >&2; \
		rm -rf $$r.tmp && mkdir -p $$r.tmp; \
		(cd contrib/runtime && CGO_ENABLED=1 $(GO) build -trimpath -tags 'seccomp netgo osusergo urfave_cli_no_docs' \
			-ldflags '-s -w -X main.version=$(RUNC_VERSION:v%=%) -extldflags -static' \
			-o $$r.tmp/runc github.com/opencontainers/runc) || exit 1; \
		rm -rf $$r && mv $$r.tmp $$r; \
	fi; \
	mkdir -p bin; \
	for p in containerd containerd-shim-runc-v2; do cmp -s $$c/$$p bin/$$p || install -m 0755 $$c/$$p bin/$$p; done; \
	cmp -s $$r/runc bin/runc || install -m 0755 $$r/runc bin/runc

# The control-plane shim (issue 17), a separate executable: its build is
# minutes cold (k8s.io/apiserver, etcd), so `make build` leaves it out;
# `skiff agent --control-plane` finds it beside bin/skiff. /version reports
# the Kubernetes version whose API it serves (kubectl checks the skew).
APISERVER_BIN := bin/skiff-apiserver
APISERVER_VERSION := $(KUBERNETES_VERSION)-skiff

## build-apiserver: bin/skiff-apiserver, the control-plane shim that `skiff agent --control-plane` runs
# cmd/skiff-apiserver is a module of its own (it imports k8s.io/kubernetes).
build-apiserver:
	cd cmd/skiff-apiserver && CGO_ENABLED=0 $(GO) build -trimpath -tags $(BUILD_TAGS) -o $(CURDIR)/$(APISERVER_BIN) \
		-ldflags '-s -w -X k8s.io/component-base/version.gitVersion=$(APISERVER_VERSION) -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(KUBERNETES_MINOR)' \
		.

# Install as a systemd service (issue 18): `make install`, then
# `systemctl daemon-reload && systemctl enable --now skiff`. PREFIX, BINDIR,
# SYSCONFDIR, UNITDIR and DESTDIR as usual; the unit's ExecStart= and paths
# follow them. An existing skiff.env is kept. skiff's own runtime (make
# runtime) goes into SKIFF_LIBDIR, <BINDIR>/../lib/skiff
# ($(PREFIX)/lib/skiff), where skiff's managed mode looks for it.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SKIFF_LIBDIR = $(patsubst %/,%,$(dir $(patsubst %/,%,$(BINDIR))))/lib/skiff
SYSCONFDIR ?= /etc
UNITDIR ?= $(SYSCONFDIR)/systemd/system
DESTDIR ?=
SKIFF_ETC = $(SYSCONFDIR)/skiff
INSTALL_SED = sed -e 's|/usr/local/bin/|$(BINDIR)/|g' -e 's|/etc/skiff/|$(SKIFF_ETC)/|g'

## install: skiff, skiff-pause, skiff-apiserver into $(BINDIR); its containerd, shim and runc into $(BINDIR)/../lib/skiff; skiff.service into $(UNITDIR); $(SYSCONFDIR)/skiff/skiff.env (flags) and manifests/ (DESTDIR, PREFIX aware)
install: build build-apiserver
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SKIFF_LIBDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SKIFF_ETC)/manifests
	install -m 0755 $(BIN) $(BIN)-pause $(APISERVER_BIN) $(DESTDIR)$(BINDIR)/
	install -m 0755 $(addprefix bin/,$(RUNTIME_PROGRAMS)) $(DESTDIR)$(SKIFF_LIBDIR)/
	$(INSTALL_SED) contrib/systemd/skiff.service > $(DESTDIR)$(UNITDIR)/skiff.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/skiff.service
	@if [ -e $(DESTDIR)$(SKIFF_ETC)/skiff.env ]; then echo "install: keeping $(DESTDIR)$(SKIFF_ETC)/skiff.env"; \
	else $(INSTALL_SED) contrib/systemd/skiff.env > $(DESTDIR)$(SKIFF_ETC)/skiff.env && chmod 0644 $(DESTDIR)$(SKIFF_ETC)/skiff.env; fi
	@echo "installed; flags in $(SKIFF_ETC)/skiff.env, static pods in $(SKIFF_ETC)/manifests. Next:"
	@echo "  systemctl daemon-reload && systemctl enable --now skiff && journalctl -u skiff -f"

## uninstall: stop and disable skiff.service (pods keep running), remove what install put in $(BINDIR), $(BINDIR)/../lib/skiff and $(UNITDIR); $(SYSCONFDIR)/skiff stays
uninstall:
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ] && [ -e $(UNITDIR)/skiff.service ]; then \
		systemctl disable --now skiff || true; fi
	rm -f $(DESTDIR)$(BINDIR)/skiff $(DESTDIR)$(BINDIR)/skiff-pause $(DESTDIR)$(BINDIR)/skiff-apiserver $(DESTDIR)$(UNITDIR)/skiff.service
	rm -f $(addprefix $(DESTDIR)$(SKIFF_LIBDIR)/,$(RUNTIME_PROGRAMS))
	rmdir $(DESTDIR)$(SKIFF_LIBDIR) 2>/dev/null || true
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
	@echo "uninstalled; $(DESTDIR)$(SKIFF_ETC) (flags, manifests) and the root dir (/var/lib/skiff) are left in place"

## images: test image archives (busybox, testserver) into _output/images; skips unchanged ones
images:
	$(GO) run ./test/images/build -out $(IMAGES_DIR)

# The node image (issue 18): skiff with its own containerd and runc (make
# runtime, in /usr/lib/skiff), the CNI plugins and iptables taken from this
# host (test/setup.sh installs them), as a docker-archive for privileged CI
# containers
# (docs/node-image.md). Reproducible; rebuilt only when an input changed.
NODE_IMAGE := _output/node-image.tar
NODE_IMAGE_VERSION ?= $(shell git describe --always --dirty --tags 2>/dev/null || echo dev)

## node-image: the node image archive $(NODE_IMAGE), skiff.local/node:$(NODE_IMAGE_VERSION) (skiff agent + containerd, runc, CNI, iptables)
node-image: setup-runtime build
	$(GO) run ./test/images/build -node-image $(NODE_IMAGE) -node-ref skiff.local/node:$(NODE_IMAGE_VERSION) -skiff $(BIN) -skiff-pause $(BIN)-pause -runtime-dir bin

## e2e-node-image: only TestNodeImage (make e2e runs it too): skiff runs the node image as a privileged static pod, the skiff inside runs a busybox pod (root)
e2e-node-image: setup build images node-image
	@[ "$$(id -u)" = 0 ] || { echo "make e2e-node-image: must run as root" >&2; exit 1; }
	SKIFF_E2E=1 SKIFF_BIN=$(CURDIR)/$(BIN) SKIFF_IMAGES=$(CURDIR)/$(IMAGES_DIR) SKIFF_NODE_IMAGE=$(CURDIR)/$(NODE_IMAGE) \
		$(GO) test -v -count=1 -timeout 10m -run 'TestNodeImage' ./test/e2e

## setup: install containerd, runc, CNI plugins, busybox-static... (root only; skipped otherwise)
setup:
	@if [ "$$(id -u)" = 0 ]; then test/setup.sh; else echo "setup: not root, skipping test/setup.sh"; fi

# setup-runtime: only what running pods needs (no -race compiler, no VM)
setup-runtime:
	@if [ "$$(id -u)" = 0 ]; then test/setup.sh --runtime; else echo "setup: not root, skipping test/setup.sh"; fi

## unit: unit tests with the race detector, the main module's and bench/'s (a module of its own, which ./... skips), and test/conformance/k8s's feature-table test; no root needed, and as root they leave the host alone
unit:
	env -u SKIFF_E2E -u SKIFF_ROOT_TESTS $(GO) test -race ./...
	cd bench && env -u SKIFF_E2E -u SKIFF_ROOT_TESTS $(GO) test -race ./...
	cd cmd/skiff-apiserver && env -u SKIFF_E2E -u SKIFF_ROOT_TESTS $(GO) test -race ./...
	cd test/conformance/k8s && $(GO) test ./...

# The packages with tests gated on SKIFF_ROOT_TESTS=1 (bench/ is a module of its own).
ROOT_TEST_PKGS = $(sort $(dir $(shell grep -rl --include='*_test.go' SKIFF_ROOT_TESTS . --exclude-dir=bench --exclude-dir=_output)))

## integration: the root tests without an agent (SKIFF_ROOT_TESTS=1): the host's cgroups, the managed containerd
integration: setup
	@[ "$$(id -u)" = 0 ] || { echo "make integration: the root tests must run as root" >&2; exit 1; }
	SKIFF_ROOT_TESTS=1 $(GO) test -race -count=1 -timeout 15m $(ROOT_TEST_PKGS)

## e2e: end-to-end tests against a real containerd (root), the API-source ones against a real control plane (make controlplane)
e2e: setup build build-apiserver images node-image
	@[ "$$(id -u)" = 0 ] || { echo "make e2e: the e2e suite must run as root" >&2; exit 1; }
	cp=$$($(MAKE) -s controlplane) && ms=$$($(MAKE) -s metricsserver) && hm=$$($(MAKE) -s helm) && \
	SKIFF_E2E=1 SKIFF_BIN=$(CURDIR)/$(BIN) SKIFF_IMAGES=$(CURDIR)/$(IMAGES_DIR) SKIFF_CONTROLPLANE=$$cp SKIFF_METRICS_SERVER=$$ms SKIFF_HELM=$$hm \
		SKIFF_NODE_IMAGE=$(CURDIR)/$(NODE_IMAGE) \
		SKIFF_APISERVER=$(CURDIR)/$(APISERVER_BIN) \
		$(GO) test -v -count=1 -timeout 40m ./test/e2e/... ./test/cluster/... ./test/walkthrough/...

# The e2e tests that must pass on an external runtime too (issue 31): Debian's
# containerd 1.6 (E2E_EXTERNAL_CONTAINERD), which the suite starts itself
# under its root with skiff's config for that version and its bridge, and
# which every agent dials with --container-runtime-endpoint
# (SKIFF_E2E_RUNTIME=external). Core pod behaviour only: nothing that needs
# skiff's managed containerd (its restart, image archive import, registry
# config, the node image) or a control plane. Anchored: each name exactly.
E2E_EXTERNAL_LIST := \
	TestRealWorldShapes_G1_G13_G15 \
	TestInitContainersRunInOrder_A24 \
	TestInitContainerFailureWithRestartNeverFailsPod_A26 \
	TestPodWithSuccessfulContainersSucceeds_A5 \
	TestRunningPodStatusDetails_A8_A16_A17_A19 \
	TestTerminatedContainerReasons_A8_A11 \
	TestReadinessProbeHandlers_B2_B3_B4_B5_B6_B10 \
	TestLivenessProbeHandlers_B9_B17_B18 \
	TestStartupProbeGatesLiveness_B11 \
	TestPostStartBlocksRunning_C2_C3_A8 \
	TestPostStartHookFailure_C9_C10_A14 \
	TestPreStopSleepThenSIGTERMWithinGrace_A42_A44_A45_C4_C8_C13 \
	TestVolumes_G1_G14 \
	TestContainerSecurityContext_G15_G16 \
	TestPodNamespaces_G15 \
	TestVolumeOwnershipFSGroup_G15 \
	TestCLIPodsAndLogs_A34_A35 \
	TestCLIExec_H25 \
	TestCrashLoopBackOffFirstSteps_A12_A13_A14_A15 \
	TestPodGetsIPFromBridgeRange_A52 \
	TestAgentRestartAfterSIGKILLAdoptsPods_A2_A3 \
	TestGracePeriodEndsWithSIGKILL_A42_A43 \
	TestTerminationMessages_A8_A55 \
	TestCgroupLimitsQoSAndCleanup_D4_D6_D13_A36 \
	TestAgentUsesTheSuitesRuntime_Issue31 \
	TestUserNamespacePod \
	TestImageVolume \
	TestRecursiveReadOnlyMount \
	TestSupplementalGroupsPolicy
E2E_EXTERNAL_EMPTY :=
E2E_EXTERNAL_TESTS ?= ^($(subst $(E2E_EXTERNAL_EMPTY) $(E2E_EXTERNAL_EMPTY),|,$(strip $(E2E_EXTERNAL_LIST))))$$
E2E_EXTERNAL_CONTAINERD ?= /usr/bin/containerd

## e2e-external: the E2E_EXTERNAL_TESTS subset of the e2e suite against an external containerd, Debian's 1.6 (root, ~4 min)
e2e-external: setup build images
	@[ "$$(id -u)" = 0 ] || { echo "make e2e-external: the e2e suite must run as root" >&2; exit 1; }
	SKIFF_E2E=1 SKIFF_E2E_RUNTIME=external SKIFF_E2E_CONTAINERD=$(E2E_EXTERNAL_CONTAINERD) \
		SKIFF_BIN=$(CURDIR)/$(BIN) SKIFF_IMAGES=$(CURDIR)/$(IMAGES_DIR) \
		$(GO) test -v -count=1 -timeout 15m -run '$(E2E_EXTERNAL_TESTS)' ./test/e2e

# The API-source e2e tests that must pass against the oldest kube-apiserver
# skiff joins (internal/k8sversion.OldestAPIServer; make e2e runs them against
# the newest): joining, pod edits and streams, TLS bootstrap, agent restart,
# in-place resize (a resize beyond allocatable reaches the node: Infeasible).
E2E_SKEW_TESTS := TestJoinsAPIServer_H1_H10_H11_H15_A46|TestAPIPodEditsAndStreams_H1_G7|TestTLSBootstrap_H1|TestAgentRestartKeepsAPIPodsReady_H1|TestInPlacePodResize

## e2e-skew: the E2E_SKEW_TESTS against the control plane of the oldest API server skiff joins ($(CONTROLPLANE_OLDEST_VERSION); root, ~3 min)
e2e-skew: setup build images
	@[ "$$(id -u)" = 0 ] || { echo "make e2e-skew: the e2e suite must run as root" >&2; exit 1; }
	cp=$$($(MAKE) -s controlplane-oldest) && \
	SKIFF_E2E=1 SKIFF_BIN=$(CURDIR)/$(BIN) SKIFF_IMAGES=$(CURDIR)/$(IMAGES_DIR) SKIFF_CONTROLPLANE=$$cp \
		$(GO) test -v -count=1 -timeout 15m -run '^($(E2E_SKEW_TESTS))$$' ./test/e2e

# The faults suite (issue 34): the e2e tests named TestFaults*, against
# containerd 2 from bin/ started by the suite (external mode) with the CRI
# fault injector (test/criproxy) in front of it where a scenario needs it.
# FAULTS=short is CI's (~10 min), FAULTS=full the report's (~60 min); each
# scenario appends its figures to FAULTS_REPORT.
FAULTS ?= short
FAULTS_REPORT ?= _output/faults/report-$(FAULTS).md
FAULTS_RUN ?= ^TestFaults

## faults: the faults suite (root): CRI errors under churn, hanging and failing RPCs, a pull cut mid-way, a slow runtime, runtime and agent kills, a full disk, a flapping API server; FAULTS=short (CI, ~10 min) or full (~60 min), report in FAULTS_REPORT
faults: setup build images
	@[ "$$(id -u)" = 0 ] || { echo "make faults: the faults suite must run as root" >&2; exit 1; }
	mkdir -p $(dir $(FAULTS_REPORT)) && rm -f $(FAULTS_REPORT)
	cp=$$($(MAKE) -s controlplane) && \
	SKIFF_E2E=1 SKIFF_E2E_RUNTIME=external SKIFF_E2E_CONTAINERD=$(CURDIR)/bin/containerd SKIFF_CONTROLPLANE=$$cp \
		SKIFF_FAULTS=$(FAULTS) SKIFF_FAULTS_REPORT=$(CURDIR)/$(FAULTS_REPORT) \
		SKIFF_BIN=$(CURDIR)/$(BIN) SKIFF_IMAGES=$(CURDIR)/$(IMAGES_DIR) \
		$(GO) test -v -count=1 -timeout $(if $(filter full,$(FAULTS)),150m,30m) -run '$(FAULTS_RUN)' ./test/e2e
	@cat $(FAULTS_REPORT)

## test: setup, unit, the root tests (integration), e2e, e2e on the external runtime, e2e against the oldest API server, the cgroup v2 suite in a VM, the systemd-booted VM tests
test:
	$(MAKE) setup
	$(MAKE) unit
	$(MAKE) integration
	$(MAKE) e2e
	$(MAKE) e2e-external
	$(MAKE) e2e-skew
	$(MAKE) test-v2
	$(MAKE) test-systemd

# The e2e tests the cgroup v2 VM runs, and where their binary is built.
V2_TESTS ?= TestCgroup|TestControlPlaneResize|TestInitContainersRunInOrder_A24|TestPodGetsIPFromBridgeRange_A52|TestVolumes_G1_G14|TestContainerSecurityContext_G15_G16|TestVolumeOwnershipFSGroup_G15|TestImageVolume|TestRecursiveReadOnlyMount|TestUserNamespacePod|TestSupplementalGroupsPolicy
E2E_TEST_BIN := _output/e2e.test
# The e2e suite's /tmp in the VM (ext4, sparse: the guest's tmpfs
# root cannot be idmapped by its 6.1 kernel; see with-scratch.sh).
V2_SCRATCH := _output/vm/scratch.img
VM_GUEST := /skiff
# The cgroups package's tests, run as root in the VM too: their cgroup v2
# branches (TestManagerLifecycle_D4's v2 files) run nowhere else.
CGROUPS_TEST_BIN := _output/cgroups.test

## test-v2: the VM's own smoke test (boot, cgroup v2 controllers, the guest watchdog), then the cgroups package's root tests and the cgroup v2 e2e suite (V2_TESTS) inside a QEMU VM booting a cgroup v2 kernel (test/vm)
test-v2: setup build build-apiserver images
	SKIFF_VM=1 $(GO) test -count=1 -timeout 10m -run 'TestVMSmoke' ./test/vm
	CGO_ENABLED=0 $(GO) test -c -o $(CGROUPS_TEST_BIN) ./cgroups
	$(GO) run ./test/vm/cmd/vmrun -timeout 10m -log _output/vm/console-cgroups.log \
		-require-cgroup2 cpu,memory,pids \
		-add $(CGROUPS_TEST_BIN):$(VM_GUEST)/cgroups.test -env SKIFF_ROOT_TESTS=1 \
		-- $(VM_GUEST)/cgroups.test -test.v -test.count=1 -test.timeout 8m
	CGO_ENABLED=0 $(GO) test -c -o $(E2E_TEST_BIN) ./test/e2e
	mkdir -p $(dir $(V2_SCRATCH)) && rm -f $(V2_SCRATCH) && truncate -s 8G $(V2_SCRATCH) && mkfs.ext4 -q -F $(V2_SCRATCH)
	$(GO) run ./test/vm/cmd/vmrun -timeout 30m -log _output/vm/console.log \
		-require-cgroup2 cpu,memory,pids -disk $(V2_SCRATCH) \
		-add $(BIN):$(VM_GUEST)/bin/skiff -add $(BIN)-pause:$(VM_GUEST)/bin/skiff-pause -add $(IMAGES_DIR):$(VM_GUEST)/images \
		-add $(APISERVER_BIN):$(VM_GUEST)/bin/skiff-apiserver \
		$(foreach p,$(RUNTIME_PROGRAMS),-add bin/$(p):$(VM_GUEST)/bin/$(p)) \
		-add $(E2E_TEST_BIN):$(VM_GUEST)/test/e2e/e2e.test -workdir $(VM_GUEST)/test/e2e \
		-add test/vm/guest/with-scratch.sh:$(VM_GUEST)/with-scratch.sh \
		-env SKIFF_E2E=1 -env SKIFF_BIN=$(VM_GUEST)/bin/skiff -env SKIFF_IMAGES=$(VM_GUEST)/images \
		-env SKIFF_APISERVER=$(VM_GUEST)/bin/skiff-apiserver \
		-- $(VM_GUEST)/with-scratch.sh /dev/nvme0n1 \
		$(VM_GUEST)/test/e2e/e2e.test -test.v -test.count=1 -test.timeout 25m -test.run '$(V2_TESTS)'
	rm -f $(V2_SCRATCH)

# The systemd VM tests (issue 18) and the root disk cache they build once
# per machine (debootstrap, about 1-2 minutes; see test/vm/README.md).
SYSTEMD_TESTS ?= TestSystemdVM
SKIFF_VM_CACHE ?= $(HOME)/.cache/skiff

## test-systemd: tests in a QEMU VM whose PID 1 is systemd (test/vm RunSystemd; root, the first run builds the cached Debian 12 root)
test-systemd: setup build images
	cp=$$($(MAKE) -s controlplane) && SKIFF_VM_SYSTEMD=1 SKIFF_VM_CACHE=$(SKIFF_VM_CACHE) SKIFF_BIN=$(CURDIR)/$(BIN) SKIFF_IMAGES=$(CURDIR)/$(IMAGES_DIR) SKIFF_CONTROLPLANE="$$cp" \
		$(GO) test -v -count=1 -timeout 40m -run '$(SYSTEMD_TESTS)' ./test/vm

## test-fresh: from a fresh minimal Debian 12 (debootstrap chroot, cached in _output/fresh) to a Running example pod (root)
test-fresh:
	test/fresh/run.sh

## run-control-plane: the agent with its own API server (skiff-apiserver) for kubectl, admin kubeconfig $(ROOT_DIR)/admin.kubeconfig (root)
run-control-plane: setup-runtime build build-apiserver images
	install -d $(ROOT_DIR)/images
	cp $(IMAGES_DIR)/busybox.tar $(ROOT_DIR)/images/busybox.tar
	exec $(BIN) agent --control-plane --pod-manifest-path $(MANIFESTS) --root-dir $(ROOT_DIR)

## run: start the agent with the example manifests (root)
run: setup-runtime build images
	install -d $(ROOT_DIR)/images
	cp $(IMAGES_DIR)/busybox.tar $(ROOT_DIR)/images/busybox.tar
	exec $(BIN) agent --pod-manifest-path $(MANIFESTS) --root-dir $(ROOT_DIR)

## lint: golangci-lint (pinned) on the main module and bench/; CI runs it, make test does not
lint:
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) run ./...
	cd bench && $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) run ./...
	cd cmd/skiff-apiserver && $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) run --config $(CURDIR)/.golangci.yml ./...

# Fuzzing (issue 34): every go test fuzz target of the main module
# (FuzzXxx in the packages that parse outside input), one at a time for
# FUZZTIME each, by hack/fuzz.sh (FUZZ_TARGETS, FUZZ_PARALLEL; crashers
# land in the package's testdata/fuzz/). Not part of test.
FUZZTIME ?= 60s
FUZZ_REPORT ?=
.PHONY: fuzz fuzz-short

## fuzz: every fuzz target for FUZZTIME (default 60s) each, -parallel 2; prints executions and findings per target (markdown table in FUZZ_REPORT when set), fails on any finding
fuzz:
	FUZZTIME=$(FUZZTIME) FUZZ_REPORT=$(FUZZ_REPORT) hack/fuzz.sh

## fuzz-short: make fuzz with FUZZTIME=5s (CI's short mode)
fuzz-short:
	FUZZTIME=5s FUZZ_REPORT=$(FUZZ_REPORT) hack/fuzz.sh

# Benchmarks (issues 5, 13): skiff against the raw CRI floor on two runtimes,
# skiff's managed containerd and an external containerd the harness starts
# with a plain CRI config (bench/README.md), and the real kubelet when
# KUBELET=/path/to/kubelet is set.
# Not part of test; results are noisy on a shared machine.
BENCH_BIN := bin/skiffbench
BENCH_RESULTS := bench/results
BENCH_QUICK_OUT := _output/bench
KUBELET ?=
KUBELET_VERSION := $(KUBERNETES_VERSION)
KUBELET_CACHE ?= $(HOME)/.cache/skiff/kubelet
.PHONY: bench-harness bench-kubelet

bench-harness:
	cd bench && CGO_ENABLED=0 $(GO) build -trimpath -o ../$(BENCH_BIN) ./cmd/skiffbench

## bench: full benchmark on both runtimes, API pods through a real control plane (root, ~40 min, ~55 with KUBELET; make controlplane once, ~12 min cold): report, JSON and plots under bench/results (latest.md)
bench: setup-runtime build build-apiserver images bench-harness
	@[ "$$(id -u)" = 0 ] || { echo "make bench: must run as root" >&2; exit 1; }
	cp=$$($(MAKE) -s controlplane) && $(BENCH_BIN) -mode full -skiff $(BIN) -images $(IMAGES_DIR) -out $(BENCH_RESULTS) -latest \
		-controlplane "$$cp" -apiserver $(APISERVER_BIN) -skiff-version "$$(git describe --always --dirty --tags 2>/dev/null || echo unknown)" $(if $(KUBELET),-kubelet $(KUBELET))

## bench-quick: a few pods of every scenario on both runtimes (root, ~3-4 min); output under _output/bench
bench-quick: setup-runtime build build-apiserver images bench-harness
	@[ "$$(id -u)" = 0 ] || { echo "make bench-quick: must run as root" >&2; exit 1; }
	cp=$$($(MAKE) -s controlplane) && $(BENCH_BIN) -mode quick -skiff $(BIN) -images $(IMAGES_DIR) -out $(BENCH_QUICK_OUT) \
		-controlplane "$$cp" -apiserver $(APISERVER_BIN) -skiff-version "$$(git describe --always --dirty --tags 2>/dev/null || echo unknown)" $(if $(KUBELET),-kubelet $(KUBELET))

## bench-kubelet: build kubelet $(KUBELET_VERSION) from the Go module proxy into $(KUBELET_CACHE); prints its path
bench-kubelet:
	@out=$(KUBELET_CACHE)/kubelet-$(KUBELET_VERSION); \
	if [ ! -x "$$out" ]; then \
		mkdir -p $(KUBELET_CACHE) && cd bench/kubelet && \
		$(GO) build -trimpath -o "$$out.tmp" -ldflags "$(call K8S_VERSION_LDFLAGS,$(KUBELET_VERSION))" . >&2 && mv "$$out.tmp" "$$out"; \
	fi; echo "$$out"

# The control plane of the API-source tests (issue 16): kube-apiserver,
# kube-controller-manager, kube-scheduler and kubectl of CONTROLPLANE_VERSION
# in one multi-call binary, built from the Go module proxy by the separate
# module test/controlplane (never imported by skiff's module); test/cluster
# runs it (SKIFF_CONTROLPLANE) with Debian's etcd.
CONTROLPLANE_VERSION := $(KUBERNETES_VERSION)
CONTROLPLANE_CACHE ?= $(HOME)/.cache/skiff/controlplane

.PHONY: controlplane controlplane-oldest

## controlplane: build kube-apiserver, -controller-manager, -scheduler and kubectl $(CONTROLPLANE_VERSION) (one binary, test/controlplane) into $(CONTROLPLANE_CACHE); prints its path
controlplane:
	@out=$(CONTROLPLANE_CACHE)/kube-controlplane-$(CONTROLPLANE_VERSION); \
	if [ ! -x "$$out" ]; then \
		mkdir -p $(CONTROLPLANE_CACHE) && cd test/controlplane && \
		$(GO) build -trimpath -o "$$out.tmp" -ldflags "$(call K8S_VERSION_LDFLAGS,$(CONTROLPLANE_VERSION))" . >&2 && mv "$$out.tmp" "$$out"; \
	fi; echo "$$out"

# The control plane of the oldest API server skiff joins
# (internal/k8sversion.OldestAPIServer), for make e2e-skew: test/controlplane's
# sources built with the go.mod of test/controlplane/oldest.
CONTROLPLANE_OLDEST_VERSION := $(shell sed -n 's/^\tOldestAPIServer = "\(v[0-9.]*\)"$$/\1/p' internal/k8sversion/version.go)

## controlplane-oldest: build the control plane $(CONTROLPLANE_OLDEST_VERSION) (test/controlplane's sources, test/controlplane/oldest's go.mod) into $(CONTROLPLANE_CACHE); prints its path
controlplane-oldest:
	@out=$(CONTROLPLANE_CACHE)/kube-controlplane-$(CONTROLPLANE_OLDEST_VERSION); \
	if [ ! -x "$$out" ]; then \
		tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
		cp test/controlplane/*.go test/controlplane/oldest/go.mod test/controlplane/oldest/go.sum "$$tmp"/ && \
		mkdir -p $(CONTROLPLANE_CACHE) && cd "$$tmp" && \
		$(GO) build -trimpath -o "$$out.tmp" -ldflags "$(call K8S_VERSION_LDFLAGS,$(CONTROLPLANE_OLDEST_VERSION))" . >&2 && mv "$$out.tmp" "$$out"; \
	fi; echo "$$out"

# metrics-server for the kubectl top test (issue 16): upstream's, built by
# the separate module test/metricsserver with the Kubernetes libraries of
# its release (not KUBERNETES_VERSION's: see its go.mod); test/cluster
# registers it (SKIFF_METRICS_SERVER).
METRICS_SERVER_VERSION := v0.8.0
METRICS_SERVER_CACHE ?= $(HOME)/.cache/skiff/metrics-server

.PHONY: metricsserver

## metricsserver: build metrics-server $(METRICS_SERVER_VERSION) (test/metricsserver) into $(METRICS_SERVER_CACHE); prints its path
metricsserver:
	@out=$(METRICS_SERVER_CACHE)/metrics-server-$(METRICS_SERVER_VERSION); \
	if [ ! -x "$$out" ]; then \
		mkdir -p $(METRICS_SERVER_CACHE) && cd test/metricsserver && \
		CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o "$$out.tmp" . >&2 && mv "$$out.tmp" "$$out"; \
	fi; echo "$$out"

# Helm for the chart test (issue 36): upstream's CLI, built by the separate
# module test/helm (never imported by skiff's module) with the Kubernetes
# libraries of its release; the e2e suite runs it (SKIFF_HELM). Bump
# HELM_VERSION with test/helm's go.mod.
HELM_VERSION := v4.3.1
HELM_CACHE ?= $(HOME)/.cache/skiff/helm

.PHONY: helm

## helm: build Helm $(HELM_VERSION) (test/helm) into $(HELM_CACHE); prints its path
helm:
	@out=$(HELM_CACHE)/helm-$(HELM_VERSION); \
	if [ ! -x "$$out" ]; then \
		mkdir -p $(HELM_CACHE) && cd test/helm && \
		CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o "$$out.tmp" . >&2 && mv "$$out.tmp" "$$out"; \
	fi; echo "$$out"

clean:
	rm -rf bin _output test/images/out

# The Kubernetes [NodeConformance] e2e tests against skiff (issue 16):
# e2e.test, agnhost, nnp and the ginkgo CLI of CONFORMANCE_VERSION, built
# by the separate module test/conformance/k8s (never imported by skiff's
# module) into CONFORMANCE_CACHE/<version>/; test/conformance (the driver)
# starts the control plane, a loopback registry mirroring registry.k8s.io
# with the e2e images rebuilt from those binaries and busybox, and one skiff
# agent, then runs the suite under the machine lock. Not part of make test.
CONFORMANCE_VERSION := $(KUBERNETES_VERSION)
CONFORMANCE_CACHE ?= $(HOME)/.cache/skiff/conformance
CONFORMANCE_OUT ?= _output/conformance
CONFORMANCE_FOCUS ?= \[NodeConformance\]
CONFORMANCE_SKIP ?=
CONFORMANCE_PROCS ?= 6
CONFORMANCE_TIMEOUT ?= 60m
CONFORMANCE_LOCK ?= /tmp/skiff-bench.lock
CONFORMANCE_BIN = $(CONFORMANCE_CACHE)/$(CONFORMANCE_VERSION)
CONFORMANCE_NODE ?= skiff
CONFORMANCE_ADDONS ?=
CONFORMANCE_VERBOSE ?=
CONFORMANCE_FULL_FOCUS ?= \[Conformance\]
# CoreDNS of the full run: test/coredns's go.mod pins it (kubeadm 1.37's).
COREDNS_VERSION := v1.14.6
COREDNS_BIN = $(CONFORMANCE_CACHE)/coredns-$(COREDNS_VERSION)

.PHONY: conformance conformance-bin

# conformance-bin: build e2e.test (~5-10 min), agnhost, nnp and ginkgo into $(CONFORMANCE_BIN), each once
conformance-bin:
	@set -e; c=$(CONFORMANCE_BIN); v=$(CONFORMANCE_VERSION); mkdir -p $$c; cd test/conformance/k8s; \
	if [ ! -x $$c/e2e.test ]; then echo "building e2e.test $$v (minutes)" >&2; \
		$(GO) test -c -vet=off -trimpath -o $$c/e2e.test.tmp -ldflags "$(call K8S_VERSION_LDFLAGS,$(CONFORMANCE_VERSION))" k8s.io/kubernetes/test/e2e && mv $$c/e2e.test.tmp $$c/e2e.test; fi; \
	if [ ! -x $$c/agnhost ]; then CGO_ENABLED=0 $(GO) build -trimpath -o $$c/agnhost.tmp k8s.io/kubernetes/test/images/agnhost && mv $$c/agnhost.tmp $$c/agnhost; fi; \
	if [ ! -x $$c/nnp ]; then CGO_ENABLED=0 $(GO) build -trimpath -o $$c/nnp.tmp k8s.io/kubernetes/test/images/nonewprivs && mv $$c/nnp.tmp $$c/nnp; fi; \
	if [ ! -x $$c/ginkgo ]; then $(GO) build -trimpath -o $$c/ginkgo.tmp github.com/onsi/ginkgo/v2/ginkgo && mv $$c/ginkgo.tmp $$c/ginkgo; fi

## conformance: the Kubernetes $(CONFORMANCE_VERSION) [NodeConformance] e2e tests with skiff as the only node (root, ~35 min on 2 cores, ~25 without [Slow]; CONFORMANCE_FOCUS/SKIP/PROCS/TIMEOUT, CONFORMANCE_NODE=kubelet for the upstream kubelet); summary in $(CONFORMANCE_OUT)/summary.md
conformance: setup build images conformance-bin $(if $(filter 1,$(CONFORMANCE_ADDONS)),conformance-addons-bin) $(if $(filter skiff-control-plane,$(CONFORMANCE_NODE)),build-apiserver)
	@[ "$$(id -u)" = 0 ] || { echo "make conformance: must run as root" >&2; exit 1; }
	cp=$$($(MAKE) -s controlplane) && c=$(CONFORMANCE_BIN) && \
	node="-node $(CONFORMANCE_NODE)" && if [ "$(CONFORMANCE_NODE)" = kubelet ]; then node="$$node -kubelet $$($(MAKE) -s bench-kubelet)"; fi && \
	addons= && if [ "$(CONFORMANCE_ADDONS)" = 1 ]; then addons="-addons -kube-proxy $$c/kube-proxy -coredns $(COREDNS_BIN)"; fi && \
	k8s=$$(cd test/conformance/k8s && $(GO) list -m -f '{{.Dir}}' k8s.io/kubernetes) && \
	$(GO) build -o _output/conformance-driver ./test/conformance && \
	flock $(CONFORMANCE_LOCK) _output/conformance-driver -out $(CONFORMANCE_OUT) $$node $$addons \
		-e2e $$c/e2e.test -ginkgo $$c/ginkgo -agnhost $$c/agnhost -nnp $$c/nnp \
		-controlplane $$cp -skiff $(BIN) -apiserver $(APISERVER_BIN) -pause $(BIN)-pause -images $(IMAGES_DIR) -k8s-src $$k8s \
		-focus '$(CONFORMANCE_FOCUS)' -skip '$(CONFORMANCE_SKIP)' -procs $(CONFORMANCE_PROCS) -timeout $(CONFORMANCE_TIMEOUT) $(if $(filter 1,$(CONFORMANCE_VERBOSE)),-verbose)

.PHONY: conformance-kubelet conformance-full conformance-addons-bin
## conformance-kubelet: make conformance with the upstream kubelet $(KUBELET_VERSION) as the node (on skiff's containerd), for the side-by-side pass rate; summary in $(CONFORMANCE_OUT)-kubelet/summary.md
conformance-kubelet:
	$(MAKE) conformance CONFORMANCE_NODE=kubelet CONFORMANCE_OUT=$(CONFORMANCE_OUT)-kubelet

## conformance-full: the full [Conformance] suite (CONFORMANCE_FOCUS) with kube-proxy (nftables) and CoreDNS as pods on the node (root; hours on 2 cores); summary in _output/conformance-full/summary.md
conformance-full:
	$(MAKE) conformance CONFORMANCE_ADDONS=1 CONFORMANCE_FOCUS='$(CONFORMANCE_FULL_FOCUS)' CONFORMANCE_TIMEOUT=4h CONFORMANCE_OUT=_output/conformance-full$(if $(filter kubelet,$(CONFORMANCE_NODE)),-kubelet)

.PHONY: conformance-control-plane
## conformance-control-plane: the full [Conformance] suite against `skiff agent --control-plane` as the whole cluster (its own API server, controllers, service proxy and DNS; root, ~1 h on 2 cores); summary with the pass rate per SIG in _output/conformance-control-plane/summary.md
conformance-control-plane:
	$(MAKE) conformance CONFORMANCE_NODE=skiff-control-plane CONFORMANCE_FOCUS='$(CONFORMANCE_FULL_FOCUS)' CONFORMANCE_TIMEOUT=4h CONFORMANCE_OUT=_output/conformance-control-plane CONFORMANCE_VERBOSE=1

# conformance-addons-bin: build kube-proxy $(CONFORMANCE_VERSION) (~10 min cold) into $(CONFORMANCE_BIN) and CoreDNS $(COREDNS_VERSION) (test/coredns, ~9 min cold) into $(CONFORMANCE_CACHE), each once
conformance-addons-bin:
	@set -e; c=$(CONFORMANCE_BIN); mkdir -p $$c; \
	if [ ! -x $$c/kube-proxy ]; then echo "building kube-proxy $(CONFORMANCE_VERSION) (minutes)" >&2; \
		(cd test/conformance/k8s && CGO_ENABLED=0 $(GO) build -trimpath -o $$c/kube-proxy.tmp -ldflags "-s -w $(call K8S_VERSION_LDFLAGS,$(CONFORMANCE_VERSION))" k8s.io/kubernetes/cmd/kube-proxy) && mv $$c/kube-proxy.tmp $$c/kube-proxy; fi; \
	if [ ! -x $(COREDNS_BIN) ]; then echo "building CoreDNS $(COREDNS_VERSION) (minutes)" >&2; \
		(cd test/coredns && CGO_ENABLED=0 $(GO) build -trimpath -tags grpcnotrace -ldflags '-s -w' -o $(COREDNS_BIN).tmp .) && mv $(COREDNS_BIN).tmp $(COREDNS_BIN); fi

.PHONY: print-kubernetes-version
# print-kubernetes-version: the Kubernetes release of internal/k8sversion (hack/bump-kubernetes.sh reads it)
print-kubernetes-version:
	@echo $(KUBERNETES_VERSION)
