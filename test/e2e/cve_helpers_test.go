package e2e

import (
	"context"
	"testing"
	"time"
)

// execOut runs cmd in a container and returns its stdout and stderr
// whatever its exit code: for attempts that are meant to fail. An error
// of the runtime itself fails the test.
func (e *Env) execOut(t *testing.T, containerID string, cmd ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := e.CRI(t).ExecSync(ctx, containerID, cmd, 30*time.Second)
	if err != nil {
		t.Fatalf("exec %v: %v", cmd, err)
	}
	return string(res.Stdout) + string(res.Stderr)
}
