// Package registry is a plain-HTTP OCI registry on loopback for the pull
// scenario: go-containerregistry's in-memory pkg/registry, counting blob
// downloads. A small copy of skiff's internal/testregistry (which the
// bench module cannot import: it does not depend on skiff's module), less
// TLS, auth and faults. containerd pulls from a loopback registry over
// plain HTTP without any configuration.
package registry

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is a running registry. Safe for concurrent use.
type Registry struct {
	// Host is "127.0.0.1:port".
	Host  string
	srv   *http.Server
	blobs atomic.Int64
	done  chan struct{}
}

// Start serves an empty registry on 127.0.0.1 at a free port.
func Start() (*Registry, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("registry: listen: %w", err)
	}
	r := &Registry{Host: ln.Addr().String(), done: make(chan struct{})}
	quiet := log.New(io.Discard, "", 0)
	h := ggcr.New(ggcr.Logger(quiet))
	r.srv = &http.Server{ReadHeaderTimeout: 30 * time.Second, ErrorLog: quiet,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/sha256:") {
				r.blobs.Add(1)
			}
			h.ServeHTTP(w, req)
		})}
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln)
	}()
	return r, nil
}

// Close stops the registry and waits for it.
func (r *Registry) Close() error {
	err := r.srv.Close()
	<-r.done
	return err
}

// BlobGets is how many blob downloads the registry has served (or begun).
func (r *Registry) BlobGets() int64 { return r.blobs.Load() }

// Push pushes img as repo ("name:tag") and returns its reference here.
func (r *Registry) Push(ctx context.Context, img v1.Image, repo string) (string, error) {
	ref := r.Host + "/" + repo
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		return "", fmt.Errorf("registry: reference %q: %w", ref, err)
	}
	if err := remote.Write(tag, img, remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("registry: push %s: %w", ref, err)
	}
	return ref, nil
}
