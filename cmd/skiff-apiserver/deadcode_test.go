package main

import (
	"testing"

	"github.com/skiffnode/skiff/internal/deadcode"
)

// buildTags are the tags make build-apiserver gives the shim (the
// Makefile's BUILD_TAGS).
const buildTags = "grpcnotrace"

// TestLinkerKeepsDeadCodeElimination: skiff-apiserver, built as make
// build-apiserver builds it, reaches no function that calls reflect's
// Method or MethodByName with a computed name (the linker's
// <ReflectMethod> mark), as cmd/skiff's test of the same name checks for
// the agent. Such a function makes the linker keep every exported method
// of every reachable type: the shim had two (html/template through etcd's
// embed and golang.org/x/net/trace; go-cmp's appendTypeName through etcd's
// backend verification), and without them its stripped binary went from
// 80.7 to 58.6 MB, 10 MB less RSS (third_party/README.md,
// shim/etcd/internal/embed/SKIFF.md). The test prints the chain that
// reaches a new one.
func TestLinkerKeepsDeadCodeElimination(t *testing.T) {
	deadcode.Check(t, "../../Makefile", buildTags)
}
