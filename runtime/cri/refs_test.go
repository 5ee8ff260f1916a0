package cri

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/runtime"
)

// refsOf is what ListContainerRefs must return for cs: the refs of the
// full decode (containerFromCRI), sorted by ID.
func refsOf(cs []*runtime.Container, key string) []runtime.ContainerRef {
	var out []runtime.ContainerRef
	for _, c := range cs {
		out = append(out, runtime.ContainerRef{ID: c.ID, SandboxID: c.SandboxID, State: c.State, Label: c.Labels[key]})
	}
	slices.SortFunc(out, func(a, b runtime.ContainerRef) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// ListContainerRefs against a CRI server gives the refs of a full
// ListContainers: every state (CREATED, proto3's zero, is off the wire),
// the key's label among others or missing, annotations and metadata
// skipped; it sends the label selector and reuses into.
func TestListContainerRefsMatchesListContainers(t *testing.T) {
	f := newFakeCRI()
	const key = "io.kubernetes.pod.uid"
	add := func(id, sb string, st runtimeapi.ContainerState, labels map[string]string) {
		f.containers[id] = &runtimeapi.ContainerStatus{
			Id: id, State: st, CreatedAt: time.Unix(100, 5).UnixNano(),
			Metadata: &runtimeapi.ContainerMetadata{Name: "app-" + id, Attempt: 3},
			Image:    &runtimeapi.ImageSpec{Image: "busybox"}, ImageRef: "sha256:abc",
			Labels: labels, Annotations: map[string]string{"io.kubernetes.container.restartCount": "3", key: "not-a-label"},
		}
		f.ctrSandbox[id] = sb
	}
	add("c1", "sb1", runtimeapi.ContainerState_CONTAINER_RUNNING, map[string]string{"io.skiff.managed": "true", key: "u1", "z": "last"})
	add("c2", "sb1", runtimeapi.ContainerState_CONTAINER_EXITED, map[string]string{key: "u1"})
	add("c3", "sb2", runtimeapi.ContainerState_CONTAINER_CREATED, map[string]string{key: "u2"})
	add("c4", "", runtimeapi.ContainerState_CONTAINER_UNKNOWN, map[string]string{"other": "x"})
	add("c5", "sb3", runtimeapi.ContainerState_CONTAINER_RUNNING, nil)
	r := newTestRuntime(t, f, time.Second)
	ctx := context.Background()
	sel := map[string]string{"io.skiff.managed": "true"}

	full, err := r.ListContainers(ctx, runtime.ContainerFilter{Labels: sel})
	if err != nil {
		t.Fatal(err)
	}
	want := refsOf(full, key)
	into := make([]runtime.ContainerRef, 1, 8)
	into[0] = runtime.ContainerRef{ID: "stale"}
	got, err := r.ListContainerRefs(ctx, sel, key, into)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.lastListCtr.Filter.GetLabelSelector(), sel) {
		t.Errorf("label selector sent = %v, want %v", f.lastListCtr.Filter.GetLabelSelector(), sel)
	}
	if &got[0] != &into[:1][0] {
		t.Error("into was not reused")
	}
	slices.SortFunc(got, func(a, b runtime.ContainerRef) int { return strings.Compare(a.ID, b.ID) })
	if !reflect.DeepEqual(got, want) {
		t.Errorf("refs:\n got %+v\nwant %+v", got, want)
	}
	// The generic helper picks the RefLister.
	viaHelper, err := runtime.ListContainerRefs(ctx, r, sel, key, nil)
	if err != nil || len(viaHelper) != len(want) {
		t.Errorf("runtime.ListContainerRefs = %d refs, %v", len(viaHelper), err)
	}
	// Other calls on the connection still use the ordinary codec.
	if again, err := r.ListContainers(ctx, runtime.ContainerFilter{Labels: sel}); err != nil || !reflect.DeepEqual(refsOf(again, key), want) {
		t.Errorf("ListContainers after ListContainerRefs: %v", err)
	}
}

// ListSandboxRefs against a CRI server gives the refs of a full
// ListSandboxes: READY (proto3's zero, off the wire) and NOTREADY, the
// key's label among others or missing, metadata and annotations skipped.
func TestListSandboxRefsMatchesListSandboxes(t *testing.T) {
	f := newFakeCRI()
	const key = "io.kubernetes.pod.uid"
	add := func(id string, st runtimeapi.PodSandboxState, labels map[string]string) {
		f.sandboxes[id] = &runtimeapi.PodSandboxStatus{
			Id: id, State: st, CreatedAt: 7,
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "p-" + id, Namespace: "ns", Uid: "meta-uid", Attempt: 2},
			Labels:   labels, Annotations: map[string]string{key: "not-a-label", "io.kubernetes.pod.terminationGracePeriod": "30"},
		}
	}
	add("sb1", runtimeapi.PodSandboxState_SANDBOX_READY, map[string]string{"io.skiff.managed": "true", key: "u1", "app": "x"})
	add("sb2", runtimeapi.PodSandboxState_SANDBOX_NOTREADY, map[string]string{key: "u2"})
	add("sb3", runtimeapi.PodSandboxState_SANDBOX_READY, nil)
	r := newTestRuntime(t, f, time.Second)
	ctx := context.Background()
	sel := map[string]string{"io.skiff.managed": "true"}
	full, err := r.ListSandboxes(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	var want []runtime.SandboxRef
	for _, sb := range full {
		want = append(want, runtime.SandboxRef{ID: sb.ID, State: sb.State, Label: sb.Labels[key]})
	}
	got, err := r.ListSandboxRefs(ctx, sel, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.lastListSb.Filter.GetLabelSelector(), sel) {
		t.Errorf("label selector sent = %v, want %v", f.lastListSb.Filter.GetLabelSelector(), sel)
	}
	byID := func(a, b runtime.SandboxRef) int { return strings.Compare(a.ID, b.ID) }
	slices.SortFunc(got, byID)
	slices.SortFunc(want, byID)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("refs:\n got %+v\nwant %+v", got, want)
	}
	if want[1].State != runtime.SandboxNotReady || want[0].State != runtime.SandboxReady {
		t.Errorf("fixture states %+v", want)
	}
}

// decodeContainerRefs skips fields it does not know (a newer CRI) and
// rejects malformed input instead of panicking.
func TestDecodeContainerRefsWire(t *testing.T) {
	msg, err := proto.Marshal(&runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{{
		Id: "c1", PodSandboxId: "sb1", State: runtimeapi.ContainerState_CONTAINER_EXITED,
		Labels: map[string]string{"k": "v"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	// An unknown field (99, fixed64) in the container and one in the reply.
	ctr := protowire.AppendTag(nil, 99, protowire.Fixed64Type)
	ctr = protowire.AppendFixed64(ctr, 7)
	ctr = protowire.AppendTag(ctr, 1, protowire.BytesType)
	ctr = protowire.AppendString(ctr, "c2")
	withUnknown := protowire.AppendTag(slices.Clone(msg), 1, protowire.BytesType)
	withUnknown = protowire.AppendBytes(withUnknown, ctr)
	withUnknown = protowire.AppendTag(withUnknown, 42, protowire.VarintType)
	withUnknown = protowire.AppendVarint(withUnknown, 1)
	got, err := decodeContainerRefs(withUnknown, "k", nil)
	want := []runtime.ContainerRef{
		{ID: "c1", SandboxID: "sb1", State: runtime.ContainerExited, Label: "v"},
		{ID: "c2", State: runtime.ContainerCreated},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("with unknown fields: %+v, %v; want %+v", got, err, want)
	}
	for i := 1; i < len(msg); i++ {
		if _, err := decodeContainerRefs(msg[:i], "k", nil); err != nil && !errors.Is(err, errWire) {
			t.Errorf("truncated at %d: error %v does not wrap errWire", i, err)
		}
	}
	if _, err := decodeContainerRefs(msg[:len(msg)-1], "k", nil); !errors.Is(err, errWire) {
		t.Errorf("truncated reply: err = %v, want errWire", err)
	}
}

// listReply110 is a ListContainersResponse of 110 containers as skiff
// creates them (5 labels, 2 annotations), on the wire.
func listReply110(b *testing.B) []byte {
	var cs []*runtimeapi.Container
	for i := range 110 {
		id := strings.Repeat(string(rune('a'+i%26)), 64)
		cs = append(cs, &runtimeapi.Container{
			Id: id, PodSandboxId: strings.Repeat("s", 64), State: runtimeapi.ContainerState_CONTAINER_RUNNING,
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
			ImageRef: "sha256:" + strings.Repeat("0", 64), CreatedAt: 1,
			Labels: map[string]string{
				"io.skiff.managed": "true", "io.kubernetes.pod.name": "density-pod", "io.kubernetes.pod.namespace": "default",
				"io.kubernetes.pod.uid": "0b6e3c1a-2f4d-4e8a-9c3b-5d7f1e2a4b6c", "io.kubernetes.container.name": "app",
			},
			Annotations: map[string]string{"io.kubernetes.container.restartCount": "0", "io.skiff.container.init": "false"},
		})
	}
	msg, err := proto.Marshal(&runtimeapi.ListContainersResponse{Containers: cs})
	if err != nil {
		b.Fatal(err)
	}
	return msg
}

// benchSink keeps a benchmark's result alive (and the compiler from
// dropping the work).
var benchSink []*runtime.Container

// BenchmarkDecodeList110 compares decoding one relist's container listing
// at 110 pods: the full proto decode plus containerFromCRI (what
// ListContainers does) against decodeContainerRefs.
func BenchmarkDecodeList110(b *testing.B) {
	msg := listReply110(b)
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var resp runtimeapi.ListContainersResponse
			if err := proto.Unmarshal(msg, &resp); err != nil {
				b.Fatal(err)
			}
			out := make([]*runtime.Container, 0, len(resp.Containers))
			for _, c := range resp.Containers {
				out = append(out, containerFromCRI(c))
			}
			benchSink = out
		}
	})
	b.Run("refs", func(b *testing.B) {
		b.ReportAllocs()
		var refs []runtime.ContainerRef
		for b.Loop() {
			var err error
			if refs, err = decodeContainerRefs(msg, "io.kubernetes.pod.uid", refs[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
