package main

import (
	"testing"

	"github.com/skiffnode/skiff/internal/deadcode"
)

// buildTags are the tags make build gives the agent (the Makefile's
// BUILD_TAGS).
const buildTags = "grpcnotrace"

// TestLinkerKeepsDeadCodeElimination: the agent, built as make build
// builds it, reaches no function that calls reflect's Method or
// MethodByName with a computed name (the linker's <ReflectMethod> mark).
// One such function (html/template's, through grpc's golang.org/x/net/trace
// without the grpcnotrace tag) makes the linker keep every exported method
// of every reachable type: +6 MB of binary, nearly all of it resident in
// the agent (docs/decisions/0073-built-grpcnotrace.md). The test prints
// the chain that reaches it.
func TestLinkerKeepsDeadCodeElimination(t *testing.T) {
	deadcode.Check(t, "../../Makefile", buildTags)
}
