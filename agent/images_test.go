package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/images"
	"github.com/skiffnode/skiff/internal/events"
	"github.com/skiffnode/skiff/internal/startgate"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/fake"
)

// scriptPuller is an ImagePuller whose pulls fail while fail is set, and
// block until their context ends while block is set. A successful pull
// makes the image present in rt.
type scriptPuller struct {
	rt  *fake.Runtime
	res images.PullResult

	mu      sync.Mutex
	fail    error
	block   bool
	entered chan struct{} // gets a value as each blocking pull starts
	pulls   []string
	auths   [][]runtime.AuthConfig
}

func (p *scriptPuller) Pull(ctx context.Context, ref string, auths []runtime.AuthConfig) (images.PullResult, error) {
	p.mu.Lock()
	p.pulls = append(p.pulls, ref)
	p.auths = append(p.auths, auths)
	fail, block := p.fail, p.block
	p.mu.Unlock()
	if block {
		p.entered <- struct{}{}
		<-ctx.Done()
		return images.PullResult{}, ctx.Err()
	}
	if fail != nil {
		return images.PullResult{}, fail
	}
	p.rt.AddImage(ref)
	res := p.res
	res.ImageID = "sha256:" + ref
	return res, nil
}

func (p *scriptPuller) set(fail error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail = fail
}

func (p *scriptPuller) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pulls)
}

// statusCounting counts ImageStatus calls, which the fake does not record;
// with a done context ImageStatus fails as a gRPC call would.
type statusCounting struct {
	*fake.Runtime
	calls atomic.Int32
}

func (r *statusCounting) ImageStatus(ctx context.Context, ref string) (*runtime.Image, error) {
	r.calls.Add(1)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return r.Runtime.ImageStatus(ctx, ref)
}

// An image status check cut off because the agent stops (or the pod is
// killed) is no ImageInspectError: no InspectFailed event, no waiting
// reason.
func TestImageStatusCancelledIsNoInspectFailure(t *testing.T) {
	pw := newPullWorker(t, imagePod("app:1", v1.PullIfNotPresent), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := pw.w.ensureImage(ctx, &pw.w.pod.Spec.Containers[0])
	var ie *imageError
	if err == nil || errors.As(err, &ie) {
		t.Errorf("ensureImage on a cancelled context = %v, want a plain error, no image error", err)
	}
	if evs := pw.events(); len(evs) != 0 {
		t.Errorf("events %q, want none", evs)
	}
}

// pullWorker is a pod worker on a fake runtime, a fake clock and puller,
// driven by calling sync.
type pullWorker struct {
	w      *podWorker
	rt     *fake.Runtime
	status *statusCounting
	clk    *clocktesting.FakeClock
	puller *scriptPuller
}

func newPullWorker(t *testing.T, pod *v1.Pod, creds PullCredentials) *pullWorker {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	rt := fake.New(clk.Now)
	p := &scriptPuller{rt: rt, entered: make(chan struct{}, 1)}
	sc := &statusCounting{Runtime: rt}
	owner := &fakeOwner{}
	d := &workerDeps{
		rt: sc, clock: clk, log: slog.New(slog.NewTextHandler(io.Discard, nil)), prober: noProber{},
		starts: startgate.New(1), teardowns: startgate.New(1), events: events.NewRecorder(clk, "node"),
		hooks: newHookRunner(execOutput(rt)), podLogsDir: t.TempDir(), resync: time.Hour, owner: owner, status: owner,
		puller: p, credentials: creds,
	}
	return &pullWorker{w: newPodWorker(d, pod, nil), rt: rt, status: sc, clk: clk, puller: p}
}

// imagePod is a one-container pod running image with policy.
func imagePod(image string, policy v1.PullPolicy) *v1.Pod {
	pod := testPod("Always", nil, "app")
	pod.Spec.Containers[0].Image = image
	pod.Spec.Containers[0].ImagePullPolicy = policy
	return pod
}

// syncAt sets the clock to t0+at and syncs once; it returns the delay to
// the next sync.
func (pw *pullWorker) syncAt(at time.Duration) time.Duration {
	pw.clk.SetTime(t0.Add(at))
	return pw.w.sync(context.Background())
}

// events returns the worker's events as "Type Reason: message", oldest
// first; container events are prefixed with the container's field path.
func (pw *pullWorker) events() []string {
	var out []string
	for _, ev := range pw.w.d.events.List() {
		s := fmt.Sprintf("%s %s: %s", ev.Type, ev.Reason, ev.Message)
		if ev.InvolvedObject.FieldPath == "" {
			s = "pod " + s
		}
		out = append(out, s)
	}
	return out
}

// eventCount is the count of the event with reason and message.
func (pw *pullWorker) eventCount(reason, msg string) int32 {
	for _, ev := range pw.w.d.events.List() {
		if ev.Reason == reason && ev.Message == msg {
			return ev.Count
		}
	}
	return 0
}

func (pw *pullWorker) started() bool {
	c, ok := pw.rt.ContainerByName("uid1", "app")
	return ok && c.State == runtime.ContainerRunning
}

// A missing image: ErrImagePull on each failed pull, ImagePullBackOff in
// between, pulls 10s, 20s, 40s ... apart up to the 300s cap, the worker
// woken when the back-off ends; once the pull works the container starts
// (E.8, E.9). Events and messages as the kubelet words them.
func TestImagePullBackOffSchedule_E8_E9(t *testing.T) {
	const image = "registry.example/app:1"
	pw := newPullWorker(t, imagePod(image, v1.PullIfNotPresent), nil)
	pullErr := errors.New("pull image registry.example/app:1: not found")
	pw.puller.set(pullErr)
	if next := pw.syncAt(0); next != 0 {
		t.Fatalf("sandbox sync: next %v, want 0", next)
	}
	steps := []struct {
		at        time.Duration
		reason    string
		next      time.Duration
		wantPulls int
	}{
		{0, "ErrImagePull", 5 * time.Second, 1},
		{5 * time.Second, "ImagePullBackOff", 5 * time.Second, 1},
		{10 * time.Second, "ErrImagePull", 5 * time.Second, 2},
		{15 * time.Second, "ImagePullBackOff", 15 * time.Second, 2},
		{30 * time.Second, "ErrImagePull", 5 * time.Second, 3},
		{35 * time.Second, "ImagePullBackOff", 35 * time.Second, 3},
		{70 * time.Second, "ErrImagePull", 5 * time.Second, 4},
		{75 * time.Second, "ImagePullBackOff", 75 * time.Second, 4},
		{150 * time.Second, "ErrImagePull", 5 * time.Second, 5},
		{155 * time.Second, "ImagePullBackOff", 155 * time.Second, 5},
		{310 * time.Second, "ErrImagePull", 5 * time.Second, 6},
		{315 * time.Second, "ImagePullBackOff", 295 * time.Second, 6}, // 300s cap
		{610 * time.Second, "ErrImagePull", 5 * time.Second, 7},
		{615 * time.Second, "ImagePullBackOff", 295 * time.Second, 7}, // stays at the cap
		{909 * time.Second, "ImagePullBackOff", time.Second, 7},
	}
	for _, s := range steps {
		next := pw.syncAt(s.at)
		ws := pw.w.waiting["app"]
		if ws.Reason != s.reason || next != s.next || pw.puller.count() != s.wantPulls {
			t.Fatalf("at %v: waiting %q, next sync in %v, %d pulls; want %q, %v, %d",
				s.at, ws.Reason, next, pw.puller.count(), s.reason, s.next, s.wantPulls)
		}
		want := pullErr.Error()
		if s.reason == "ImagePullBackOff" {
			want = `Back-off pulling image "registry.example/app:1": ErrImagePull: ` + pullErr.Error()
		}
		if ws.Message != want {
			t.Fatalf("at %v: message %q, want %q", s.at, ws.Message, want)
		}
		if pw.started() {
			t.Fatalf("at %v: container started", s.at)
		}
	}
	pw.puller.set(nil)
	pw.puller.res = images.PullResult{Size: 123456, Took: 1234567 * time.Microsecond, Waited: 2345678 * time.Microsecond}
	if next := pw.syncAt(910 * time.Second); next != 0 || !pw.started() {
		t.Fatalf("pull after the back-off: next %v, started %v", next, pw.started())
	}
	if _, ok := pw.w.waiting["app"]; ok {
		t.Errorf("waiting %+v after the start", pw.w.waiting["app"])
	}
	for _, want := range []struct {
		reason, msg string
		count       int32
	}{
		{EventPulling, `Pulling image "registry.example/app:1"`, 8},
		{EventFailed, `Failed to pull image "registry.example/app:1": ` + pullErr.Error(), 7},
		{EventFailed, "Error: ErrImagePull", 7},
		{EventBackOff, `Back-off pulling image "registry.example/app:1"`, 8},
		{EventFailed, "Error: ImagePullBackOff", 8},
		{EventPulled, `Successfully pulled image "registry.example/app:1" in 1.234s (2.345s including waiting). Image size: 123456 bytes.`, 1},
		{EventStarted, "Started container app", 1},
	} {
		if got := pw.eventCount(want.reason, want.msg); got != want.count {
			t.Errorf("event %s %q seen %d times, want %d; events %q", want.reason, want.msg, got, want.count, pw.events())
		}
	}
}

// Image problems that need no pull, or come before one: a bad reference
// (E.3) is InvalidImageName with no runtime call; Never with an absent
// image is ErrImageNeverPull (E.4, E.9); a present image with
// IfNotPresent or Never is used as it is (E.17).
func TestImageWithoutPull_E3_E4_E17(t *testing.T) {
	tests := []struct {
		name, image  string
		policy       v1.PullPolicy
		present      bool
		reason, msg  string
		event        string // the image event before "Error: <reason>"
		wantStatusOf bool   // ImageStatus was asked
	}{
		{
			name: "invalid name", image: "Registry.example/App:1", policy: v1.PullIfNotPresent,
			reason: "InvalidImageName",
			msg:    `Failed to apply default image tag "Registry.example/App:1": couldn't parse image name "Registry.example/App:1": invalid reference format: repository name (App) must be lowercase`,
			event:  "Warning InspectFailed",
		},
		{
			name: "bad tag", image: "app:-1", policy: v1.PullAlways,
			reason: "InvalidImageName",
			msg:    `Failed to apply default image tag "app:-1": couldn't parse image name "app:-1": invalid reference format`,
			event:  "Warning InspectFailed",
		},
		{
			name: "never, absent", image: "app:1", policy: v1.PullNever,
			reason: "ErrImageNeverPull", msg: `Container image "app:1" is not present with pull policy of Never`,
			event: "Warning ErrImageNeverPull", wantStatusOf: true,
		},
		{name: "never, present", image: "app:1", policy: v1.PullNever, present: true, wantStatusOf: true},
		{name: "if not present, present", image: "app:1", policy: v1.PullIfNotPresent, present: true, wantStatusOf: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pw := newPullWorker(t, imagePod(tt.image, tt.policy), nil)
			if tt.present {
				pw.rt.AddImage(tt.image)
			}
			pw.syncAt(0)
			next := pw.syncAt(time.Second)
			if n := pw.puller.count(); n != 0 {
				t.Errorf("%d pulls, want none", n)
			}
			statusAsked := pw.status.calls.Load() > 0
			if statusAsked != tt.wantStatusOf {
				t.Errorf("ImageStatus called: %v, want %v (%v)", statusAsked, tt.wantStatusOf, pw.rt.Calls())
			}
			if tt.reason == "" {
				if !pw.started() {
					t.Fatalf("not started; waiting %+v", pw.w.waiting)
				}
				want := fmt.Sprintf(`Container image %q already present on machine`, tt.image)
				if pw.eventCount(EventPulled, want) != 1 {
					t.Errorf("no Pulled %q event: %q", want, pw.events())
				}
				return
			}
			ws := pw.w.waiting["app"]
			if ws.Reason != tt.reason || ws.Message != tt.msg || next != 5*time.Second || pw.started() {
				t.Fatalf("waiting %+v, next %v, started %v; want %s %q, 5s", ws, next, pw.started(), tt.reason, tt.msg)
			}
			want := []string{tt.event + ": " + tt.msg, "Warning Failed: Error: " + tt.reason}
			if got := pw.events(); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("events\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// Always pulls at every launch, present or not (E.4): the runtime
// resolves the tag and fetches only what changed.
func TestImagePullAlwaysPullsEveryLaunch_E4(t *testing.T) {
	pw := newPullWorker(t, imagePod("app:latest", v1.PullAlways), nil)
	pw.rt.AddImage("app:latest")
	pw.syncAt(0)
	pw.syncAt(time.Second)
	if !pw.started() || pw.puller.count() != 1 {
		t.Fatalf("started %v after %d pulls, want started after 1", pw.started(), pw.puller.count())
	}
	c, _ := pw.rt.ContainerByName("uid1", "app")
	pw.rt.Exit(c.ID, 0)
	pw.syncAt(2 * time.Second)
	if !pw.started() || pw.puller.count() != 2 {
		t.Fatalf("restart: started %v after %d pulls, want 2 pulls", pw.started(), pw.puller.count())
	}
	if n := pw.status.calls.Load(); n != 0 {
		t.Errorf("ImageStatus asked %d times with Always, want 0", n)
	}
}

// fakeCredentials returns fixed credentials, missing secrets and warnings.
type fakeCredentials struct {
	auths             []runtime.AuthConfig
	missing, warnings []string
	asked             []string
}

func (c *fakeCredentials) ForPod(pod *v1.Pod, image string) ([]runtime.AuthConfig, []string, []string) {
	c.asked = append(c.asked, pod.Name+" "+image)
	return c.auths, c.missing, c.warnings
}

// The puller gets the credentials the pod's PullCredentials give, in their
// order (E.16); unreadable pull secrets become the kubelet's pod event.
func TestImagePullCredentials_E16(t *testing.T) {
	creds := &fakeCredentials{
		auths:    []runtime.AuthConfig{{Username: "pod"}, {Username: "node"}},
		missing:  []string{"missing", "elsewhere"},
		warnings: []string{`image pull secret "opaque" is of type Opaque`},
	}
	pw := newPullWorker(t, imagePod("registry.example/app:1", v1.PullIfNotPresent), creds)
	pw.syncAt(0)
	pw.syncAt(time.Second)
	if !pw.started() {
		t.Fatalf("not started: %+v", pw.w.waiting)
	}
	if got := fmt.Sprint(pw.puller.auths); got != fmt.Sprint([][]runtime.AuthConfig{creds.auths}) {
		t.Errorf("puller got credentials %s, want %v", got, creds.auths)
	}
	if fmt.Sprint(creds.asked) != "[web-node registry.example/app:1]" {
		t.Errorf("credentials asked for %q", creds.asked)
	}
	// Only the missing secrets make the event (the kubelet logs the rest).
	want := "pod Warning FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (missing, elsewhere); attempting to pull the image may not succeed."
	evs := pw.events()
	if len(evs) == 0 || evs[0] != want {
		t.Errorf("events %q, want first %q", evs, want)
	}
	for _, ev := range evs[1:] {
		if strings.Contains(ev, "FailedToRetrieveImagePullSecret") || strings.Contains(ev, "Opaque") {
			t.Errorf("event %q: a warning that is no missing secret made an event", ev)
		}
	}
}

// A kill cancels a pull in progress: the pod terminates without waiting
// for the download, and the cancelled pull is no failure (no event, no
// back-off). The pull holds no start slot meanwhile.
func TestKillCancelsImagePull(t *testing.T) {
	pw := newPullWorker(t, imagePod("app:1", v1.PullIfNotPresent), nil)
	owner := pw.w.d.owner.(*fakeOwner)
	pw.puller.block = true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.w.run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	select {
	case <-pw.puller.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("no pull started")
	}
	actx, acancel := context.WithTimeout(context.Background(), 5*time.Second)
	release, err := pw.w.d.starts.Acquire(actx, startgate.Container)
	acancel()
	if err != nil {
		t.Fatalf("start slot held during the pull: %v", err)
	}
	release()
	pw.w.kill(nil)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("worker still busy after the kill")
	}
	if owner.doneCount() != 1 {
		t.Error("owner not told the pod is gone")
	}
	for _, ev := range pw.events() {
		if strings.Contains(ev, "Failed") || strings.Contains(ev, "BackOff") {
			t.Errorf("event %q after a cancelled pull", ev)
		}
	}
	if _, in := pw.w.backoff.inBackOffSinceUpdate(pullBackoffKey("app:1"), pw.clk.Now()); in {
		t.Error("cancelled pull started a back-off")
	}
}

// An eviction cancels a pull in progress, as a kill does.
func TestEvictCancelsImagePull(t *testing.T) {
	pw := newPullWorker(t, imagePod("app:1", v1.PullIfNotPresent), nil)
	pctx, done := pw.w.pullContext(context.Background())
	defer done()
	pw.w.evict(EvictionSignalEmptyDirFsLimit, "Pod ephemeral local storage usage exceeds the total limit of containers 1Mi.")
	if pctx.Err() == nil {
		t.Error("pull still running after the eviction")
	}
}

// The agent's own puller (Config.Puller nil) pulls a missing image through
// the runtime, and the pod runs.
func TestAgentPullsMissingImage(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgent(t, rt)
	pod := imagePod("registry.example/fresh:1", v1.PullIfNotPresent)
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	if !strings.Contains(strings.Join(rt.Calls(), ","), "PullImage registry.example/fresh:1") {
		t.Errorf("no runtime pull: %v", rt.Calls())
	}
	for _, want := range []struct{ reason, msg string }{
		{EventPulling, `Pulling image "registry.example/fresh:1"`},
		{EventPulled, `Successfully pulled image "registry.example/fresh:1" in `},
		{EventPulled, `including waiting). Image size: 0 bytes.`},
	} {
		if !h.hasEvent(want.reason, want.msg) {
			t.Errorf("missing event %s %q in %+v", want.reason, want.msg, h.agent.Events())
		}
	}
}

// A failed start's retry is the soonest of the containers' (an image
// back-off ending soon beats the usual retry delay), 0 meaning none.
func TestSoonestRetry(t *testing.T) {
	for _, tt := range []struct{ a, b, want time.Duration }{
		{0, 0, 0}, {0, 5, 5}, {5, 0, 5}, {5, 3, 3}, {3, 5, 3},
	} {
		if got := soonest(tt.a, tt.b); got != tt.want {
			t.Errorf("soonest(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
