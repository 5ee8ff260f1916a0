//go:build tools

// Package runtime lists the commands `make runtime` builds, so that go mod
// tidy keeps their modules in go.mod and go.sum.
package runtime

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/opencontainers/runc"
)
