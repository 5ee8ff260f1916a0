package testregistry

import (
	"errors"
	"net/http"
	"strings"
	"sync"
)

// Fault is what the registry does to blob requests (GET or HEAD of
// /v2/<name>/blobs/<digest>); manifests and pushes are never affected.
type Fault int

const (
	// FaultNone serves blobs normally.
	FaultNone Fault = iota
	// FailBlobs answers 503 Service Unavailable.
	FailBlobs
	// HangBlobs holds blob requests without answering until the fault is
	// changed, the client gives up or the registry closes.
	HangBlobs
	// CutBlobs sends the headers and the first CutAfter bytes of a blob,
	// then drops the connection: the registry went away mid-download.
	CutBlobs
)

// CutAfter is how many body bytes CutBlobs sends before it drops the
// connection.
const CutAfter = 512

func (f Fault) String() string {
	switch f {
	case FaultNone:
		return "none"
	case FailBlobs:
		return "fail"
	case HangBlobs:
		return "hang"
	case CutBlobs:
		return "cut"
	}
	return "unknown"
}

// SetFault switches what blob requests get from now on. Requests hanging
// under HangBlobs are released when the fault changes (and then served
// under the new fault).
func (r *Registry) SetFault(f Fault) { r.faults.set(f) }

// BlobRequests returns how many blob requests the registry received (all
// faults, authenticated requests only).
func (r *Registry) BlobRequests() int { return r.faults.count() }

// Hanging returns a channel that is closed once a blob request is being
// held by HangBlobs: the client is mid-pull. The channel is new after each
// SetFault.
func (r *Registry) Hanging() <-chan struct{} { return r.faults.hangingCh() }

// faults is the shared state of the fault wrapper.
type faults struct {
	mu      sync.Mutex
	fault   Fault
	release chan struct{} // closed when the fault changes or on close
	hanging chan struct{} // closed when a request starts hanging
	hung    bool
	blobs   int
	closed  chan struct{}
	once    sync.Once
}

func newFaults() *faults {
	return &faults{release: make(chan struct{}), hanging: make(chan struct{}), closed: make(chan struct{})}
}

func (f *faults) set(v Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = v
	close(f.release)
	f.release = make(chan struct{})
	if f.hung {
		f.hanging, f.hung = make(chan struct{}), false
	}
}

func (f *faults) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.blobs
}

func (f *faults) hangingCh() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hanging
}

func (f *faults) close() { f.once.Do(func() { close(f.closed) }) }

// current counts a blob request and returns the fault to apply and the
// channel that releases a hang.
func (f *faults) current() (Fault, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blobs++
	if f.fault == HangBlobs && !f.hung {
		f.hung = true
		close(f.hanging)
	}
	return f.fault, f.release
}

// isBlobRequest reports whether req downloads a blob.
func isBlobRequest(req *http.Request) bool {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return false
	}
	p := strings.TrimSuffix(req.URL.Path, "/")
	i := strings.LastIndex(p, "/blobs/")
	return strings.HasPrefix(p, "/v2/") && i > 0 && !strings.Contains(p[i+len("/blobs/"):], "/")
}

// wrap applies the current fault to blob requests.
func (f *faults) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !isBlobRequest(req) {
			next.ServeHTTP(w, req)
			return
		}
		fault, release := f.current()
		for fault == HangBlobs {
			select {
			case <-req.Context().Done():
				return
			case <-f.closed:
				panic(http.ErrAbortHandler)
			case <-release:
			}
			f.mu.Lock()
			fault, release = f.fault, f.release
			f.mu.Unlock()
		}
		switch fault {
		case FailBlobs:
			http.Error(w, `{"errors":[{"code":"UNAVAILABLE","message":"testregistry: blob fault"}]}`, http.StatusServiceUnavailable)
		case CutBlobs:
			next.ServeHTTP(&cutWriter{ResponseWriter: w, left: CutAfter}, req)
			// The handler stopped at the cut: drop the connection so the
			// client sees a short body, not a complete answer.
			panic(http.ErrAbortHandler)
		default:
			next.ServeHTTP(w, req)
		}
	})
}

// errCut is what cutWriter's Write returns once its budget is spent.
var errCut = errors.New("testregistry: connection cut")

// cutWriter passes on at most left body bytes, then fails every write.
type cutWriter struct {
	http.ResponseWriter
	left int
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errCut
	}
	n := min(len(p), c.left)
	n, err := c.ResponseWriter.Write(p[:n])
	c.left -= n
	if err == nil && n < len(p) {
		if fl, ok := c.ResponseWriter.(http.Flusher); ok {
			fl.Flush()
		}
		err = errCut
	}
	return n, err
}
