package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestManifests(t *testing.T) {
	tests := []struct {
		name  string
		kind  podKind
		check func(t *testing.T, p *v1.Pod)
	}{
		{"startup: init then app", kindStartup, func(t *testing.T, p *v1.Pod) {
			if len(p.Spec.InitContainers) != 1 || p.Spec.InitContainers[0].Image != busyboxImage {
				t.Errorf("init containers = %+v", p.Spec.InitContainers)
			}
		}},
		{"density: requests and a 10 s exec readiness probe", kindDensity, func(t *testing.T, p *v1.Pod) {
			c := p.Spec.Containers[0]
			if c.Resources.Requests.Cpu().MilliValue() != 10 || c.Resources.Requests.Memory().Value() != 16<<20 {
				t.Errorf("requests = %v", c.Resources.Requests)
			}
			if c.ReadinessProbe == nil || c.ReadinessProbe.Exec == nil || c.ReadinessProbe.PeriodSeconds != 10 {
				t.Errorf("readiness probe = %+v", c.ReadinessProbe)
			}
		}},
		{"sigterm: testserver", kindSigterm, func(t *testing.T, p *v1.Pod) {
			if c := p.Spec.Containers[0]; c.Image != testserverImage || c.Command != nil || !slices.Equal(c.Args, testserverArgs) {
				t.Errorf("container = %+v", c)
			}
		}},
		{"liveness: exec probe every second, one failure", kindLiveness, func(t *testing.T, p *v1.Pod) {
			lp := p.Spec.Containers[0].LivenessProbe
			if lp == nil || lp.PeriodSeconds != livenessPeriod || lp.FailureThreshold != 1 {
				t.Errorf("liveness probe = %+v", lp)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := manifest("x", tt.kind, 1)
			if err != nil {
				t.Fatal(err)
			}
			var p v1.Pod
			if err := yaml.UnmarshalStrict(data, &p); err != nil {
				t.Fatalf("manifest does not decode: %v\n%s", err, data)
			}
			if p.Kind != "Pod" || p.Name != "x" || p.Namespace != agentNamespace || *p.Spec.TerminationGracePeriodSeconds != graceSeconds {
				t.Errorf("pod header = %+v", p.ObjectMeta)
			}
			if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Name != "app" {
				t.Fatalf("containers = %+v", p.Spec.Containers)
			}
			tt.check(t, &p)
		})
	}
}

func TestManifestEditChangesContent(t *testing.T) {
	a, _ := manifest("x", kindStartup, 1)
	b, _ := manifest("x", kindStartup, 2)
	if string(a) == string(b) {
		t.Error("rev 2 renders the same manifest: an edit would not change the static pod's UID")
	}
}

func TestFloorPodMirrorsManifest(t *testing.T) {
	if p := floorPod("f", kindStartup, 1); p.Init == nil || p.Namespace != floorNamespace {
		t.Errorf("startup floor pod = %+v", p)
	}
	if p := floorPod("f", kindDensity, 1); p.App.CPUShares != 10 {
		t.Errorf("density floor pod shares = %d, want 10 (10m)", p.App.CPUShares)
	}
	if a, b := floorPod("f", kindStartup, 1), floorPod("f", kindStartup, 2); a.UID == b.UID {
		t.Error("floor edit keeps the UID")
	}
}

func TestWriteAndRemoveManifests(t *testing.T) {
	dir := t.TempDir()
	before := time.Now()
	t0, err := writeManifests(dir, map[string][]byte{"a": []byte("x"), "b": []byte("y")})
	if err != nil {
		t.Fatal(err)
	}
	if t0.Before(before) {
		t.Errorf("t0 %v before the call %v", t0, before)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"a.yaml", "b.yaml"}) {
		t.Errorf("dir holds %v, want only a.yaml, b.yaml (no temporary files)", names)
	}
	if _, err := removeManifests(dir, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left: %v", entries)
	}
	if _, err := removeManifests(dir, []string{"a"}); err == nil {
		t.Error("removing a missing manifest: want error")
	}
}

func TestSpanOf(t *testing.T) {
	t0 := time.Unix(100, 0)
	first, last := spanOf(map[string]time.Time{"a": t0.Add(3 * time.Second), "b": t0, "c": t0.Add(time.Second)})
	if !first.Equal(t0) || !last.Equal(t0.Add(3*time.Second)) {
		t.Errorf("spanOf = %v, %v", first, last)
	}
}

func TestDensityCPUMilliFitsTheNode(t *testing.T) {
	tests := []struct {
		n, cores int
		want     int64
	}{
		{110, 2, 10}, {200, 2, 10}, {250, 2, 8}, {250, 16, 10}, {5000, 2, 1}, {0, 2, 10},
	}
	for _, tt := range tests {
		if got := densityCPUMilli(tt.n, tt.cores); got != tt.want {
			t.Errorf("densityCPUMilli(%d, %d) = %d, want %d", tt.n, tt.cores, got, tt.want)
		}
	}
	data, err := densityManifest("d", 8)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "cpu: 8m") || !strings.Contains(string(data), "memory: 16Mi") {
		t.Errorf("density manifest with 8m:\n%s", data)
	}
}
