package controlplane

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiffnode/skiff/internal/atomicfile"
	"github.com/skiffnode/skiff/supervisor"
)

// cleanupTimeout bounds rollbacks under a fresh context.
const cleanupTimeout = 10 * time.Second

// launchChild starts one shim and waits until it is ready (see Start);
// with restart set it refuses (supervisor.ErrReplaced) to start a rival
// of a shim that another agent started on DataDir. On error nothing is
// left running.
func (s *Shim) launchChild(ctx context.Context, restart bool) (_ supervisor.Process, retErr error) {
	if restart {
		if pid, ok := supervisor.LeftoverPid(s.pidFile(), s.cfg.DataDir); ok {
			return nil, fmt.Errorf("%w (pid %d in %s)", supervisor.ErrReplaced, pid, s.pidFile())
		}
	}
	c, err := supervisor.StartChild(s.cfg.Binary, s.args(), s.cfg.LogFile, s.pidFile())
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			defer cancel()
			_ = supervisor.Stop(ctx, c, "skiff-apiserver", s.logger)
		}
	}()
	s.logger.Info("started skiff-apiserver", "pid", c.Pid(), "dataDir", s.cfg.DataDir, "log", s.cfg.LogFile)
	if err := atomicfile.Write(s.pidFile(), []byte(strconv.Itoa(c.Pid())+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write skiff-apiserver pid file: %w", err)
	}
	if err := s.waitReady(ctx, c); err != nil {
		return nil, err
	}
	if s.cfg.AdminKubeconfig != "" {
		data, err := os.ReadFile(s.AdminKubeconfig())
		if err != nil {
			return nil, fmt.Errorf("read admin kubeconfig: %w", err)
		}
		if err := atomicfile.Write(s.cfg.AdminKubeconfig, data, 0o600); err != nil {
			return nil, fmt.Errorf("write admin kubeconfig: %w", err)
		}
	}
	s.logger.Info("skiff-apiserver ready", "url", s.URL(), "adminKubeconfig", s.cfg.AdminKubeconfig)
	return c, nil
}

// waitReady polls /readyz (as the admin, through the kubeconfig the shim
// writes before it serves) until it answers 200, the child exits, or the
// bounded ctx ends.
func (s *Shim) waitReady(ctx context.Context, p supervisor.Process) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		lastErr := s.ready(ctx)
		if lastErr == nil {
			return nil
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("skiff-apiserver exited during start (%s); log %s ends with:\n%s",
				supervisor.ExitStatus(p.ExitErr()), s.cfg.LogFile, supervisor.LogTail(s.cfg.LogFile, 15))
		case <-ctx.Done():
			return fmt.Errorf("skiff-apiserver at %s not ready: %w (last error: %w); log %s ends with:\n%s",
				s.URL(), ctx.Err(), lastErr, s.cfg.LogFile, supervisor.LogTail(s.cfg.LogFile, 15))
		case <-tick.C:
		}
	}
}

// ready is one /readyz request; nil when it answered 200.
func (s *Shim) ready(ctx context.Context) error {
	if _, err := os.Stat(s.AdminKubeconfig()); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.AdminKubeconfig())
	if err != nil {
		return err
	}
	cfg.Host = s.URL() // the file may be an earlier start's
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, s.URL()+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s: %s", resp.Status, body)
	}
	return nil
}

func netJoin(host string, port int) string {
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}
