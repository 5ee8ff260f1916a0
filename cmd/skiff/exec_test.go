package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/server"
)

// fakeAgent serves pods and events and records the commands it runs.
type fakeAgent struct {
	pods   []*v1.Pod
	events []v1.Event
	result runtime.ExecResult

	mu    sync.Mutex
	calls []string // "ns/pod/container: cmd args (timeout)"
}

func (f *fakeAgent) Pods() []*v1.Pod    { return f.pods }
func (f *fakeAgent) Events() []v1.Event { return f.events }

func (f *fakeAgent) Exec(_ context.Context, ns, pod, container string, cmd []string, timeout time.Duration) (*runtime.ExecResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("%s/%s/%s: %s (%v)", ns, pod, container, strings.Join(cmd, " "), timeout))
	if pod == "vanished" {
		return nil, fmt.Errorf("pod %s/%s: %w", ns, pod, runtime.ErrNotFound)
	}
	res := f.result
	return &res, nil
}

// runSkiff runs the CLI with args against an API server for f and returns
// stdout, stderr and the error.
func runSkiff(t *testing.T, f *fakeAgent, args ...string) (string, string, error) {
	t.Helper()
	srv := httptest.NewServer(server.New(server.Config{Pods: f, Events: f, Exec: f}).Handler())
	t.Cleanup(srv.Close)
	root := newRootCmd()
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	// Flags go before "--" so that they are not taken for the command.
	if i := slices.Index(args, "--"); i >= 0 {
		args = slices.Concat(args[:i], []string{"--server", srv.URL}, args[i:])
	} else {
		args = append(args, "--server", srv.URL)
	}
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return stdout.String(), stderr.String(), err
}

// runningPod is a pod whose app and sidecar containers run and whose init
// container has completed.
func runningPod(name string, apps ...string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}
	p.Spec.InitContainers = []v1.Container{{Name: "init"}}
	p.Status.InitContainerStatuses = []v1.ContainerStatus{{Name: "init", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}}}
	for _, c := range apps {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c, Image: "busybox"})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{Name: c, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}})
	}
	return p
}

func TestExecPassesOutputAndExitCode_H25(t *testing.T) {
	f := &fakeAgent{
		pods:   []*v1.Pod{runningPod("web", "app", "sidecar")},
		result: runtime.ExecResult{Stdout: []byte("out\n"), Stderr: []byte("err\n"), ExitCode: 3},
	}
	stdout, stderr, err := runSkiff(t, f, "exec", "web", "-c", "sidecar", "--timeout", "1500ms", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
	var exit *exitCodeError
	if !errors.As(err, &exit) || exit.code != 3 {
		t.Errorf("error = %v, want exit code 3", err)
	}
	if stdout != "out\n" || stderr != "err\n" {
		t.Errorf("stdout %q stderr %q, want %q and %q", stdout, stderr, "out\n", "err\n")
	}
	want := "default/web/sidecar: sh -c echo out; echo err >&2; exit 3 (2s)"
	if len(f.calls) != 1 || f.calls[0] != want {
		t.Errorf("exec calls %q, want [%q]", f.calls, want)
	}
}

func TestExecDefaultContainer_H25(t *testing.T) {
	annotated := runningPod("annotated", "app", "sidecar")
	annotated.Annotations = map[string]string{defaultContainerAnnotation: "sidecar"}
	for _, tt := range []struct {
		name       string
		pod        *v1.Pod
		wantTarget string
		wantNote   string
	}{
		{"several containers", runningPod("multi", "app", "sidecar"), "default/multi/app", `Defaulted container "app" out of: app, sidecar, init (init)` + "\n"},
		{"annotation", annotated, "default/annotated/sidecar", ""},
		{"only container", &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "single", Namespace: "default"},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app"}}},
			Status:     v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}},
		}, "default/single/app", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAgent{pods: []*v1.Pod{tt.pod}}
			_, stderr, err := runSkiff(t, f, "exec", "pod/"+tt.pod.Name, "--", "true")
			if err != nil {
				t.Fatal(err)
			}
			if stderr != tt.wantNote {
				t.Errorf("stderr %q, want %q", stderr, tt.wantNote)
			}
			if len(f.calls) != 1 || !strings.HasPrefix(f.calls[0], tt.wantTarget+":") {
				t.Errorf("exec calls %q, want one in %s", f.calls, tt.wantTarget)
			}
		})
	}
}

func TestExecErrors_H25(t *testing.T) {
	waitingPod := runningPod("crashy", "app")
	waitingPod.Status.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	done := runningPod("done", "app")
	done.Status.Phase = v1.PodSucceeded
	notCreated := runningPod("new", "app")
	notCreated.Status.ContainerStatuses = nil
	pods := []*v1.Pod{runningPod("web", "app"), waitingPod, done, notCreated, runningPod("vanished", "app")}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown pod", []string{"exec", "nope", "--", "true"}, `pods "nope" not found in namespace "default"`},
		{"other namespace", []string{"exec", "web", "-n", "kube-system", "--", "true"}, `pods "web" not found in namespace "kube-system"`},
		{"unknown container", []string{"exec", "web", "-c", "db", "--", "true"}, `container "db" not found in pod web; its containers: app, init (init)`},
		{"waiting container", []string{"exec", "crashy", "--", "true"}, `container "app" of pod default/crashy is not running: waiting (CrashLoopBackOff)`},
		{"terminated init container", []string{"exec", "web", "-c", "init", "--", "true"}, `container "init" of pod default/web is not running: terminated (Completed, exit code 0)`},
		{"completed pod", []string{"exec", "done", "--", "true"}, "cannot exec into a container in a completed pod; current phase is Succeeded"},
		{"container not created", []string{"exec", "new", "--", "true"}, "has not been created yet"},
		{"gone meanwhile", []string{"exec", "vanished", "--", "true"}, `container "app" of pod default/vanished: pod default/vanished: not found`},
		{"stdin without streaming agent", []string{"exec", "-i", "web", "--", "sh"}, "streaming is not available on this server"},
		{"tty without streaming agent", []string{"exec", "-it", "web", "--", "sh"}, "streaming is not available on this server"},
		{"tty in waiting container", []string{"exec", "-it", "crashy", "--", "sh"}, `container "app" of pod default/crashy is not running: waiting (CrashLoopBackOff)`},
		{"timeout with stdin", []string{"exec", "-i", "--timeout", "1s", "web", "--", "sh"}, "--timeout applies to commands without -i/-t only"},
		{"no dash", []string{"exec", "web", "ls"}, "put the command after --: skiff exec web -- ls"},
		{"no command", []string{"exec", "web", "--"}, "no command given after --"},
		{"two pods", []string{"exec", "web", "other", "--", "ls"}, "exactly one pod name must come before --"},
		{"not a pod", []string{"exec", "deploy/web", "--", "ls"}, "skiff exec works on pods only"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAgent{pods: pods}
			_, _, err := runSkiff(t, f, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
			if tt.name != "gone meanwhile" && len(f.calls) != 0 {
				t.Errorf("ran %q despite the error", f.calls)
			}
		})
	}
}
