package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skiffnode/skiff/server"
)

var imagesNow = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func TestPrintImages(t *testing.T) {
	used := imagesNow.Add(-5 * time.Minute)
	imgs := []server.Image{
		{ID: "sha256:0123456789abcdef0123", RepoTags: []string{"skiff.test/busybox:1.36", "127.0.0.1:5000/team/busybox:1"}, Size: 4_270_000, InUse: true},
		{ID: "sha256:fedcba9876543210", RepoTags: []string{"skiff.local/pause:abc"}, Size: 745_000, Pinned: true},
		{ID: "sha256:aaaaaaaaaaaaaaaaaaaa", RepoDigests: []string{"127.0.0.1:5000/app@sha256:dd"}, Size: 999, LastUsed: &used},
		{ID: "sha256:bbbb", Size: 1_500_000_000},
	}
	var b strings.Builder
	if err := printImages(&b, imgs, imagesNow); err != nil {
		t.Fatal(err)
	}
	want := `IMAGE                         TAG      IMAGE ID        SIZE     LAST USED   PINNED
127.0.0.1:5000/app            <none>   aaaaaaaaaaaaa   999B     5m ago      false
127.0.0.1:5000/team/busybox   1        0123456789abc   4.27MB   in use      false
<none>                        <none>   bbbb            1.5GB    -           false
skiff.local/pause             abc      fedcba9876543   745kB    -           true
skiff.test/busybox            1.36     0123456789abc   4.27MB   in use      false
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[uint64]string{0: "0B", 999: "999B", 1000: "1kB", 745_000: "745kB", 4_270_000: "4.27MB", 1_234_567_890: "1.23GB"} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestPullDisplay(t *testing.T) {
	res := &server.PullResult{ImageID: "sha256:abc", Size: 4_270_000, Took: 1200 * time.Millisecond, Waited: 300 * time.Millisecond}
	events := []server.PullEvent{{Bytes: 0}, {Elapsed: 2 * time.Second, Bytes: 1_000_000}, {Elapsed: 5 * time.Second, Bytes: 3_000_000}, {Elapsed: 6 * time.Second, Bytes: -1}}
	run := func(tty bool, err error) string {
		var b strings.Builder
		d := &pullDisplay{w: &b, tty: tty, ref: "r:1"}
		d.start()
		for _, ev := range events {
			d.progress(ev)
		}
		if err != nil {
			d.done(nil, err)
		} else {
			d.done(res, nil)
		}
		return b.String()
	}
	final := "Pulled r:1: image sha256:abc, 4.27MB, in 1.2s (1.5s including waiting)\n"
	wantTTY := "\r\x1b[KPulling r:1: 0s, 0B downloaded\r\x1b[KPulling r:1: 2s, 1MB downloaded" +
		"\r\x1b[KPulling r:1: 5s, 3MB downloaded\r\x1b[KPulling r:1: 6s\r\x1b[K" + final
	if got := run(true, nil); got != wantTTY {
		t.Errorf("terminal:\n%q\nwant\n%q", got, wantTTY)
	}
	wantPlain := "Pulling r:1\nPulling r:1: 5s, 3MB downloaded\n" + final
	if got := run(false, nil); got != wantPlain {
		t.Errorf("plain:\n%q\nwant\n%q", got, wantPlain)
	}
	if got := run(false, errors.New("x")); strings.Contains(got, "Pulled") {
		t.Errorf("failed pull printed a result: %q", got)
	}
}
