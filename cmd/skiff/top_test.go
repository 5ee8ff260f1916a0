package main

import (
	"strings"
	"testing"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func TestPrintTop(t *testing.T) {
	cores, ws := uint64(250_000_000), uint64(64<<20)
	sum := &statsapi.Summary{Pods: []statsapi.PodStats{{
		PodRef:     statsapi.PodReference{Name: "web", Namespace: "default"},
		CPU:        &statsapi.CPUStats{UsageNanoCores: &cores},
		Memory:     &statsapi.MemoryStats{WorkingSetBytes: &ws},
		Containers: []statsapi.ContainerStats{{Name: "app", Memory: &statsapi.MemoryStats{WorkingSetBytes: &ws}}},
	}}}
	var b strings.Builder
	if err := printTop(&b, sum, false); err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(strings.Split(b.String(), "\n")[1]); strings.Join(got, " ") != "default web 250m 64Mi" {
		t.Errorf("pods row = %q\n%s", got, b.String())
	}
	b.Reset()
	if err := printTop(&b, sum, true); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "NAMESPACE   POD   NAME") || !strings.Contains(b.String(), "app    <unknown>") {
		t.Errorf("containers table:\n%s", b.String())
	}
}
