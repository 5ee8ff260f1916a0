package images

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/runtime"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeImages is a runtime.Images whose pulls block until the test lets
// them finish (when gated), and fail for the usernames in fail.
type fakeImages struct {
	gated   bool
	fail    map[string]error // by AuthConfig.Username ("" anonymous)
	started chan string      // "ref user" of every pull, as it starts
	proceed chan struct{}    // one value lets one gated pull finish
	stop    chan struct{}    // closed at the end of the test: gates open

	mu                  sync.Mutex
	calls               []string
	running, maxRunning int
	cancelled           int
}

func newFakeImages(gated bool) *fakeImages {
	return &fakeImages{gated: gated, fail: map[string]error{}, started: make(chan string, 100), proceed: make(chan struct{}), stop: make(chan struct{})}
}

func (f *fakeImages) PullImage(ctx context.Context, ref string, auth *runtime.AuthConfig) (string, error) {
	user := ""
	if auth != nil {
		user = auth.Username
	}
	f.mu.Lock()
	f.calls = append(f.calls, strings.TrimSpace(ref+" "+user))
	f.running++
	f.maxRunning = max(f.maxRunning, f.running)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running--
		f.mu.Unlock()
	}()
	f.started <- strings.TrimSpace(ref + " " + user)
	if f.gated {
		select {
		case <-f.proceed:
		case <-f.stop:
		case <-ctx.Done():
			f.mu.Lock()
			f.cancelled++
			f.mu.Unlock()
			return "", ctx.Err()
		}
	}
	if err := f.fail[user]; err != nil {
		return "", err
	}
	return "sha256:" + ref, nil
}

func (f *fakeImages) ImageStatus(_ context.Context, ref string) (*runtime.Image, error) {
	return &runtime.Image{ID: "sha256:" + ref, Size: uint64(len(ref)) * 1000}, nil
}

func (f *fakeImages) ListImages(context.Context) ([]*runtime.Image, error) { return nil, nil }
func (f *fakeImages) RemoveImage(context.Context, string) error            { return nil }
func (f *fakeImages) ImageFsInfo(context.Context) ([]runtime.FilesystemUsage, error) {
	return nil, nil
}

func (f *fakeImages) callList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeImages) max() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxRunning
}

// waitStarted waits for n pulls to start.
func (f *fakeImages) waitStarted(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		select {
		case s := <-f.started:
			out = append(out, s)
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of %d pulls started: %v", len(out), n, f.callList())
		}
	}
	return out
}

// let lets one gated pull finish.
func (f *fakeImages) let(t *testing.T) {
	t.Helper()
	select {
	case f.proceed <- struct{}{}:
	case <-time.After(5 * time.Second):
		t.Fatalf("no pull waits to finish; pulls %v", f.callList())
	}
}

// noMoreStarts fails if a pull starts within a short while.
func (f *fakeImages) noMoreStarts(t *testing.T) {
	t.Helper()
	select {
	case s := <-f.started:
		t.Fatalf("pull %q started, want none", s)
	case <-time.After(30 * time.Millisecond):
	}
}

type outcome struct {
	res PullResult
	err error
}

// goPull runs Pull in a goroutine; the result comes on the channel.
func goPull(ctx context.Context, p *Puller, ref string, auths ...runtime.AuthConfig) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		res, err := p.Pull(ctx, ref, auths)
		ch <- outcome{res, err}
	}()
	return ch
}

// waitJoined waits until n callers wait for the pull of ref (no
// credentials).
func waitJoined(t *testing.T, p *Puller, ref string, n int) {
	t.Helper()
	key, err := pullKey(ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		sp := p.inflight[key]
		got := 0
		if sp != nil {
			got = sp.waiters
		}
		p.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers wait for %s, want %d", got, ref, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func wait(t *testing.T, ch <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(5 * time.Second):
		t.Fatal("Pull did not return")
		return outcome{}
	}
}

func newTestPuller(t *testing.T, f *fakeImages, cfg PullerConfig) (*Puller, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	p, err := NewPuller(f, clk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Wait)
	t.Cleanup(func() { close(f.stop) }) // runs first: a failed test leaves no pull blocked
	return p, clk
}

// The kubelet's validation of serializeImagePulls and
// maxParallelImagePulls (E.19), with 0 as "no limit".
func TestPullerConfigValidate_E19(t *testing.T) {
	tests := []struct {
		cfg  PullerConfig
		want string // "" valid
	}{
		{PullerConfig{SerializePulls: true}, ""},
		{PullerConfig{SerializePulls: true, MaxParallelPulls: 1}, ""},
		{PullerConfig{SerializePulls: true, MaxParallelPulls: 2}, "cannot be larger than 1 unless --serialize-image-pulls is set to false"},
		{PullerConfig{}, ""},
		{PullerConfig{MaxParallelPulls: 5}, ""},
		{PullerConfig{MaxParallelPulls: -1}, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%+v", tt.cfg), func(t *testing.T) {
			_, err := NewPuller(newFakeImages(false), nil, tt.cfg)
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("NewPuller(%+v) = %v, want %q", tt.cfg, err, tt.want)
			}
		})
	}
}

// The reference forms of E.1 normalize as containerd names them (E.2);
// bad ones (E.3) fail with the kubelet's wording.
func TestNormalize_E1_E2_E3(t *testing.T) {
	digest := "sha256:45b23dee08af5e43a7fea6c4cf9c25ccf269ee113168c19722f87876677c5cb2"
	tests := []struct{ in, want, err string }{
		{"pause", "docker.io/library/pause:latest", ""},
		{"example/mycontainer", "docker.io/example/mycontainer:latest", ""},
		{"fictional.registry.example/imagename", "fictional.registry.example/imagename:latest", ""},
		{"fictional.registry.example:10443/imagename", "fictional.registry.example:10443/imagename:latest", ""},
		{"nginx:1.27", "docker.io/library/nginx:1.27", ""},
		{"image@" + digest, "docker.io/library/image@" + digest, ""},
		{"localhost:5000/a/b:v_1.2-x", "localhost:5000/a/b:v_1.2-x", ""},
		{"nginx:" + strings.Repeat("a", 128), "docker.io/library/nginx:" + strings.Repeat("a", 128), ""},
		{"nginx:" + strings.Repeat("a", 129), "", `couldn't parse image name "nginx:` + strings.Repeat("a", 129) + `": invalid reference format`},
		{"nginx:.bad", "", "invalid reference format"},
		{"nginx:-bad", "", "invalid reference format"},
		{"Nginx", "", `couldn't parse image name "Nginx": invalid reference format: repository name (library/Nginx) must be lowercase`},
		{"", "", "invalid reference format"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Normalize(%q) = %q, %v; want error %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Normalize(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

// Serialized pulls (the default): the second image waits for the first;
// Took is the pull itself, Waited includes the wait for the slot (E.19).
func TestPullerSerializesAndMeasuresWaiting_E19(t *testing.T) {
	f := newFakeImages(true)
	p, clk := newTestPuller(t, f, PullerConfig{SerializePulls: true})
	ctx := context.Background()
	a := goPull(ctx, p, "a")
	f.waitStarted(t, 1)
	b := goPull(ctx, p, "b")
	waitJoined(t, p, "b", 1)
	f.noMoreStarts(t)
	clk.Step(3 * time.Second)
	f.let(t)
	ra := wait(t, a)
	if ra.err != nil || ra.res.ImageID != "sha256:a" || ra.res.Size != 1000 {
		t.Fatalf("pull a = %+v", ra)
	}
	if ra.res.Took != 3*time.Second || ra.res.Waited != 3*time.Second {
		t.Errorf("pull a took %v, waited %v; want 3s, 3s", ra.res.Took, ra.res.Waited)
	}
	f.waitStarted(t, 1)
	clk.Step(2 * time.Second)
	f.let(t)
	rb := wait(t, b)
	if rb.err != nil || rb.res.Took != 2*time.Second || rb.res.Waited != 5*time.Second {
		t.Errorf("pull b = %+v, want took 2s, waited 5s", rb)
	}
	if m := f.max(); m != 1 {
		t.Errorf("%d pulls ran at once, want 1", m)
	}
}

// Without serialization, --max-parallel-image-pulls bounds the pulls at
// once; 0 is no bound (E.19).
func TestPullerParallelBound_E19(t *testing.T) {
	for _, tt := range []struct{ max, wantAtOnce int }{{2, 2}, {0, 4}} {
		t.Run(fmt.Sprint(tt.max), func(t *testing.T) {
			f := newFakeImages(true)
			p, _ := newTestPuller(t, f, PullerConfig{MaxParallelPulls: tt.max})
			var chs []<-chan outcome
			for i := range 4 {
				chs = append(chs, goPull(context.Background(), p, fmt.Sprintf("img%d", i)))
			}
			f.waitStarted(t, tt.wantAtOnce)
			f.noMoreStarts(t)
			for range 4 - tt.wantAtOnce {
				f.let(t)
				f.waitStarted(t, 1)
			}
			for range tt.wantAtOnce {
				f.let(t)
			}
			for _, ch := range chs {
				if o := wait(t, ch); o.err != nil {
					t.Error(o.err)
				}
			}
			if m := f.max(); m != tt.wantAtOnce {
				t.Errorf("%d pulls ran at once, want %d", m, tt.wantAtOnce)
			}
		})
	}
}

// One image is pulled at most once at a time: concurrent Pulls of it, in
// any spelling, share one runtime pull; other credentials pull on their
// own. A caller that joins late reports only its part as Took.
func TestPullerSharesConcurrentPullsOfOneImage(t *testing.T) {
	f := newFakeImages(true)
	p, clk := newTestPuller(t, f, PullerConfig{MaxParallelPulls: 0})
	ctx := context.Background()
	first := goPull(ctx, p, "nginx")
	f.waitStarted(t, 1)
	clk.Step(4 * time.Second)
	same := goPull(ctx, p, "docker.io/library/nginx:latest")
	waitJoined(t, p, "nginx", 2)
	withAuth := goPull(ctx, p, "nginx", runtime.AuthConfig{Username: "u"})
	if got := f.waitStarted(t, 1); got[0] != "nginx u" {
		t.Fatalf("started %v, want the pull with credentials only", got)
	}
	f.noMoreStarts(t)
	clk.Step(time.Second)
	f.let(t)
	f.let(t)
	r1, r2, r3 := wait(t, first), wait(t, same), wait(t, withAuth)
	for _, o := range []outcome{r1, r2, r3} {
		if o.err != nil || o.res.ImageID != "sha256:nginx" {
			t.Errorf("outcome %+v, want sha256:nginx", o)
		}
	}
	if r2.res.Waited != time.Second || r2.res.Took != time.Second {
		t.Errorf("joined pull: took %v, waited %v; want 1s, 1s", r2.res.Took, r2.res.Waited)
	}
	if calls := f.callList(); len(calls) != 2 {
		t.Errorf("runtime pulls %v, want 2 (one shared, one with credentials)", calls)
	}
	// Done pulls are forgotten: the next Pull pulls again.
	again := goPull(ctx, p, "nginx")
	f.waitStarted(t, 1)
	f.let(t)
	if o := wait(t, again); o.err != nil {
		t.Fatal(o.err)
	}
}

// A caller that gives up leaves a shared pull running for the others; when
// the last one gives up, the runtime pull is cancelled.
func TestPullerCancelsOnlyWhenAllCallersLeft(t *testing.T) {
	f := newFakeImages(true)
	p, _ := newTestPuller(t, f, PullerConfig{SerializePulls: true})
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	first := goPull(ctx1, p, "a")
	f.waitStarted(t, 1)
	second := goPull(ctx2, p, "a")
	waitJoined(t, p, "a", 2)
	cancel1()
	if o := wait(t, first); !errors.Is(o.err, context.Canceled) {
		t.Fatalf("first caller: %v, want context.Canceled", o.err)
	}
	f.let(t)
	if o := wait(t, second); o.err != nil || o.res.ImageID != "sha256:a" {
		t.Fatalf("second caller: %+v, want the shared pull's image", o)
	}
	// A pull whose only caller leaves is cancelled in the runtime.
	ctx3, cancel3 := context.WithCancel(context.Background())
	third := goPull(ctx3, p, "b")
	f.waitStarted(t, 1)
	cancel3()
	if o := wait(t, third); !errors.Is(o.err, context.Canceled) {
		t.Fatalf("third caller: %v, want context.Canceled", o.err)
	}
	waited := make(chan struct{})
	go func() { p.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("the pull nobody waits for still runs")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancelled != 1 {
		t.Errorf("%d runtime pulls cancelled, want 1", f.cancelled)
	}
}

// Credentials are tried in order until one works (E.16); the errors of all
// that failed are reported together; no credentials: one anonymous pull.
func TestPullerTriesCredentialsInOrder_E16(t *testing.T) {
	denied := errors.New("401 Unauthorized")
	auths := []runtime.AuthConfig{{Username: "first"}, {Username: "second"}, {Username: "third"}}
	tests := []struct {
		name      string
		auths     []runtime.AuthConfig
		fail      []string
		wantCalls []string
		wantErr   string
	}{
		{"anonymous", nil, nil, []string{"img"}, ""},
		{"first works", auths, nil, []string{"img first"}, ""},
		{"second works", auths, []string{"first"}, []string{"img first", "img second"}, ""},
		{"none works", auths, []string{"first", "second", "third"}, []string{"img first", "img second", "img third"},
			"[first: 401 Unauthorized, second: 401 Unauthorized, third: 401 Unauthorized]"},
		{"one fails alone", auths[:1], []string{"first"}, []string{"img first"}, "first: 401 Unauthorized"},
		{"anonymous fails", nil, []string{""}, []string{"img"}, ": 401 Unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeImages(false)
			for _, u := range tt.fail {
				f.fail[u] = fmt.Errorf("%s: %w", u, denied)
			}
			p, _ := newTestPuller(t, f, PullerConfig{SerializePulls: true})
			res, err := p.Pull(context.Background(), "img", tt.auths)
			if calls := f.callList(); strings.Join(calls, ",") != strings.Join(tt.wantCalls, ",") {
				t.Errorf("runtime pulls %q, want %q", calls, tt.wantCalls)
			}
			if tt.wantErr == "" {
				if err != nil || res.ImageID != "sha256:img" {
					t.Errorf("Pull = %+v, %v", res, err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr || !errors.Is(err, denied) {
				t.Errorf("Pull error %v, want %q wrapping the runtime's", err, tt.wantErr)
			}
		})
	}
}

// A bad reference is refused before any runtime call.
func TestPullerRefusesBadReference(t *testing.T) {
	f := newFakeImages(false)
	p, _ := newTestPuller(t, f, PullerConfig{SerializePulls: true})
	if _, err := p.Pull(context.Background(), "UPPER:case", nil); err == nil {
		t.Fatal("Pull of a bad reference succeeded")
	}
	if calls := f.callList(); len(calls) != 0 {
		t.Errorf("runtime pulls %v, want none", calls)
	}
}
