package agent

import (
	"slices"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/runtime"
)

// fakeUserNamespaces holds pods' blocks and records releases.
type fakeUserNamespaces struct {
	mu       sync.Mutex
	pods     []string
	released []string
}

func (f *fakeUserNamespaces) Mapping(string) (runtime.IDMapping, error) {
	return runtime.IDMapping{HostID: 65536, Length: 65536}, nil
}

func (f *fakeUserNamespaces) Pods() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pods)
}

func (f *fakeUserNamespaces) Release(pod string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, pod)
	f.pods = slices.DeleteFunc(f.pods, func(p string) bool { return p == pod })
	return nil
}

// TestReleaseOrphanUserNamespaces: once the sources are ready, the blocks
// of pods that neither a source (a worker) nor the runtime (a sandbox)
// knows are released, once; before that, none.
func TestReleaseOrphanUserNamespaces(t *testing.T) {
	us := &fakeUserNamespaces{pods: []string{"gone", "live", "sandboxed"}}
	cfg := testConfig(t, newFakeRuntime())
	cfg.UserNamespaces = us
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	withSandbox := map[types.UID]bool{"sandboxed": true}
	a.releaseOrphanUserNamespaces(withSandbox)
	if len(us.released) != 0 {
		t.Fatalf("released %v before the sources were ready", us.released)
	}
	a.sourcesReady = true
	a.workers["live"] = &podWorker{uid: "live"}
	a.releaseOrphanUserNamespaces(withSandbox)
	us.pods = append(us.pods, "later")
	a.releaseOrphanUserNamespaces(withSandbox)
	if !slices.Equal(us.released, []string{"gone"}) {
		t.Errorf("released %v, want [gone] (once)", us.released)
	}
}
