package e2e

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestTerminationMessages_A8_A55 checks terminated.message per
// terminationMessagePolicy: File reads terminationMessagePath (default
// /dev/termination-log, or a custom path); FallbackToLogsOnError uses the
// log tail only when the container failed and the file is empty.
func TestTerminationMessages_A8_A55(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	sh := func(name, script string, fields ...string) string {
		return container(name, busyboxImage, []string{"sh", "-c", script}, nil, fields...)
	}
	const fallback = "terminationMessagePolicy: FallbackToLogsOnError"
	e.WriteManifest(t, "termmsg.yaml", podSpec("termmsg", []string{"restartPolicy: Never"}, nil, []string{
		testserver("file", 0, 0, 0, []string{"--termination-message=bye from file", "--exit-after=1s"}),
		testserver("custom-path", 0, 0, 0, []string{"--termination-message=custom path",
			"--termination-message-path=/tmp/msg", "--exit-after=1s", "--exit-code=4"},
			"terminationMessagePath: /tmp/msg"),
		sh("fallback", "echo first line; echo last words; exit 1", fallback),
		sh("fallback-ok", "echo fine; exit 0", fallback),
		sh("file-policy-error", "echo oops; exit 2"),
		sh("fallback-file-wins", "echo from-file > /dev/termination-log; echo log line; exit 1", fallback),
	}))
	// The same message shows in lastState once the container restarted.
	e.WriteManifest(t, "termmsg-last.yaml", podSpec("termmsg-last", []string{"terminationGracePeriodSeconds: 5"}, nil, []string{
		testserver("app", 0, 0, 0, []string{"--termination-message=crash report", "--exit-after=1s", "--exit-code=3"}),
	}))

	p := e.WaitForPod(t, PodName("termmsg"), phaseIs(v1.PodFailed), podStartTimeout)
	for _, want := range []struct {
		name, message string
		exit          int32
	}{
		{"file", "bye from file", 0},
		{"custom-path", "custom path", 4},
		{"fallback", "first line\nlast words\n", 1},
		{"fallback-ok", "", 0},
		{"file-policy-error", "", 2},
		{"fallback-file-wins", "from-file\n", 1},
	} {
		term := statusOf(t, p, want.name).State.Terminated
		if term == nil {
			t.Errorf("%s: not terminated: %s", want.name, dump(statusOf(t, p, want.name)))
			continue
		}
		if term.Message != want.message || term.ExitCode != want.exit {
			t.Errorf("%s: exit %d message %q, want exit %d message %q", want.name, term.ExitCode, term.Message, want.exit, want.message)
		}
	}

	p = e.WaitForPod(t, PodName("termmsg-last"), containerCond("app", restartCountAtLeast(1)), lifecycleTimeout)
	last := statusOf(t, p, "app").LastTerminationState.Terminated
	if last == nil || last.Message != "crash report" || last.ExitCode != 3 || last.Reason != "Error" {
		t.Errorf("lastState %s, want terminated with exit 3, reason Error, message %q", dump(last), "crash report")
	}
}
