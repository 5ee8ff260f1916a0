package node

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestCheckCgroupVersion: the version found is logged; on cgroup v1 (a
// directory that is not cgroup2fs) --fail-cgroupv1 refuses to start, and
// without it skiff runs.
func TestCheckCgroupVersion(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		failV1  bool
		wantErr bool
	}{{false, false}, {true, true}} {
		var buf bytes.Buffer
		err := checkCgroupVersion(dir, tc.failV1, slog.New(slog.NewTextHandler(&buf, nil)))
		if (err != nil) != tc.wantErr {
			t.Fatalf("failV1=%v: err %v, want error %v", tc.failV1, err, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "--fail-cgroupv1") {
			t.Errorf("error %q does not name --fail-cgroupv1", err)
		}
		if !strings.Contains(buf.String(), `msg="cgroup version" version=v1`) {
			t.Errorf("log %q does not say cgroup v1", buf.String())
		}
	}
	if err := checkCgroupVersion(dir+"/missing", false, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("a missing mountpoint is not an error")
	}
}
