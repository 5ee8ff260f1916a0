package report

import (
	"bytes"
	"strings"
	"testing"
)

func sampleBurst() *Burst {
	return &Burst{SettleS: 20,
		Pods: []BurstPod{{"init2", "two inits"}, {"oom", "OOM"}, {"crash", "crash loop"}},
		Skiff: &BurstRun{FirstStartS: map[string]float64{"init2": 1.0, "oom": 2.0, "crash": 4.0},
			Observed: map[string]string{"oom": "app: exited 137 OOMKilled, 2 runs"}},
		Kubelet: &BurstRun{FirstStartS: map[string]float64{"init2": 2.0, "oom": 1.0, "crash": 5.0},
			Observed: map[string]string{"crash": "app: exited 1 Error, 2 runs"}},
	}
}

func burstMarkdown(t *testing.T, b *Burst) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Markdown(&buf, &Results{Runs: []Run{{Runtime: RuntimeExternal, Burst: b}}}, IssueLimits, Plots{}); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestBurstMarkdown(t *testing.T) {
	md := burstMarkdown(t, sampleBurst())
	for _, want := range []string{
		"### 1.2 Burst, external (3 different pods written at once)",
		"| burst, 3 pods: each pod's first container vs kubelet | no pod later than under the kubelet | 1 of 3 later: oom | not met |",
		"| pod | covers | skiff | kubelet | skiff vs kubelet |",
		"| init2 | two inits | 1.000 s | 2.000 s | 0.50x |",
		"| oom | OOM | 2.000 s | 1.000 s | 2.00x |",
		"| **median** | | 2.000 s | 2.000 s | 1.00x |",
		"| **max** | | 4.000 s | 5.000 s | 0.80x |",
		"**not met** (1 of 3 later: oom)",
		"What the pods did, 20 s after",
		"| oom | app: exited 137 OOMKilled, 2 runs | - |",
		"| crash | - | app: exited 1 Error, 2 runs |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("burst report lacks %q\n%s", want, md)
		}
	}
	if strings.Contains(md, "NaN") {
		t.Errorf("report contains NaN:\n%s", md)
	}
}

func TestBurstMarkdownWithoutKubelet(t *testing.T) {
	b := sampleBurst()
	b.Kubelet = nil
	md := burstMarkdown(t, b)
	for _, want := range []string{
		"| init2 | two inits | 1.000 s | - | - |",
		"| **median** | | 2.000 s | - | - |",
		"kubelet: not run (no kubelet)",
		"| burst, 3 pods: each pod's first container vs kubelet | no pod later than under the kubelet | - | not run |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("burst report lacks %q\n%s", want, md)
		}
	}
	if strings.Contains(md, "NaN") {
		t.Errorf("report contains NaN:\n%s", md)
	}
}

func TestBurstTarget(t *testing.T) {
	b := sampleBurst()
	if st, late := BurstTarget(b); st != NotMet || len(late) != 1 || late[0] != "oom" {
		t.Errorf("BurstTarget = %q, %v; want not met, [oom]", st, late)
	}
	b.Kubelet.FirstStartS["oom"] = 2.0 // equal is no later
	if st, late := BurstTarget(b); st != Met || late != nil {
		t.Errorf("BurstTarget = %q, %v; want met", st, late)
	}
	delete(b.Kubelet.FirstStartS, "crash")
	if st, _ := BurstTarget(b); st != Unknown {
		t.Errorf("BurstTarget with a pod missing = %q, want not measured", st)
	}
	if st, _ := BurstTarget(&Burst{Skiff: b.Skiff}); st != Unknown {
		t.Errorf("BurstTarget without kubelet = %q, want not measured", st)
	}
	if st, _ := BurstTarget(nil); st != Unknown {
		t.Error("BurstTarget(nil) must be unknown")
	}
}
