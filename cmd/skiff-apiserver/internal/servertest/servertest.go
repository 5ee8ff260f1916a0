// Package servertest runs skiff-apiserver's server (shim/server with
// whatever options a test assembles) for the module's tests.
package servertest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiffnode/skiff/shim/server"
)

// Start builds the server of o and runs it until stop is called or the
// test ends; stop waits for it and fails t on an error other than the
// cancellation. It returns the admin's client configuration (the server
// may not serve yet).
func Start(ctx context.Context, t testing.TB, o server.Options) (admin *rest.Config, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	s, err := server.New(ctx, o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	admin, err = clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return admin, stop
}
