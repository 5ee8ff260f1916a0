package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// manifestNames are the .yaml files in dir, without the suffix.
func manifestNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func TestWritesPodsChurn(t *testing.T) {
	dir := t.TempDir()
	p := &writesPods{a: &agent{name: "skiff", prefix: "s", dir: dir}, cpuMilli: 10}
	pods, err := p.add(3)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"s-w-0-bench", "s-w-1-bench", "s-w-2-bench"}; !slices.Equal(slices.Sorted(slices.Values(pods)), want) {
		t.Fatalf("add: pods %v, want %v", pods, want)
	}
	// Two replacements, at 100 and 200 ms; one where the machine is so
	// slow that a sleep overshoots by half a period.
	n, err := p.churn(context.Background(), 250*time.Millisecond, 100*time.Millisecond)
	if err != nil || n < 1 || n > 2 {
		t.Fatalf("churn = %d, %v; want 2 replaced", n, err)
	}
	// The n oldest went, n new ones came; the set stays three.
	want := []string{fmt.Sprintf("s-w-%d", n), fmt.Sprintf("s-w-%d", n+1), fmt.Sprintf("s-w-%d", n+2)}
	if got := manifestNames(t, dir); !slices.Equal(got, want) {
		t.Fatalf("manifests after the churn: %v, want %v", got, want)
	}
	if !slices.Equal(p.names, want) {
		t.Fatalf("names %v, want %v (oldest first)", p.names, want)
	}
	data, err := os.ReadFile(filepath.Join(dir, want[2]+".yaml"))
	if err != nil || !strings.Contains(string(data), "readinessProbe") {
		t.Fatalf("the new pod's manifest is not a density pod with its probe: %v\n%s", err, data)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.churn(ctx, time.Second, 100*time.Millisecond); err == nil {
		t.Fatal("churn on a cancelled context: no error")
	}
}

func TestAgentFiles(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "kubelet")
	for _, f := range []string{filepath.Join(root, "pods", "u1", "etc-hosts"), filepath.Join(root, "manifests", "a.yaml"), filepath.Join(base, "kubelet.log")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a := &agent{name: "kubelet", proc: &process{log: filepath.Join(base, "kubelet.log")}}
	snap, err := agentFiles(writeTargets{agent: a, root: root, skip: []string{filepath.Join(root, "manifests")}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for p := range snap {
		got = append(got, p)
	}
	slices.Sort(got)
	// The log outside the root by its name; the skipped directory left out.
	if want := []string{"kubelet.log", "pods/u1/etc-hosts"}; !slices.Equal(got, want) {
		t.Fatalf("agentFiles = %v, want %v", got, want)
	}
}
