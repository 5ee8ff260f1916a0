// Command build writes the e2e test images as docker-archive tarballs:
//
//	go run ./test/images/build -out _output/images
//
// produces
//
//	busybox.tar     skiff.test/busybox:1.36    Debian's static busybox, Cmd ["sh"]
//	testserver.tar  skiff.test/testserver:1    /testserver (+ busybox), Entrypoint ["/testserver"]
//
// Beside each archive it stores the hash of the image's inputs
// (<archive>.inputs); an archive whose inputs are unchanged is not rebuilt,
// so repeated `make test` runs are fast. Run it from inside the module: the
// test server is built with the go command in the current module.
//
// With -node-image FILE it writes only the node image (`make node-image`):
// skiff, skiff-pause, skiff's own containerd and runc (-runtime-dir, from
// make runtime), the CNI plugins and iptables from the host, tagged
// -node-ref, entrypoint `skiff agent` (node.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// Image references of the test images; the e2e suite uses the same names.
const (
	BusyboxRef    = "skiff.test/busybox:1.36"
	TestserverRef = "skiff.test/testserver:1"
)

// options are the command-line settings.
type options struct {
	out        string
	busyboxBin string
	force      bool
	// node, when node.out is set, is the only image written.
	node nodeOptions
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "_output/images", "directory for the image archives")
	flag.StringVar(&o.busyboxBin, "busybox", "/bin/busybox", "static busybox binary to package")
	flag.BoolVar(&o.force, "force", false, "rebuild even when inputs are unchanged")
	flag.StringVar(&o.node.out, "node-image", "", "write only the node image, to this archive")
	flag.StringVar(&o.node.ref, "node-ref", "skiff.local/node:dev", "reference of the node image")
	flag.StringVar(&o.node.skiff, "skiff", "bin/skiff", "skiff executable of the node image")
	flag.StringVar(&o.node.skiffPause, "skiff-pause", "bin/skiff-pause", "skiff-pause executable of the node image")
	flag.StringVar(&o.node.runtimeDir, "runtime-dir", "bin", "directory of skiff's own containerd, containerd-shim-runc-v2 and runc (make runtime) for the node image")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "build images:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.node.out != "" {
		if err := os.MkdirAll(filepath.Dir(o.node.out), 0o755); err != nil {
			return fmt.Errorf("create output dir: %w", err)
		}
		node, err := nodeImage(ctx, o.node)
		if err != nil {
			return err
		}
		return node.writeIfChanged(o.node.out, o.force)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("create output dir: %w", err)
	}
	bb, err := busyboxFiles(ctx, o.busyboxBin)
	if err != nil {
		return err
	}
	busybox := image{ref: BusyboxRef, files: bb, cfg: busyboxConfig()}
	if err := busybox.writeIfChanged(filepath.Join(o.out, "busybox.tar"), o.force); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "skiff-testserver-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "testserver")
	if err := buildTestserver(ctx, bin); err != nil {
		return err
	}
	ts := image{ref: TestserverRef, files: testserverFiles(bb, bin), cfg: testserverConfig()}
	return ts.writeIfChanged(filepath.Join(o.out, "testserver.tar"), o.force)
}

// buildTestserver compiles the test server as a static binary at out.
func buildTestserver(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", out,
		"github.com/skiffnode/skiff/test/images/testserver")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build testserver: %w: %s", err, strings.TrimSpace(string(b)))
	}
	return nil
}
