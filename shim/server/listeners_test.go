package server

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// TestListenersJoin: connections to the bind address and to a listener
// added later both come out of Accept; Close closes the added one too,
// and one added after Close is closed at once.
func TestListenersJoin(t *testing.T) {
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	base, extra := listen(), listen()
	l := newListeners(base)
	l.add(extra)
	if l.Addr().String() != base.Addr().String() {
		t.Errorf("Addr %v, want the bind address %v", l.Addr(), base.Addr())
	}
	for _, ln := range []net.Listener{base, extra} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if got.LocalAddr().String() != ln.Addr().String() {
			t.Errorf("accepted on %v, want %v", got.LocalAddr(), ln.Addr())
		}
		got.Close()
		c.Close()
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
	if _, err := net.Dial("tcp", extra.Addr().String()); err == nil {
		t.Error("the added listener still accepts after Close")
	}
	late := listen()
	l.add(late)
	if _, err := net.Dial("tcp", late.Addr().String()); err == nil {
		t.Error("a listener added after Close accepts")
	}
}

// failingOnce is a listener whose first Accept fails as a process out of
// file descriptors does.
type failingOnce struct {
	net.Listener
	failed bool
}

func (f *failingOnce) Accept() (net.Conn, error) {
	if !f.failed {
		f.failed = true
		return nil, syscall.EMFILE
	}
	return f.Listener.Accept()
}

// TestListenersRetryAcceptErrors: an accept error other than a closed
// listener does not end serving.
func TestListenersRetryAcceptErrors(t *testing.T) {
	base, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newListeners(&failingOnce{Listener: base})
	defer l.Close()
	c, err := net.Dial("tcp", base.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := l.Accept()
	if err != nil {
		t.Fatalf("Accept after EMFILE: %v", err)
	}
	got.Close()
}
