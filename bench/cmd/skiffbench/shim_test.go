package main

import (
	"math"
	"strings"
	"testing"
)

func TestShimReadyFromLog(t *testing.T) {
	started := `time=2026-11-25T04:30:00.100Z level=INFO msg="started skiff-apiserver" pid=42 dataDir=/r/apiserver log=/r/apiserver/log`
	ready := `time=2026-11-25T04:30:00.850Z level=INFO msg="skiff-apiserver ready" url=https://127.0.0.1:6443 adminKubeconfig=/r/admin.kubeconfig`
	restarted := `time=2026-11-25T04:31:00.000Z level=INFO msg="started skiff-apiserver" pid=43 dataDir=/r/apiserver log=/r/apiserver/log`
	readyAgain := `time=2026-11-25T04:31:00.300Z level=INFO msg="skiff-apiserver ready" url=https://127.0.0.1:6443 adminKubeconfig=/r/admin.kubeconfig`
	other := `time=2026-11-25T04:30:00.500Z level=INFO msg="node registered" node=bench`
	for _, tc := range []struct {
		name    string
		lines   []string
		want    float64
		wantErr string
	}{
		{"one start", []string{other, started, other, ready}, 0.75, ""},
		{"the last start", []string{started, ready, restarted, readyAgain}, 0.3, ""},
		{"not ready yet", []string{started, ready, restarted}, 0, "no \"started skiff-apiserver\" line followed by"},
		{"ready without a start", []string{ready}, 0, "no \"started skiff-apiserver\""},
		{"no time", []string{`level=INFO msg="started skiff-apiserver"`}, 0, "without time="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := shimReadyFromLog(strings.Join(tc.lines, "\n") + "\n")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
