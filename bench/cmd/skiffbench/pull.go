package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/bench/internal/registry"
	"github.com/skiffnode/skiff/bench/internal/report"
)

// Pull scenario (issue 15): the same image pulled from a loopback registry
// through skiff (POST /images/pull on its API socket: the agent's pull
// path, as `skiff images pull` uses it, without the CLI process's own
// start) and by CRI PullImage directly, alternately (each pair in the
// other order than the last), the image removed before every pull so each
// one downloads and unpacks it.

const (
	// pullImageBytes is the image's size: pullLayers random (incompressible)
	// layers of pullImageBytes/pullLayers each.
	pullImageBytes = 8 << 20
	pullLayers     = 2
	pullRepo       = "bench/pull:1"
)

// pull runs the scenario: one untimed warm-up pull each way, then
// cfg.pullRuns timed pairs.
func (b *bench) pull(ctx context.Context) (*report.Pull, error) {
	reg, err := registry.Start()
	if err != nil {
		return nil, err
	}
	defer reg.Close()
	img, err := random.Image(pullImageBytes/pullLayers, pullLayers)
	if err != nil {
		return nil, fmt.Errorf("pull image: %w", err)
	}
	ref, err := reg.Push(ctx, img, pullRepo)
	if err != nil {
		return nil, err
	}
	size, err := imageBytes(img)
	if err != nil {
		return nil, err
	}
	hc := unixHTTP(filepath.Join(filepath.Dir(b.skiff.dir), "skiff.sock"))
	ways := map[string]func(context.Context) error{
		"skiff":  func(ctx context.Context) error { return skiffPull(ctx, hc, ref) },
		"direct": func(ctx context.Context) error { return b.directPull(ctx, ref) },
	}
	timed := func(way string) (float64, error) {
		if err := b.removeImage(ctx, ref); err != nil {
			return 0, err
		}
		before := reg.BlobGets()
		t0 := time.Now()
		if err := ways[way](ctx); err != nil {
			return 0, fmt.Errorf("%s pull of %s: %w", way, ref, err)
		}
		d := time.Since(t0).Seconds()
		if got := reg.BlobGets() - before; got < pullLayers {
			return 0, fmt.Errorf("%s pull of %s fetched %d blobs, want at least %d: the image was not removed", way, ref, got, pullLayers)
		}
		return d, nil
	}
	for _, way := range []string{"direct", "skiff"} {
		if _, err := timed(way); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	samples := map[string][]float64{}
	for i := range b.cfg.pullRuns {
		order := []string{"skiff", "direct"}
		if i%2 == 1 {
			order = []string{"direct", "skiff"}
		}
		for _, way := range order {
			d, err := timed(way)
			if err != nil {
				return nil, err
			}
			samples[way] = append(samples[way], d)
		}
	}
	if err := b.removeImage(ctx, ref); err != nil {
		return nil, err
	}
	return &report.Pull{ImageBytes: size, Skiff: report.NewSeries(samples["skiff"]), Direct: report.NewSeries(samples["direct"])}, nil
}

// imageBytes is the compressed size of img's layers and config.
func imageBytes(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, fmt.Errorf("pull image manifest: %w", err)
	}
	n := m.Config.Size
	for _, l := range m.Layers {
		n += l.Size
	}
	return n, nil
}

// directPull is the floor: one CRI PullImage.
func (b *bench) directPull(ctx context.Context, ref string) error {
	_, err := b.c.IMG.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	return err
}

// removeImage removes ref from the runtime if present.
func (b *bench) removeImage(ctx context.Context, ref string) error {
	st, err := b.c.IMG.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		return fmt.Errorf("image status %s: %w", ref, err)
	}
	if st.Image == nil {
		return nil
	}
	_, err = b.c.IMG.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: st.Image.Id}})
	if err != nil && status.Code(err) != codes.NotFound {
		return fmt.Errorf("remove image %s: %w", ref, err)
	}
	return nil
}

// unixHTTP is an HTTP client for skiff's API socket.
func unixHTTP(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
}

// pullLine is the part of skiff's pull progress lines the harness reads
// (server.PullEvent).
type pullLine struct {
	Result *struct {
		ImageID string `json:"imageID"`
	} `json:"result"`
	Error string `json:"error"`
}

// skiffPull pulls ref through skiff's API and returns when its result line
// arrives.
func skiffPull(ctx context.Context, hc *http.Client, ref string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://skiff/images/pull?"+url.Values{"image": {ref}}.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /images/pull: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var l pullLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("pull progress line %q: %w", sc.Text(), err)
		}
		switch {
		case l.Error != "":
			return errors.New(l.Error)
		case l.Result != nil:
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("pull stream ended without a result: %w", err)
	}
	return errors.New("pull stream ended without a result")
}
