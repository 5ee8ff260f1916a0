package pod

import (
	"context"
	"io"

	genericrest "k8s.io/apiserver/pkg/registry/generic/rest"
	"k8s.io/apiserver/pkg/registry/rest"
)

// logStreamer is pods/log's LocationStreamer with a stream that never
// returns data together with io.EOF or an error. Why: upstream's WebSocket copy
// (k8s.io/streaming's wsstream, messageCopy, v0.37) drops the bytes of a
// Read that also returns io.EOF, and a kubelet's short answer with a
// Content-Length is read that way, so a log read over a WebSocket came
// back empty (upstream's "should support retrieving logs from the container
// over websockets"). Plain HTTP readers are unaffected.
type logStreamer struct {
	*genericrest.LocationStreamer
}

var _ rest.ResourceStreamer = logStreamer{}

// InputStream implements rest.ResourceStreamer.
func (s logStreamer) InputStream(ctx context.Context, apiVersion, acceptHeader string) (io.ReadCloser, bool, string, error) {
	out, flush, contentType, err := s.LocationStreamer.InputStream(ctx, apiVersion, acceptHeader)
	if out != nil {
		out = &eofApart{ReadCloser: out}
	}
	return out, flush, contentType, err
}

// eofApart is a ReadCloser whose Read returns an error (io.EOF or
// another) only on a call that returns no data: a Read of n > 0 bytes that
// also failed returns them with a nil error, and the next Read returns 0
// and that error.
type eofApart struct {
	io.ReadCloser
	err error
}

// Read implements io.Reader.
func (r *eofApart) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.ReadCloser.Read(p)
	if err != nil && n > 0 {
		r.err = err
		return n, nil
	}
	return n, err
}
