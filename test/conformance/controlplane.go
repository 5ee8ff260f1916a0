package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// nodeControlPlane is -node's value for `skiff agent --control-plane` as
// the whole cluster (issue 36): no test/cluster, the agent's own API
// server, controllers, service proxy and cluster DNS.
const nodeControlPlane = "skiff-control-plane"

// startControlPlaneAgent starts `skiff agent --control-plane` (skiff and
// skiff-apiserver copied into root/bin with skiff's runtime) and returns
// it with an admin client and the admin kubeconfig once the agent has
// written it. The caller waits for the node to be Ready.
func startControlPlaneAgent(ctx context.Context, o options, root, regFile string) (*agentProc, kubernetes.Interface, string, error) {
	manifests := filepath.Join(root, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		return nil, nil, "", err
	}
	port, err := freePort()
	if err != nil {
		return nil, nil, "", err
	}
	logFile, err := os.Create(filepath.Join(o.out, "agent.log"))
	if err != nil {
		return nil, nil, "", err
	}
	defer logFile.Close()
	bin, err := copyAgent(o.skiff, filepath.Join(root, "bin"))
	if err != nil {
		return nil, nil, "", err
	}
	// The agent runs the skiff-apiserver beside its executable.
	if err := copyFile(o.apiserver, filepath.Join(root, "bin", "skiff-apiserver"), 0o755); err != nil {
		return nil, nil, "", fmt.Errorf("skiff-apiserver (make build-apiserver): %w", err)
	}
	args := []string{"agent",
		"--root-dir", root,
		"--pod-manifest-path", manifests,
		"--pod-logs-dir", filepath.Join(root, "logs"),
		"--hostname-override", nodeName,
		"--registry-config", regFile,
		"--control-plane",
		"--control-plane-port", strconv.Itoa(port),
		"--serialize-image-pulls=false",
		"--v", "2",
	}
	args = append(args, strings.Fields(o.agentArgs)...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p, err := startProc(cmd)
	if err != nil {
		return nil, nil, "", fmt.Errorf("start agent: %w", err)
	}
	logf("agent started: %s %s", bin, strings.Join(args, " "))
	kubeconfig := filepath.Join(root, "admin.kubeconfig")
	cs, err := waitAdminClient(ctx, kubeconfig, p)
	if err != nil {
		p.stop()
		return nil, nil, "", err
	}
	return p, cs, kubeconfig, nil
}

// waitAdminClient waits up to three minutes for the agent to write its
// admin kubeconfig and returns a client of it.
func waitAdminClient(ctx context.Context, kubeconfig string, agent *agentProc) (kubernetes.Interface, error) {
	var cs kubernetes.Interface
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-agent.proc.Done():
			return false, fmt.Errorf("agent exited: %w", agent.proc.Err())
		default:
		}
		if _, err := os.Stat(kubeconfig); errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return false, nil // being written
		}
		cs, err = kubernetes.NewForConfig(cfg)
		return err == nil, err
	})
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig %s: %w", kubeconfig, err)
	}
	return cs, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
