package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/remotecommand"
)

// sessionIO is the local side of an exec or attach session.
type sessionIO struct {
	// stdin is sent to the remote process; nil: none.
	stdin          io.Reader
	stdout, stderr io.Writer
	// sizes are the local terminal's sizes, sent as resizes; nil: none.
	sizes <-chan terminalSize
}

// streamRequest is an exec or attach session to open on the agent.
type streamRequest struct {
	addr, path string
	// query carries the command (exec); the streams are added.
	query url.Values
	// stdin sends the local stdin; tty asks for a terminal (the remote
	// stderr is then merged into stdout); raw puts the local terminal in
	// raw mode and sends its size (tty with stdin on a terminal).
	stdin, tty, raw bool
}

// runStream opens the session and runs it with the command's stdin,
// stdout and stderr (see runSession).
func runStream(cmd *cobra.Command, req streamRequest) error {
	ctx := cmd.Context()
	q := req.query
	if q == nil {
		q = url.Values{}
	}
	q.Set(v1.ExecStdoutParam, "1")
	if req.stdin {
		q.Set(v1.ExecStdinParam, "1")
	}
	if req.tty {
		q.Set(v1.ExecTTYParam, "1")
	} else {
		q.Set(v1.ExecStderrParam, "1")
	}
	conn, err := dialChannels(ctx, req.addr, req.path, q)
	if err != nil {
		return err
	}
	sio := sessionIO{stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
	if req.stdin {
		sio.stdin = cmd.InOrStdin()
	}
	if fd, ok := terminalFd(cmd.InOrStdin()); req.raw && ok {
		restore, err := makeRaw(fd)
		if err != nil {
			_ = conn.Close()
			return fmt.Errorf("terminal raw mode: %w", err)
		}
		defer restore()
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		sio.sizes = watchSize(sctx, fd)
	}
	return runSession(ctx, conn, sio)
}

// runSession runs a remote command session on c until the agent ends it
// or ctx is done, and closes c: stdin goes out on the stdin channel, sizes
// as resizes, the stdout and stderr channels are written to their writers.
// The result is the status the agent sent last: nil for success, an
// *exitCodeError for a command that exited non-zero, an error with the
// status's message otherwise. A goroutine copying stdin may stay blocked
// in a read of stdin after it returns (as kubectl's).
func runSession(ctx context.Context, c *channelConn, sio sessionIO) error {
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	defer func() { _ = c.Close() }()
	if sio.stdin != nil {
		go copyStdin(c, sio.stdin)
	}
	if sio.sizes != nil {
		go sendSizes(c, sio.sizes)
	}
	var status []byte
	for {
		ch, data, err := c.recv()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("session interrupted: %w", ctx.Err())
			}
			if errors.Is(err, io.EOF) || len(status) > 0 {
				break
			}
			return fmt.Errorf("stream: %w", err)
		}
		switch ch {
		case remotecommand.StreamStdOut:
			_, err = sio.stdout.Write(data)
		case remotecommand.StreamStdErr:
			_, err = sio.stderr.Write(data)
		case remotecommand.StreamErr:
			status = append(status, data...)
		}
		if err != nil {
			return fmt.Errorf("write output: %w", err)
		}
	}
	return sessionResult(status)
}

// copyStdin sends r on the stdin channel until r or the session ends.
func copyStdin(c *channelConn, r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if c.send(remotecommand.StreamStdIn, buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// sendSizes sends each size as a resize message until sizes is closed.
func sendSizes(c *channelConn, sizes <-chan terminalSize) {
	for size := range sizes {
		msg, err := json.Marshal(size)
		if err != nil || c.send(remotecommand.StreamResize, msg) != nil {
			return
		}
	}
}

// sessionResult interprets the status of a v4 session (a metav1.Status).
func sessionResult(status []byte) error {
	if len(status) == 0 {
		return errors.New("the session ended without an exit status")
	}
	var st metav1.Status
	if err := json.Unmarshal(status, &st); err != nil {
		return fmt.Errorf("decode exit status %q: %w", status, err)
	}
	if st.Status == metav1.StatusSuccess {
		return nil
	}
	if st.Reason == remotecommand.NonZeroExitCodeReason && st.Details != nil {
		for _, cause := range st.Details.Causes {
			if cause.Type != remotecommand.ExitCodeCauseType {
				continue
			}
			if code, err := strconv.Atoi(cause.Message); err == nil {
				return &exitCodeError{code: code}
			}
		}
	}
	if st.Message == "" {
		return fmt.Errorf("remote command failed: %s", st.Reason)
	}
	return errors.New(st.Message)
}

// streamPath is the agent's path of a container's exec or attach.
func streamPath(verb, namespace, pod, container string) string {
	return "/" + verb + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(pod) + "/" + url.PathEscape(container)
}

// runInteractive runs the command with stdin (-i) or a terminal (-t)
// through the agent's /exec endpoint, which proxies the runtime's
// streaming session. As kubectl's: -t needs -i, and a terminal on stdin
// (else it is dropped, with a warning).
func (o *execOptions) runInteractive(cmd *cobra.Command, podName string, command []string) error {
	pod, c, err := runningContainer(cmd, &o.co, o.namespace, podName, o.container)
	if err != nil {
		return err
	}
	tty := o.tty && o.stdin
	if _, isTerm := terminalFd(cmd.InOrStdin()); tty && !isTerm {
		fmt.Fprintln(cmd.ErrOrStderr(), "Unable to use a TTY - input is not a terminal or the right kind of file")
		tty = false
	}
	return runStream(cmd, streamRequest{
		addr: o.co.address(), path: streamPath("exec", o.namespace, pod.Name, c),
		query: url.Values{v1.ExecCommandParam: command}, stdin: o.stdin, tty: tty, raw: tty,
	})
}

// runningContainer finds pod namespace/podName through the agent and the
// container to stream to (container, or the pod's only or default one),
// which must be running.
func runningContainer(cmd *cobra.Command, co *clientOptions, namespace, podName, container string) (*v1.Pod, string, error) {
	cl, err := co.client()
	if err != nil {
		return nil, "", err
	}
	pod, err := getPod(cmd.Context(), cl, namespace, podName)
	if err != nil {
		return nil, "", err
	}
	name, err := pickContainer(pod, container, cmd.ErrOrStderr())
	if err != nil {
		return nil, "", err
	}
	if err := checkRunning(pod, name); err != nil {
		return nil, "", err
	}
	return pod, name, nil
}
