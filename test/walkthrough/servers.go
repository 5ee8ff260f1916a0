package walkthrough

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"
)

// server is one API server under test, driven by kubectl as its admin.
type server struct {
	name       string
	kubectl    string // the kube-controlplane multi-call binary
	kubeconfig string

	proxyOnce sync.Once
	proxyURL  string
	proxyErr  error
	proxyCmd  *exec.Cmd
}

// result is what a command printed and how it ended.
type result struct {
	out  string
	code int // exit status; HTTP status for requests
}

func (r result) String() string { return fmt.Sprintf("[%d]\n%s", r.code, r.out) }

// kubectl runs kubectl with args against s, stdin fed when not empty.
func (s *server) run(ctx context.Context, stdin string, args ...string) result {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	full := append([]string{"kubectl", "--kubeconfig", s.kubeconfig}, args...)
	cmd := exec.CommandContext(ctx, s.kubectl, full...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		code = -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		if code == -1 {
			out = append(out, []byte(err.Error())...)
		}
	}
	return result{out: string(out), code: code}
}

var proxyRE = regexp.MustCompile(`Starting to serve on (\S+)`)

// proxy starts `kubectl proxy --port=0` once and returns its address.
func (s *server) proxy() (string, error) {
	s.proxyOnce.Do(func() {
		cmd := exec.Command(s.kubectl, "kubectl", "--kubeconfig", s.kubeconfig, "proxy", "--port=0")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			s.proxyErr = err
			return
		}
		if err := cmd.Start(); err != nil {
			s.proxyErr = err
			return
		}
		s.proxyCmd = cmd
		line, err := bufio.NewReader(stdout).ReadString('\n')
		m := proxyRE.FindStringSubmatch(line)
		if m == nil {
			s.proxyErr = fmt.Errorf("kubectl proxy said %q: %w", line, err)
			return
		}
		go func() { _, _ = io.Copy(io.Discard, stdout) }()
		s.proxyURL = "http://" + m[1]
	})
	return s.proxyURL, s.proxyErr
}

// request sends method path with a JSON body through kubectl proxy, as
// the docs do with curl.
func (s *server) request(ctx context.Context, method, path, body string) result {
	base, err := s.proxy()
	if err != nil {
		return result{out: err.Error(), code: -1}
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		return result{out: err.Error(), code: -1}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return result{out: err.Error(), code: -1}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{out: string(bytes.TrimSpace(b)), code: resp.StatusCode}
}

// close stops the proxy.
func (s *server) close() {
	if s.proxyCmd != nil {
		_ = s.proxyCmd.Process.Kill()
		_ = s.proxyCmd.Wait()
	}
}

// freePort returns a TCP port free on 127.0.0.1 at the time of the call.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
