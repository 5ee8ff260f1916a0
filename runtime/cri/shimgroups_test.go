package cri

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/runtime"
)

func TestShimGroupsFillInOrder(t *testing.T) {
	g := newShimGroups(3, time.Unix(0, 42))
	var got []string
	for range 7 {
		got = append(got, g.next(""))
	}
	want := []string{"skiff-16-0", "skiff-16-0", "skiff-16-0", "skiff-16-1", "skiff-16-1", "skiff-16-1", "skiff-16-2"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("groups %v, want %v", got, want)
		}
	}
	if other := newShimGroups(3, time.Unix(1, 0)).next(""); other == got[0] {
		t.Errorf("a restarted agent's first group %q is the last agent's", other)
	}
	if h := g.next("crun"); h != "skiff-16-crun-0" {
		t.Errorf("first group of handler crun %q, want skiff-16-crun-0 (handlers never share a shim)", h)
	}
}

func TestWithShimGroupsOff(t *testing.T) {
	for _, pods := range []int{-1, 0, 1} {
		r := &Runtime{}
		WithShimGroups(pods)(r)
		if r.groups != nil {
			t.Errorf("WithShimGroups(%d) groups sandboxes, want one shim per pod", pods)
		}
	}
}

// A sandbox's containers are created with the group it was run in, found
// again from the runtime after an agent restart; a pod's own annotation
// never picks a shim.
func TestShimGroupsSandboxAndContainers(t *testing.T) {
	f := newFakeCRI()
	r := newTestRuntime(t, f, time.Second)
	WithShimGroups(2)(r)
	ctx := context.Background()
	sb := testSandboxSpec(false)
	sb.Annotations = map[string]string{"a": "1", runtime.AnnotationShimGroup: "someone-elses"}
	group := func(a map[string]string) string { return a[runtime.AnnotationShimGroup] }

	id, err := r.RunSandbox(ctx, sb)
	if err != nil {
		t.Fatal(err)
	}
	first := group(f.lastRun.Config.Annotations)
	if first == "" || first == "someone-elses" || f.lastRun.Config.Annotations["a"] != "1" {
		t.Fatalf("RunPodSandbox annotations %v, want the pod's with this agent's group", f.lastRun.Config.Annotations)
	}
	if sb.Annotations[runtime.AnnotationShimGroup] != "someone-elses" {
		t.Error("RunSandbox changed the spec's annotations")
	}
	f.sandboxes[id] = &runtimeapi.PodSandboxStatus{Id: id, Annotations: f.lastRun.Config.Annotations}
	spec := &runtime.ContainerSpec{Name: "app", Image: "busybox"}
	if _, err := r.CreateContainer(ctx, id, spec, sb); err != nil {
		t.Fatal(err)
	}
	if got := group(f.lastCreate.SandboxConfig.Annotations); got != first {
		t.Errorf("container's sandbox group %q, want its sandbox's %q", got, first)
	}

	// Sandboxes of an earlier agent: the group the runtime reports, or none.
	f.sandboxes["old"] = &runtimeapi.PodSandboxStatus{Id: "old", Annotations: map[string]string{runtime.AnnotationShimGroup: "skiff-x-3"}}
	f.sandboxes["ungrouped"] = &runtimeapi.PodSandboxStatus{Id: "ungrouped"}
	for id, want := range map[string]string{"old": "skiff-x-3", "ungrouped": ""} {
		for range 2 { // the second from the remembered group
			if _, err := r.CreateContainer(ctx, id, spec, sb); err != nil {
				t.Fatal(err)
			}
			if got, has := f.lastCreate.SandboxConfig.Annotations[runtime.AnnotationShimGroup]; got != want || (want == "" && has) {
				t.Errorf("sandbox %s: container's sandbox group %q, want %q", id, got, want)
			}
		}
	}
	if _, err := r.CreateContainer(ctx, "gone", spec, sb); err == nil {
		t.Error("CreateContainer in a sandbox the runtime does not know: want an error")
	}

	if err := r.RemoveSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.groups.lookup(id); ok {
		t.Error("RemoveSandbox kept the sandbox's group")
	}
	if _, err := r.RunSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if got := group(f.lastRun.Config.Annotations); got != first {
		t.Errorf("second sandbox in group %q, want the first's %q (2 pods per shim)", got, first)
	}
	if _, err := r.RunSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if got := group(f.lastRun.Config.Annotations); got == first {
		t.Errorf("third sandbox in the full group %q", got)
	}
}
