package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// cliResult is the outcome of one CLI run.
type cliResult struct {
	stdout, stderr string
	code           int
}

func (r cliResult) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
}

// skiffSplit runs a skiff CLI subcommand against this suite's agent with
// stdout and stderr kept apart. --root-dir goes before a "--", so that it
// is not taken for part of an exec'd command.
func (e *Env) skiffSplit(t *testing.T, args ...string) cliResult {
	t.Helper()
	return e.skiffSplitIn(t, nil, args...)
}

// skiffSplitIn is skiffSplit with stdin (nil: none).
func (e *Env) skiffSplitIn(t *testing.T, stdin io.Reader, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	flags := []string{"--root-dir", e.root()}
	if i := slices.Index(args, "--"); i >= 0 {
		args = slices.Concat(args[:i], flags, args[i:])
	} else {
		args = append(slices.Clone(args), flags...)
	}
	cmd := exec.CommandContext(ctx, e.s.Bin, args...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := cliResult{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		res.code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("skiff %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// cliExecPod runs the test server (with a readiness probe) beside a busybox
// helper container.
func cliExecPod() string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: cliexec
  labels:
    app: cliexec
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    ports:
    - name: http
      containerPort: 8080
    readinessProbe:
      httpGet:
        path: /ready
        port: 8080
      periodSeconds: 2
  - name: helper
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`, testserverImage, busyboxImage)
}

func TestCLIExec_H25(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "cliexec.yaml", cliExecPod())
	pod := PodName("cliexec")
	e.WaitForPod(t, pod, runningAndReady, podStartTimeout)

	// Output and exit code pass through; the test server image has busybox.
	r := e.skiffSplit(t, "exec", pod, "-c", "app", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
	if r.code != 3 || r.stdout != "out\n" || r.stderr != "err\n" {
		t.Errorf("skiff exec -c app: %s; want exit 3, stdout \"out\\n\", stderr \"err\\n\"", r)
	}

	// Without -c: the first app container, with kubectl's note on stderr.
	r = e.skiffSplit(t, "exec", pod, "--", "sh", "-c", "test -x /testserver && echo in app")
	wantNote := `Defaulted container "app" out of: app, helper` + "\n"
	if r.code != 0 || r.stdout != "in app\n" || r.stderr != wantNote {
		t.Errorf("skiff exec without -c: %s; want exit 0, stdout \"in app\\n\", stderr %q", r, wantNote)
	}
	r = e.skiffSplit(t, "exec", pod, "-c", "helper", "--", "sh", "-c", "test -e /testserver || echo in helper")
	if r.code != 0 || r.stdout != "in helper\n" || r.stderr != "" {
		t.Errorf("skiff exec -c helper: %s; want exit 0 and \"in helper\\n\"", r)
	}

	// -i streams stdin through the agent's /exec (the runtime's streaming
	// session); the end of stdin is not passed on, so the command reads a
	// line and exits by itself, with its exit code.
	r = e.skiffSplitIn(t, strings.NewReader("hello\n"), "exec", "-i", pod, "-c", "helper", "--", "sh", "-c", "read x; echo got $x; exit 3")
	if r.code != 3 || r.stdout != "got hello\n" {
		t.Errorf("skiff exec -i: %s; want exit 3 and \"got hello\\n\"", r)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", pod, "-c", "nope", "--", "true"}, `container "nope" not found in pod ` + pod},
		{[]string{"exec", "nope-" + nodeName, "--", "true"}, `pods "nope-` + nodeName + `" not found`},
	} {
		r := e.skiffSplit(t, tt.args...)
		if r.code != 1 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("skiff %s: %s; want exit 1 and stderr with %q", strings.Join(tt.args, " "), r, tt.want)
		}
	}
}

func TestCLIDescribeAndEvents_A54_A34_D6(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "cliexec.yaml", cliExecPod())
	pod := PodName("cliexec")
	e.WaitForPod(t, pod, runningAndReady, podStartTimeout)

	// The agent's lifecycle events, per container, in the order they happen.
	type event struct{ reason, message string }
	var wantEvents []event
	for _, c := range []struct{ name, image string }{{"app", testserverImage}, {"helper", busyboxImage}} {
		wantEvents = append(wantEvents,
			event{"Pulled", fmt.Sprintf("Container image %q already present on machine", c.image)},
			event{"Created", "Created container: " + c.name},
			event{"Started", "Started container " + c.name})
	}
	wantDescribe := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Name:\s+` + regexp.QuoteMeta(pod) + `$`),
		regexp.MustCompile(`(?m)^Namespace:\s+default$`),
		regexp.MustCompile(`(?m)^Node:\s+` + nodeName + `/\S+$`),
		regexp.MustCompile(`(?m)^Labels:\s+app=cliexec$`),
		regexp.MustCompile(`(?m)^Status:\s+Running$`),
		regexp.MustCompile(`(?m)^  app:\n    Container ID:\s+containerd://[0-9a-f]+\n    Image:\s+` + regexp.QuoteMeta(testserverImage) + `\n    Image ID:\s+\S+\n    Port:\s+8080/TCP \(http\)\n`),
		regexp.MustCompile(`(?m)^    State:\s+Running\n      Started:\s+\w{3}, \d{2} \w{3} \d{4} [\d:]{8} [-+]\d{4}\n    Ready:\s+True\n    Restart Count:\s+0$`),
		regexp.MustCompile(`(?m)^    Readiness:\s+http-get http://:8080/ready delay=0s timeout=1s period=2s #success=1 #failure=3$`),
		regexp.MustCompile(`(?m)^  Ready\s+True $`),
		regexp.MustCompile(`(?m)^QoS Class:\s+BestEffort$`),
	}
	// "cliexec" is a name prefix, as kubectl describe accepts.
	var out string
	eventually(t, 30*time.Second, func() (bool, string) {
		r := e.skiffSplit(t, "describe", "pod", "cliexec")
		out = r.stdout
		if r.code != 0 {
			return false, r.String()
		}
		for _, re := range wantDescribe {
			if !re.MatchString(out) {
				return false, fmt.Sprintf("skiff describe pod output lacks %s:\n%s", re, out)
			}
		}
		for _, ev := range wantEvents {
			row := regexp.MustCompile(`(?m)^  Normal\s+` + ev.reason + `\s+.+?\s+skiff\s+` + regexp.QuoteMeta(ev.message) + `$`)
			if !row.MatchString(out) {
				return false, fmt.Sprintf("skiff describe pod output lacks the event %s:\n%s", row, out)
			}
		}
		return true, ""
	})
	if n := len(regexp.MustCompile(`(?m)^    State:\s+Running$`).FindAllString(out, -1)); n != 2 {
		t.Errorf("describe shows %d running containers, want 2:\n%s", n, out)
	}

	// skiff events lists the same events, oldest first.
	r := e.skiffSplit(t, "events", "--for", "pod/"+pod)
	if r.code != 0 {
		t.Fatalf("skiff events: %s", r)
	}
	header := regexp.MustCompile(`^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\n`)
	if !header.MatchString(r.stdout) {
		t.Errorf("skiff events header:\n%s", r.stdout)
	}
	prev := -1
	for i, ev := range wantEvents {
		if i%3 == 0 {
			prev = -1 // a new container: its Pulled, Created, Started follow, oldest first
		}
		row := regexp.MustCompile(`(?m)^.+?\s+Normal\s+` + ev.reason + `\s+Pod/` + regexp.QuoteMeta(pod) + `\s+` + regexp.QuoteMeta(ev.message) + `$`)
		loc := row.FindStringIndex(r.stdout)
		if loc == nil {
			t.Errorf("skiff events lacks %s:\n%s", row, r.stdout)
			continue
		}
		if loc[0] < prev {
			t.Errorf("skiff events: %s %q listed before the event that preceded it:\n%s", ev.reason, ev.message, r.stdout)
		}
		prev = loc[0]
	}
	r = e.skiffSplit(t, "events", "--for", "pod/nope")
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "No events found in default namespace.") {
		t.Errorf("skiff events for an unknown pod: %s", r)
	}
}
