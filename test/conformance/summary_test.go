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
