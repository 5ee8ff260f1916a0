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
	"github.com/skiffnode/skiff/internal/supervisor"
)

// spec is how the supervisor runs the shim: --data-dir marks a shim of
// this DataDir; it is ready when /readyz answers, and every start then
// copies the admin kubeconfig.
func (s *Shim) spec() supervisor.Spec {
	return supervisor.Spec{
		Name: "skiff-apiserver", Note: "pods keep running",
		Binary: s.cfg.Binary, Args: s.args(), LogFile: s.cfg.LogFile,
		PidFile: s.pidFile(), Marker: s.cfg.DataDir,
		StartedAttrs: []any{"dataDir", s.cfg.DataDir},
		Ready:        s.ready, Target: "at " + s.URL(), AfterReady: s.afterReady,
		Policy: restartPolicy, Logger: s.logger,
	}
}

// afterReady copies the admin kubeconfig (if AdminKubeconfig is set) and
// says the shim is ready.
func (s *Shim) afterReady(context.Context) error {
	if s.cfg.AdminKubeconfig != "" {
		data, err := os.ReadFile(s.AdminKubeconfig())
		if err != nil {
			return fmt.Errorf("read admin kubeconfig: %w", err)
		}
		if err := atomicfile.Write(s.cfg.AdminKubeconfig, data, 0o600); err != nil {
			return fmt.Errorf("write admin kubeconfig: %w", err)
		}
	}
	s.logger.Info("skiff-apiserver ready", "url", s.URL(), "adminKubeconfig", s.cfg.AdminKubeconfig)
	return nil
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
