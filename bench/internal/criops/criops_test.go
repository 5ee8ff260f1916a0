package criops

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestFindLogLine(t *testing.T) {
	log := "2026-03-01T12:00:00.100000000Z stdout F testserver: started pid=1\n" +
		"2026-03-01T12:00:05.250000000Z stdout F testserver: received SIGTERM, exiting\n"
	tests := []struct {
		name    string
		log     string
		substr  string
		want    time.Time
		found   bool
		wantErr bool
	}{
		{"found", log, "received SIGTERM", time.Date(2026, 3, 1, 12, 0, 5, 250000000, time.UTC), true, false},
		{"not yet", log, "exiting now", time.Time{}, false, false},
		{"empty log", "", "x", time.Time{}, false, false},
		{"bad timestamp", "yesterday stdout F received SIGTERM\n", "received SIGTERM", time.Time{}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := FindLogLine(tt.log, tt.substr)
			if (err != nil) != tt.wantErr || ok != tt.found || !got.Equal(tt.want) {
				t.Errorf("FindLogLine = %v, %v, %v; want %v, %v, err %v", got, ok, err, tt.want, tt.found, tt.wantErr)
			}
		})
	}
}

func TestForEachBoundsParallelism(t *testing.T) {
	for _, p := range []int{1, 2, 8, 0} {
		var cur, peak atomic.Int32
		var mu sync.Mutex
		seen := map[int]bool{}
		release := make(chan struct{})
		done := make(chan error)
		go func() {
			done <- forEach(8, p, func(i int) error {
				n := cur.Add(1)
				for {
					old := peak.Load()
					if n <= old || peak.CompareAndSwap(old, n) {
						break
					}
				}
				mu.Lock()
				seen[i] = true
				mu.Unlock()
				<-release
				cur.Add(-1)
				return nil
			})
		}()
		want := int32(p)
		if p <= 0 {
			want = 8
		}
		// Wait until the workers are all busy, then let them finish.
		for peak.Load() < want {
			time.Sleep(time.Millisecond)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if peak.Load() != want || len(seen) != 8 {
			t.Errorf("parallelism %d: peak %d (want %d), ran %d of 8", p, peak.Load(), want, len(seen))
		}
	}
}

func TestForEachReturnsAnError(t *testing.T) {
	boom := errors.New("boom")
	var ran atomic.Int32
	err := forEach(5, 2, func(i int) error {
		ran.Add(1)
		if i == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || ran.Load() != 5 {
		t.Errorf("forEach = %v after %d calls; want boom after 5", err, ran.Load())
	}
}

func TestInPods(t *testing.T) {
	m := InPods("default", "app", []string{"a-bench", "b-bench"})
	c := func(ns, pod, name string) bool {
		return m(ctr(ns, pod, name))
	}
	if !c("default", "a-bench", "app") || c("default", "a-bench", "init") || c("other", "a-bench", "app") || c("default", "z-bench", "app") {
		t.Error("InPods matched wrongly")
	}
}

func ctr(ns, pod, name string) *runtimeapi.Container {
	return &runtimeapi.Container{Labels: map[string]string{LabelPodNamespace: ns, LabelPodName: pod, LabelContainer: name}}
}
