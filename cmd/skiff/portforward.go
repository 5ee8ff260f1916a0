package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
)

// portForwardOptions are the flags of `skiff port-forward`.
type portForwardOptions struct {
	co        clientOptions
	namespace string
	addresses []string
}

// portPair is a local port forwarded to a pod's port; local 0 is any free
// port.
type portPair struct{ local, remote uint16 }

func newPortForwardCmd() *cobra.Command {
	var o portForwardOptions
	cmd := &cobra.Command{
		Use:   "port-forward POD [LOCAL_PORT:]REMOTE_PORT [...]",
		Short: "Forward local ports to a pod (like kubectl port-forward)",
		Long: `Listen on local ports and forward each connection to a port of the pod's
network namespace, through the agent's /portForward endpoint and the
runtime's streaming server, until interrupted. LOCAL_PORT:REMOTE_PORT
forwards one to the other, REMOTE_PORT alone uses the same port locally,
:REMOTE_PORT (or 0:REMOTE_PORT) any free local port.`,
		Example: `  skiff port-forward web-node1 8080:80
  skiff port-forward web-node1 :80 --address 0.0.0.0`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ports, err := parsePortPairs(args[1:])
			if err != nil {
				return err
			}
			return o.run(cmd, args[0], ports)
		},
	}
	o.co.addFlags(cmd)
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "default", "pod namespace")
	f.StringSliceVar(&o.addresses, "address", []string{"localhost"}, "addresses to listen on (comma-separated IPs, or localhost for 127.0.0.1 and ::1)")
	return cmd
}

// parsePortPairs parses kubectl's port arguments.
func parsePortPairs(args []string) ([]portPair, error) {
	var out []portPair
	for _, arg := range args {
		localStr, remoteStr, ok := strings.Cut(arg, ":")
		if !ok {
			localStr, remoteStr = arg, arg
		}
		remote, err := strconv.ParseUint(remoteStr, 10, 16)
		if err != nil || remote == 0 {
			return nil, fmt.Errorf("invalid port %q: the remote port must be 1-65535", arg)
		}
		var local uint64
		if localStr != "" {
			if local, err = strconv.ParseUint(localStr, 10, 16); err != nil {
				return nil, fmt.Errorf("invalid port %q: the local port must be 0-65535", arg)
			}
		}
		out = append(out, portPair{local: uint16(local), remote: uint16(remote)})
	}
	return out, nil
}

// run listens on every address and port and forwards until the command's
// context is done.
func (o *portForwardOptions) run(cmd *cobra.Command, podName string, ports []portPair) error {
	ctx := cmd.Context()
	cl, err := o.co.client()
	if err != nil {
		return err
	}
	pod, err := getPod(ctx, cl, o.namespace, podName)
	if err != nil {
		return err
	}
	if pod.Status.Phase != v1.PodRunning {
		return fmt.Errorf("unable to forward port because pod is not running. Current status=%v", pod.Status.Phase)
	}
	// Connections are reported from their goroutines.
	out, errOut := &syncWriter{w: cmd.OutOrStdout()}, &syncWriter{w: cmd.ErrOrStderr()}
	listeners, err := o.listen(ctx, out, ports)
	if err != nil {
		return err
	}
	path := "/portForward/" + url.PathEscape(o.namespace) + "/" + url.PathEscape(pod.Name)
	var wg sync.WaitGroup
	for _, l := range listeners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.accept(ctx, l, path, out, errOut)
		}()
	}
	<-ctx.Done()
	for _, l := range listeners {
		_ = l.ln.Close()
	}
	wg.Wait()
	return nil
}

// portListener is a local listener and the pod port it forwards to.
type portListener struct {
	ln     net.Listener
	local  int
	remote uint16
}

// listen opens the local listeners and says so as kubectl does. With
// "localhost" an address that cannot be used (no IPv6) is skipped as long
// as another one works.
func (o *portForwardOptions) listen(ctx context.Context, w io.Writer, ports []portPair) ([]portListener, error) {
	var out []portListener
	for _, p := range ports {
		n := len(out)
		var errs []error
		for _, addr := range o.addrs() {
			var lc net.ListenConfig
			ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(addr.ip, strconv.Itoa(int(p.local))))
			if err != nil {
				if addr.optional {
					errs = append(errs, err)
					continue
				}
				closeAll(out)
				return nil, fmt.Errorf("unable to listen on port %d: %w", p.local, err)
			}
			local := ln.Addr().(*net.TCPAddr).Port
			fmt.Fprintf(w, "Forwarding from %s -> %d\n", net.JoinHostPort(addr.ip, strconv.Itoa(local)), p.remote)
			out = append(out, portListener{ln: ln, local: local, remote: p.remote})
		}
		if len(out) == n {
			closeAll(out)
			return nil, fmt.Errorf("unable to listen on port %d: %w", p.local, errors.Join(errs...))
		}
	}
	return out, nil
}

type listenAddr struct {
	ip       string
	optional bool
}

// addrs expands --address: localhost is 127.0.0.1 and ::1, each optional.
func (o *portForwardOptions) addrs() []listenAddr {
	var out []listenAddr
	for _, a := range o.addresses {
		if a == "localhost" {
			out = append(out, listenAddr{"127.0.0.1", true}, listenAddr{"::1", true})
			continue
		}
		out = append(out, listenAddr{ip: a})
	}
	return out
}

func closeAll(ls []portListener) {
	for _, l := range ls {
		_ = l.ln.Close()
	}
}

// accept forwards each connection of l until l is closed.
func (o *portForwardOptions) accept(ctx context.Context, l portListener, path string, out, errOut io.Writer) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := l.ln.Accept()
		if err != nil {
			return
		}
		fmt.Fprintf(out, "Handling connection for %d\n", l.local)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := o.forward(ctx, conn, path, l.remote); err != nil {
				fmt.Fprintf(errOut, "error: an error occurred forwarding %d -> %d: %v\n", l.local, l.remote, err)
			}
		}()
	}
}

// forward copies one local connection to the pod's port remote over a
// session of its own, until either side closes (the end of the local
// input closes the session: channelProtocol cannot half-close) or ctx is
// done. The session's first bytes on each channel are the port (two
// bytes, little-endian); text on the error channel is the runtime's error.
func (o *portForwardOptions) forward(ctx context.Context, local net.Conn, path string, remote uint16) error {
	defer func() { _ = local.Close() }()
	c, err := dialChannels(ctx, o.co.address(), path, url.Values{v1.PortHeader: {strconv.Itoa(int(remote))}})
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := local.Read(buf)
			if n > 0 && c.send(0, buf[:n]) != nil {
				break
			}
			if err != nil {
				break
			}
		}
		_ = c.Close()
	}()
	skip := [2]int{2, 2} // port bytes still to drop on the data and error channels
	var errText []byte
	for {
		ch, data, err := c.recv()
		if err != nil {
			break
		}
		if ch > 1 {
			continue
		}
		n := min(skip[ch], len(data))
		skip[ch] -= n
		data = data[n:]
		if ch == 1 {
			errText = append(errText, data...)
		} else if _, err := local.Write(data); err != nil {
			break
		}
	}
	if len(errText) > 0 {
		return errors.New(string(errText))
	}
	return nil
}

// syncWriter serializes writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
