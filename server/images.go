package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/skiffnode/skiff/runtime"
)

// Images is what the image endpoints (GET /images, POST /images/pull,
// DELETE /images) need from the agent. Safe for concurrent use.
type Images interface {
	// List returns the runtime's images with what the agent knows of
	// their use.
	List(ctx context.Context) ([]Image, error)
	// Pull pulls ref as the agent pulls a pod's image: with the node's
	// credentials and under the agent's pull serialization. Blocking; only
	// ctx bounds it.
	Pull(ctx context.Context, ref string) (PullResult, error)
	// Remove removes the image ref names (a tag, digest or ID) with all its
	// tags. An unknown image is an error wrapping runtime.ErrNotFound; an
	// image a container uses or the runtime pins wraps ErrImageInUse.
	Remove(ctx context.Context, ref string) error
	// Progress returns a counter of the bytes the runtime has downloaded
	// for the pulls in flight, from now on; nil when the runtime cannot
	// tell. The counter is called from one goroutine at a time.
	Progress(ctx context.Context) func() (int64, error)
}

// ErrImageInUse is wrapped by Images.Remove for an image it must not remove
// (answered with 409 Conflict).
var ErrImageInUse = errors.New("image is in use")

// Image is one image of GET /images.
type Image struct {
	// ID is the image ID ("sha256:...").
	ID          string   `json:"id"`
	RepoTags    []string `json:"repoTags,omitempty"`
	RepoDigests []string `json:"repoDigests,omitempty"`
	// Size is the image's size in bytes as the runtime reports it.
	Size uint64 `json:"size"`
	// LastUsed is the last time the agent saw a container use the image;
	// nil when it never did (or does not track use).
	LastUsed *time.Time `json:"lastUsed,omitempty"`
	// InUse: a container uses the image now.
	InUse bool `json:"inUse,omitempty"`
	// Pinned images are never garbage collected (e.g. the pause image).
	Pinned bool `json:"pinned,omitempty"`
}

// PullResult is the outcome of a pull.
type PullResult struct {
	ImageID string `json:"imageID"`
	Size    uint64 `json:"size"`
	// Took is the pull's own time; Waited the time it was queued behind
	// other pulls before it began (the kubelet's "including waiting"
	// figure is Took+Waited).
	Took   time.Duration `json:"took"`
	Waited time.Duration `json:"waited"`
}

// PullEvent is one line of the POST /images/pull stream (JSON lines).
// Progress lines have Elapsed (and Bytes when known); the last line has
// Result, or Error if the pull failed.
type PullEvent struct {
	// Elapsed is the time since the server received the request.
	Elapsed time.Duration `json:"elapsed"`
	// Bytes downloaded so far; -1 when unknown.
	Bytes  int64       `json:"bytes"`
	Result *PullResult `json:"result,omitempty"`
	Error  string      `json:"error,omitempty"`
}

// DefaultPullProgressInterval is how often POST /images/pull reports
// progress.
const DefaultPullProgressInterval = 500 * time.Millisecond

// handleImages serves GET /images: a JSON array of Image (501 without
// Images).
func (s *Server) handleImages(w http.ResponseWriter, r *http.Request) {
	if s.images == nil {
		writeError(w, errorf(http.StatusNotImplemented, "images are not available on this server"))
		return
	}
	imgs, err := s.images.List(r.Context())
	if err != nil {
		writeError(w, errorf(http.StatusInternalServerError, "list images: %v", err))
		return
	}
	if imgs == nil {
		imgs = []Image{}
	}
	writeJSON(w, s.log, imgs)
}

// handleRemoveImage serves DELETE /images?image=REF: 204, 404 for an
// unknown image, 409 for one in use or pinned.
func (s *Server) handleRemoveImage(w http.ResponseWriter, r *http.Request) {
	ref, ok := s.imageRef(w, r)
	if !ok {
		return
	}
	if err := s.images.Remove(r.Context(), ref); err != nil {
		code := http.StatusInternalServerError
		switch {
		case errors.Is(err, runtime.ErrNotFound):
			code = http.StatusNotFound
		case errors.Is(err, ErrImageInUse):
			code = http.StatusConflict
		}
		writeError(w, errorf(code, "%v", err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handlePullImage serves POST /images/pull?image=REF: a 200 stream of
// PullEvent lines, one every progress interval while the pull runs, then
// the result or the error (the status is sent before the pull ends, so a
// failed pull is a final line with Error, not an HTTP error). The pull is
// cancelled when the client goes away.
func (s *Server) handlePullImage(w http.ResponseWriter, r *http.Request) {
	ref, ok := s.imageRef(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	start := s.clock.Now()
	progress := s.images.Progress(ctx)
	type outcome struct {
		res PullResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := s.images.Pull(ctx, ref)
		done <- outcome{res, err}
	}()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	send := func(ev PullEvent) {
		if err := enc.Encode(ev); err != nil {
			s.log.Debug("write pull progress", "err", err)
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	bytes := func() int64 {
		if progress == nil {
			return -1
		}
		n, err := progress()
		if err != nil {
			s.log.Debug("pull progress", "err", err)
			return -1
		}
		return n
	}
	ticker := s.clock.NewTicker(s.pullInterval)
	defer ticker.Stop()
	send(PullEvent{Bytes: bytes()})
	for {
		select {
		case <-ticker.C():
			send(PullEvent{Elapsed: s.clock.Since(start), Bytes: bytes()})
		case o := <-done:
			// No byte count on the last line: it would delay the result
			// by a runtime call.
			ev := PullEvent{Elapsed: s.clock.Since(start), Bytes: -1}
			if o.err != nil {
				ev.Error = o.err.Error()
			} else {
				ev.Result = &o.res
			}
			send(ev)
			return
		}
	}
}

// Images returns the node's images (GET /images).
func (c *Client) Images(ctx context.Context) ([]Image, error) {
	resp, err := c.get(ctx, "/images", nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var imgs []Image
	if err := json.NewDecoder(resp.Body).Decode(&imgs); err != nil {
		return nil, fmt.Errorf("decode image list: %w", err)
	}
	return imgs, nil
}

// PullImage pulls ref through the agent (POST /images/pull), calling
// progress (if not nil) for every progress line, and returns the result.
// A failed pull is an error with the agent's message. Blocking; cancelling
// ctx cancels the pull.
func (c *Client) PullImage(ctx context.Context, ref string, progress func(PullEvent)) (*PullResult, error) {
	resp, err := c.do(ctx, http.MethodPost, "/images/pull", url.Values{"image": {ref}})
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	dec := json.NewDecoder(resp.Body)
	for {
		var ev PullEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("pull %s: read progress: %w", ref, err)
		}
		switch {
		case ev.Error != "":
			return nil, errors.New(ev.Error)
		case ev.Result != nil:
			return ev.Result, nil
		case progress != nil:
			progress(ev)
		}
	}
}

// RemoveImage removes an image (DELETE /images); an unknown image is a
// *StatusError with Code 404, one in use 409.
func (c *Client) RemoveImage(ctx context.Context, ref string) error {
	resp, err := c.do(ctx, http.MethodDelete, "/images", url.Values{"image": {ref}})
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// imageRef returns the request's image query parameter, or writes the
// error (501 without images, 400 without the parameter) and returns false.
func (s *Server) imageRef(w http.ResponseWriter, r *http.Request) (string, bool) {
	if s.images == nil {
		writeError(w, errorf(http.StatusNotImplemented, "images are not available on this server"))
		return "", false
	}
	ref := r.URL.Query().Get("image")
	if ref == "" {
		writeError(w, errorf(http.StatusBadRequest, "missing image query parameter"))
		return "", false
	}
	return ref, true
}
