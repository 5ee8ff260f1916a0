package main

import "testing"

func TestSIGTable(t *testing.T) {
	passed := []string{"[sig-apps] Job should run", "[sig-apps] Deployment should roll", "[sig-node] Pods should start", "Conformance Tests should have two nodes"}
	failed := []string{"[sig-node] Pods should get a host IP", "[sig-network] DNS should resolve"}
	want := "| SIG | passed | failed | pass rate |\n|---|---|---|---|\n" +
		"| apps | 2 | 0 | 100 % |\n" +
		"| network | 0 | 1 | 0 % |\n" +
		"| node | 1 | 1 | 50 % |\n" +
		"| none | 1 | 0 | 100 % |\n\n"
	if got := sigTable(passed, failed); got != want {
		t.Errorf("sigTable:\n%s\nwant:\n%s", got, want)
	}
}

// TestCasesFromLog: ginkgo's verbose output gives each spec's name (its
// text less "[It]" and the label list) and state, a failure its message.
func TestCasesFromLog(t *testing.T) {
	log := `Running Suite
------------------------------
• [0.512 seconds]
[sig-apps] Job should run a job to completion [Conformance] [sig-apps, Conformance]
k8s.io/kubernetes@v1.37.2/test/e2e/apps/job.go:1
  Timeline >>
  [FAILED] in [It] - not a spec line
------------------------------
• [FAILED] [0.097 seconds]
[sig-scheduling] LimitRange [It] should list LimitRanges [Conformance] [sig-scheduling, Conformance]
  Timeline >>
  [FAILED] in [It] - k8s.io/kubernetes@v1.37.2/test/e2e/scheduling/limit_range.go:256 @ 11/30/26
  << Timeline
  [FAILED] Failed to create limitRange: the server could not find the requested resource
  In [It] at: k8s.io/kubernetes@v1.37.2/test/e2e/scheduling/limit_range.go:256
------------------------------
`
	r := casesFromLog(log)
	cases := r.Suites[0].Cases
	if len(cases) != 2 {
		t.Fatalf("cases %+v, want 2", cases)
	}
	if c := cases[0]; c.Name != "[It] [sig-apps] Job should run a job to completion [Conformance]" || c.Status != "passed" || c.Failure != nil {
		t.Errorf("passed spec: %+v", c)
	}
	if c := cases[1]; c.Name != "[It] [sig-scheduling] LimitRange should list LimitRanges [Conformance]" || c.Status != "failed" ||
		c.Failure == nil || c.Failure.Message != "[FAILED] Failed to create limitRange: the server could not find the requested resource" {
		t.Errorf("failed spec: %+v", c)
	}
}
