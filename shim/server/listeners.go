package server

import (
	"errors"
	"net"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// listeners is one net.Listener over the API's bind address and the
// listeners added while it serves (ControllerContext.Listen): Accept
// returns the next connection of any of them. The generic server serves
// one listener; this lets a controller open another once it knows the
// address (the node's, for the kubernetes Service).
type listeners struct {
	base  net.Listener
	conns chan net.Conn
	done  chan struct{}

	mu     sync.Mutex
	all    []net.Listener
	closed bool
	wg     sync.WaitGroup // one accept loop per listener
}

func newListeners(base net.Listener) *listeners {
	l := &listeners{base: base, conns: make(chan net.Conn), done: make(chan struct{})}
	l.add(base)
	return l
}

// add accepts ln's connections into l until l or ln is closed (other
// accept errors are retried); ln is closed with l, or at once when l is
// closed already.
func (l *listeners) add(ln net.Listener) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = ln.Close()
		return
	}
	l.all = append(l.all, ln)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		var delay time.Duration
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				// As net/http's Serve: a temporary failure (EMFILE, ...)
				// is retried after a delay doubling from 5 ms to 1 s.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				klog.ErrorS(err, "Accept a connection to the API; retrying", "address", ln.Addr(), "delay", delay)
				select {
				case <-time.After(delay):
					continue
				case <-l.done:
					return
				}
			}
			delay = 0
			select {
			case l.conns <- c:
			case <-l.done:
				_ = c.Close()
				return
			}
		}
	}()
}

// Accept returns the next connection of any listener, or net.ErrClosed
// once l is closed.
func (l *listeners) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close closes every listener and waits for their accept loops.
func (l *listeners) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.done)
	var errs []error
	for _, ln := range l.all {
		if err := ln.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	l.mu.Unlock()
	l.wg.Wait()
	return errors.Join(errs...)
}

// Addr is the bind address's.
func (l *listeners) Addr() net.Addr { return l.base.Addr() }
