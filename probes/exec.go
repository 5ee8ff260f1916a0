package probes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

// Execer runs a command in a container and waits for it, at most timeout.
// runtime.Runtime satisfies it. A non-zero exit code is not an error. A
// command that runs past its timeout must return an error for which
// errors.Is(err, context.DeadlineExceeded) holds or whose gRPC status code is
// DeadlineExceeded (what runtime/cri returns, as containerd reports it).
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*runtime.ExecResult, error)
}

// ExecProber runs exec probes (B.3): the command runs in the container
// through the runtime, with no shell; exit code 0 is Success, any other is
// Failure. Safe for concurrent use if Exec is.
type ExecProber struct {
	Exec Execer
}

// Probe runs cmd in the container. The output is stdout followed by stderr,
// at most 10 KiB. A command that times out is a Failure with the kubelet's
// output `command "<cmd>" timed out`. Any other runtime error (the
// container is gone, the runtime is down) is returned with Unknown: the
// kubelet throws such results away instead of counting them.
func (p ExecProber) Probe(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (Result, string, error) {
	res, err := p.Exec.ExecSync(ctx, containerID, cmd, timeout)
	if err != nil {
		if isTimeout(err) && ctx.Err() == nil {
			return Failure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " ")), nil
		}
		return Unknown, "", fmt.Errorf("exec probe in container %s: %w", containerID, err)
	}
	out := truncate(append(append([]byte(nil), res.Stdout...), res.Stderr...))
	if res.ExitCode != 0 {
		return Failure, out, nil
	}
	return Success, out, nil
}

// isTimeout reports whether err says that the command ran past its timeout.
func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
}

// expandCommand replaces $(VAR) references in cmd with the values of the
// container's plain env entries, as the kubelet does for exec probes
// (ExpandContainerCommandOnlyStatic): entries set with valueFrom expand to
// "", unknown names are left as written, and $$ escapes a $.
func expandCommand(cmd []string, env []v1.EnvVar) []string {
	if len(cmd) == 0 {
		return nil
	}
	vars := make(map[string]string, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	out := make([]string, len(cmd))
	for i, arg := range cmd {
		out[i] = expand(arg, vars)
	}
	return out
}

// expand implements Kubernetes' $(VAR) syntax for one string.
func expand(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$': // escaped operator
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 { // incomplete reference: keep it
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default: // a lone $ before something else
			b.WriteByte('$')
		}
	}
	return b.String()
}

// limitExec returns e bounded to n concurrent ExecSync calls (n <= 0 or a
// nil e: e itself). Every exec probe is a runc exec in the runtime, ~0.1-0.2
// s of CPU on a 2-core node; 110 pods with a 10 s exec probe kept up to 40
// of them in flight at once, contending with each other and with pod starts
// (bench density). Queued probes run late instead.
func limitExec(e Execer, n int) Execer {
	if e == nil || n <= 0 {
		return e
	}
	return &limitedExec{e: e, sem: make(chan struct{}, n)}
}

type limitedExec struct {
	e   Execer
	sem chan struct{}
}

func (l *limitedExec) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*runtime.ExecResult, error) {
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-l.sem }()
	return l.e.ExecSync(ctx, containerID, cmd, timeout)
}
