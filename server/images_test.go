package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/runtime"
)

// fakeImages is an Images whose pulls wait for the test.
type fakeImages struct {
	mu       sync.Mutex
	images   []Image
	listErr  error
	removed  []string
	rmErr    map[string]error
	pullRes  PullResult
	pullErr  error
	release  chan struct{} // Pull returns when closed (nil: at once)
	pullCtx  context.Context
	bytes    int64
	noCount  bool
	pulledAs []string
}

func (f *fakeImages) List(context.Context) ([]Image, error) { return f.images, f.listErr }

func (f *fakeImages) Pull(ctx context.Context, ref string) (PullResult, error) {
	f.mu.Lock()
	f.pullCtx = ctx
	f.pulledAs = append(f.pulledAs, ref)
	rel := f.release
	f.mu.Unlock()
	if rel != nil {
		select {
		case <-rel:
		case <-ctx.Done():
			return PullResult{}, ctx.Err()
		}
	}
	return f.pullRes, f.pullErr
}

func (f *fakeImages) Remove(_ context.Context, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.rmErr[ref]; err != nil {
		return err
	}
	f.removed = append(f.removed, ref)
	return nil
}

func (f *fakeImages) Progress(context.Context) func() (int64, error) {
	if f.noCount {
		return nil
	}
	return func() (int64, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.bytes += 1000
		return f.bytes, nil
	}
}

func imagesServer(t *testing.T, imgs Images, clk *testingclock.FakeClock) (*httptest.Server, *Client) {
	t.Helper()
	cfg := Config{Images: imgs}
	if clk != nil {
		cfg.Clock = clk
	}
	srv := httptest.NewServer(New(cfg).Handler())
	t.Cleanup(srv.Close)
	cl, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return srv, cl
}

func TestImagesList(t *testing.T) {
	used := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	f := &fakeImages{images: []Image{
		{ID: "sha256:aaa", RepoTags: []string{"busybox:1"}, Size: 42, LastUsed: &used, InUse: true},
		{ID: "sha256:ppp", RepoTags: []string{"pause:1"}, Pinned: true},
	}}
	srv, cl := imagesServer(t, f, nil)
	got, err := cl.Images(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "sha256:aaa" || !got[0].LastUsed.Equal(used) || !got[0].InUse || got[0].Size != 42 ||
		!got[1].Pinned || got[1].LastUsed != nil {
		t.Errorf("Images = %+v", got)
	}
	f.images = nil
	if code, body := get(t, srv, http.MethodGet, "/images"); code != http.StatusOK || strings.TrimSpace(body) != "[]" {
		t.Errorf("no images: %d %q, want 200 []", code, body)
	}
	f.listErr = errors.New("runtime down")
	if code, body := get(t, srv, http.MethodGet, "/images"); code != http.StatusInternalServerError || !strings.Contains(body, "runtime down") {
		t.Errorf("list error: %d %q, want 500 with the message", code, body)
	}
}

func TestImagesNotServed(t *testing.T) {
	srv := httptest.NewServer(New(Config{}).Handler())
	defer srv.Close()
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/images"}, {http.MethodPost, "/images/pull?image=x"}, {http.MethodDelete, "/images?image=x"},
	} {
		if code, _ := get(t, srv, tc.method, tc.path); code != http.StatusNotImplemented {
			t.Errorf("%s %s without Images: %d, want 501", tc.method, tc.path, code)
		}
	}
	if code, _ := get(t, srv, http.MethodGet, "/images/pull?image=x"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /images/pull: %d, want 405", code)
	}
}

func TestImagesRemove(t *testing.T) {
	f := &fakeImages{rmErr: map[string]error{
		"missing": fmt.Errorf("image missing: %w", runtime.ErrNotFound),
		"used":    fmt.Errorf("image used is used by container c1: %w", ErrImageInUse),
		"broken":  errors.New("boom"),
	}}
	srv, cl := imagesServer(t, f, nil)
	ctx := context.Background()
	if err := cl.RemoveImage(ctx, "busybox:1"); err != nil {
		t.Fatal(err)
	}
	if len(f.removed) != 1 || f.removed[0] != "busybox:1" {
		t.Errorf("removed %v", f.removed)
	}
	for ref, want := range map[string]int{"missing": 404, "used": 409, "broken": 500} {
		var se *StatusError
		err := cl.RemoveImage(ctx, ref)
		if !errors.As(err, &se) || se.Code != want {
			t.Errorf("remove %s: %v, want status %d", ref, err, want)
		}
	}
	if code, _ := get(t, srv, http.MethodDelete, "/images"); code != http.StatusBadRequest {
		t.Errorf("DELETE /images without image: %d, want 400", code)
	}
}

// TestImagesPullProgress: the stream has a line at once, one per interval
// with the elapsed time and the bytes counter, then the result.
func TestImagesPullProgress(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	f := &fakeImages{release: make(chan struct{}), pullRes: PullResult{ImageID: "sha256:abc", Size: 7, Took: time.Second}}
	_, cl := imagesServer(t, f, clk)
	events := make(chan PullEvent, 10)
	type out struct {
		res *PullResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := cl.PullImage(context.Background(), "busybox:1", func(ev PullEvent) { events <- ev })
		done <- out{res, err}
	}()
	first := <-events
	if first.Elapsed != 0 || first.Bytes != 1000 {
		t.Errorf("first line %+v, want elapsed 0 and the counter's first value", first)
	}
	clk.Step(DefaultPullProgressInterval)
	second := <-events
	if second.Elapsed != DefaultPullProgressInterval || second.Bytes != 2000 {
		t.Errorf("second line %+v, want elapsed %s and bytes 2000", second, DefaultPullProgressInterval)
	}
	close(f.release)
	o := <-done
	if o.err != nil || o.res == nil || *o.res != f.pullRes {
		t.Fatalf("PullImage = %+v, %v; want %+v", o.res, o.err, f.pullRes)
	}
	if len(f.pulledAs) != 1 || f.pulledAs[0] != "busybox:1" {
		t.Errorf("pulled %v", f.pulledAs)
	}
}

func TestImagesPullErrorAndUnknownBytes(t *testing.T) {
	f := &fakeImages{pullErr: errors.New("unauthorized: authentication required"), noCount: true}
	srv, cl := imagesServer(t, f, nil)
	var evs []PullEvent
	_, err := cl.PullImage(context.Background(), "private/app:1", func(ev PullEvent) { evs = append(evs, ev) })
	if err == nil || err.Error() != "unauthorized: authentication required" {
		t.Errorf("PullImage error %v, want the agent's message", err)
	}
	for _, ev := range evs {
		if ev.Bytes != -1 {
			t.Errorf("progress %+v without a counter, want bytes -1", ev)
		}
	}
	if code, _ := get(t, srv, http.MethodPost, "/images/pull"); code != http.StatusBadRequest {
		t.Errorf("POST /images/pull without image: %d, want 400", code)
	}
}

// TestImagesPullCancelled: a client that goes away cancels the pull.
func TestImagesPullCancelled(t *testing.T) {
	f := &fakeImages{release: make(chan struct{})}
	_, cl := imagesServer(t, f, nil)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{}, 1)
	errc := make(chan error, 1)
	go func() {
		_, err := cl.PullImage(ctx, "big:1", func(PullEvent) {
			select {
			case started <- struct{}{}:
			default:
			}
		})
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled PullImage returned no error")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		pctx := f.pullCtx
		f.mu.Unlock()
		if pctx != nil && pctx.Err() != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent's pull was not cancelled when the client went away")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
