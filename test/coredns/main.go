// Command coredns is github.com/coredns/coredns's, with all its plugins,
// for the cluster DNS of the full conformance run (make conformance-full):
// upstream's coredns.go, built by this separate module with CoreDNS's own
// library versions (it does not follow internal/k8sversion). Never
// imported by skiff's module. Bump COREDNS_VERSION in the Makefile with it.
package main

import (
	_ "github.com/coredns/coredns/core/plugin" // Plug in CoreDNS.
	"github.com/coredns/coredns/coremain"
)

func main() {
	coremain.Run()
}
