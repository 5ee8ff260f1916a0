package runtime

import "context"

// Streamer prepares interactive sessions with containers and pod sandboxes
// (CRI's Exec, Attach and PortForward). Each call returns the URL of a
// one-shot session on the runtime's streaming server: the caller proxies
// the client's upgraded connection (SPDY or WebSocket, the kubelet's
// remotecommand and portforward protocols) to it. A URL is valid once and
// for a short time (containerd: one minute). Errors for a container or
// sandbox the runtime does not know wrap ErrNotFound. Safe for concurrent
// use.
type Streamer interface {
	// Exec prepares running cmd in the container. tty asks for a
	// terminal; stdin, stdout and stderr say which streams the client
	// will open (with tty, stderr is merged into stdout).
	Exec(ctx context.Context, containerID string, cmd []string, tty, stdin, stdout, stderr bool) (string, error)
	// Attach prepares attaching to the container's main process. tty
	// must be the container's own (its spec's) setting.
	Attach(ctx context.Context, containerID string, tty, stdin, stdout, stderr bool) (string, error)
	// PortForward prepares forwarding to ports of the sandbox's network
	// namespace. ports may be empty: with SPDY the client names each port
	// when it opens its streams.
	PortForward(ctx context.Context, sandboxID string, ports []int32) (string, error)
}
