package cliview

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tablePods is one pod per interesting row shape.
func tablePods(now time.Time) []v1.Pod {
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	ready := cond(v1.PodReady, v1.ConditionTrue, "")

	web := podWith(v1.PodRunning, nil, []v1.ContainerStatus{status("nginx", running(), true, 0)}, ready)
	web.Name, web.CreationTimestamp = "web", ago(5*time.Minute)
	web.Spec.NodeName = "node-1"
	web.Status.PodIPs = []v1.PodIP{{IP: "10.88.0.5"}}

	initDemo := podWith(v1.PodPending,
		[]v1.ContainerStatus{status("init-myservice", running(), false, 0), status("init-mydb", waiting("PodInitializing"), false, 0)},
		[]v1.ContainerStatus{status("myapp-container", waiting("PodInitializing"), false, 0)})
	initDemo.Name, initDemo.CreationTimestamp = "myapp-pod", ago(90*time.Second)
	initDemo.Spec.NodeName = "node-1"
	initDemo.Status.PodIP = "10.88.0.6"

	crash := podWith(v1.PodRunning, nil, []v1.ContainerStatus{status("app", waiting("CrashLoopBackOff"), false, 3)})
	crash.Status.ContainerStatuses[0].LastTerminationState = v1.ContainerState{
		Terminated: &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: ago(2 * time.Minute)},
	}
	crash.Name, crash.CreationTimestamp = "crashy", ago(3*time.Hour)

	done := podWith(v1.PodSucceeded, nil, []v1.ContainerStatus{status("job", exited(0, 0, "Completed"), false, 0)})
	done.Name, done.CreationTimestamp = "batch-job-with-a-long-name", ago(50*time.Hour)

	unknownAge := podWith(v1.PodPending, nil, nil)
	unknownAge.Name = "no-timestamp"
	unknownAge.Spec.Containers = []v1.Container{{Name: "app"}}

	return []v1.Pod{*web, *initDemo, *crash, *done, *unknownAge}
}

func TestPrintPodsGolden(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		golden string
		wide   bool
	}{
		{"pods.golden", false},
		{"pods-wide.golden", true},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			var buf bytes.Buffer
			if err := PrintPods(&buf, tablePods(now), tt.wide, now); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", tt.golden))
			if err != nil {
				t.Fatal(err)
			}
			if buf.String() != string(want) {
				t.Errorf("PrintPods output:\n%s\nwant (testdata/%s):\n%s", buf.String(), tt.golden, want)
			}
		})
	}
}

func TestPrintPodsEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := PrintPods(&buf, nil, false, time.Now()); err != nil || buf.Len() != 0 {
		t.Errorf("PrintPods(no pods) = %q, %v; want no output", buf.String(), err)
	}
}
