package etcd

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
)

// TestStartPortTaken: a client port taken by another process is an
// EADDRINUSE that startEtcd recognises (it picks another free port when
// it chose the port itself, and gives up when the caller did).
func TestStartPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o := Options{Dir: t.TempDir(), ClientURL: fmt.Sprintf("http://%s", l.Addr())}
	e, err := startEtcd(o)
	if err == nil {
		e.Close()
		t.Fatal("started on a taken port")
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("error %v (%T) is not EADDRINUSE: startEtcd would not retry", err, err)
	}
}
