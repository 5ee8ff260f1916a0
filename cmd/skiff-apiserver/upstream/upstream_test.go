package upstream

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/cmd/skiff-apiserver/internal/servertest"
	"github.com/skiffnode/skiff/shim/server"
)

// testConfig is Add's configuration in tests: the default ranges.
var testConfig = Config{ServiceCIDR: DefaultServiceCIDR, NodePortRange: DefaultNodePortRange}

// startServer runs skiff-apiserver's server with Add on a free port and
// returns an admin client once the default namespace exists.
func startServer(ctx context.Context, t *testing.T) kubernetes.Interface {
	t.Helper()
	client, _ := startServerIn(ctx, t, t.TempDir(), testConfig)
	return client
}

// startServerIn is startServer with dataDir and cfg; stop stops the
// server and waits for it (also at the test's end).
func startServerIn(ctx context.Context, t *testing.T, dataDir string, cfg Config) (client kubernetes.Interface, stop func()) {
	t.Helper()
	return startServerWith(ctx, t, dataDir, cfg, nil)
}

// startServerWith is startServerIn with extra applied to the options
// after Add (nil: none).
func startServerWith(ctx context.Context, t *testing.T, dataDir string, cfg Config, extra func(*server.Options)) (client kubernetes.Interface, stop func()) {
	t.Helper()
	o := server.Options{DataDir: dataDir, BindAddress: "127.0.0.1"}
	if err := Add(&o, cfg); err != nil {
		t.Fatal(err)
	}
	if extra != nil {
		extra(&o)
	}
	rc, stop := servertest.Start(ctx, t, o)
	client = kubernetes.NewForConfigOrDie(rc)
	for {
		if _, err := client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return client, stop
		}
		select {
		case <-ctx.Done():
			t.Fatal("the server never served the default namespace")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestJobRunsToCompletion: upstream's Job controller in the server creates
// a Job's pods, parallelism at a time, and completes the Job once the
// pods succeed (this test writes their status, as a kubelet would); the
// TTL-after-finished controller then deletes it.
func TestJobRunsToCompletion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := startServer(ctx, t)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi"},
		Spec: batchv1.JobSpec{
			Completions: ptr.To[int32](3), Parallelism: ptr.To[int32](2),
			TTLSecondsAfterFinished: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
			}},
		},
	}
	if _, err := client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	succeeded := map[string]bool{}
	for {
		j, err := client.BatchV1().Jobs("default").Get(ctx, "pi", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.CompletionTime != nil {
			if j.Status.Succeeded != 3 || len(succeeded) != 3 {
				t.Fatalf("complete with %d succeeded, %d pods run; want 3", j.Status.Succeeded, len(succeeded))
			}
			waitJobDeleted(ctx, t, client, "pi")
			return
		}
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=pi"})
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Status.Phase == corev1.PodSucceeded {
				continue
			}
			running++
			p.Status.Phase = corev1.PodSucceeded
			if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("pod %s succeeded: %v", p.Name, err)
			}
			succeeded[p.Name] = true
		}
		if running > 2 {
			t.Fatalf("%d pods at once, parallelism is 2", running)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job not complete: %+v", j.Status)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitJobDeleted waits until the Job name is gone.
func waitJobDeleted(ctx context.Context, t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	for {
		_, err := client.BatchV1().Jobs("default").Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job %s not deleted after its TTL: %v", name, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
