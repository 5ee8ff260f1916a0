package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/runtime"
)

// Termination messages (A.40, A.41), as the kubelet reads them: at most
// 4096 bytes from the file, or with FallbackToLogsOnError the last 80 log
// lines, at most 2048 bytes.
const (
	maxTerminationMessage        = 4096
	maxTerminationMessageLogs    = 2048
	maxTerminationMessageLogRows = 80

	annotationTermMessagePath   = "io.kubernetes.container.terminationMessagePath"
	annotationTermMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"
	annotationTermMessageHost   = "io.skiff.container.terminationMessageHostPath"
)

// terminationMessageFile creates the host file that is bind-mounted at
// c.TerminationMessagePath: <podsDir>/<uid>/containers/<name>/<random>.
// It returns "" when podsDir is "" or the container has no path.
func terminationMessageFile(podsDir string, pod *v1.Pod, c *v1.Container) (string, error) {
	if podsDir == "" || c.TerminationMessagePath == "" {
		return "", nil
	}
	dir := filepath.Join(podsDir, string(pod.UID), "containers", c.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("termination message directory: %w", err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	path := filepath.Join(dir, hex.EncodeToString(b[:]))
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("termination message file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("termination message file: %w", err)
	}
	// World-writable so containers running as any user can write it.
	if err := os.Chmod(path, 0o666); err != nil { //nolint:gosec // as the kubelet does
		return "", fmt.Errorf("termination message file: %w", err)
	}
	return path, nil
}

// terminationMessage computes the message of an exited container from its
// file or, per policy, its log. It reads files; call it once per container.
func terminationMessage(ctx context.Context, cs *runtime.ContainerStatus) string {
	policy := v1.TerminationMessagePolicy(cs.Annotations[annotationTermMessagePolicy])
	fallback := policy == v1.TerminationMessageFallbackToLogsOnError && cs.ExitCode != 0 && cs.Reason != "ContainerCannotRun"
	text, checkLogs := "", fallback
	if host := cs.Annotations[annotationTermMessageHost]; host != "" {
		data, err := readAtMost(host, maxTerminationMessage)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Sprintf("Error on reading termination log %s: %v", host, err)
		default:
			text, checkLogs = string(data), fallback && len(data) == 0
		}
	}
	if checkLogs && cs.LogPath != "" {
		text = lastLogLines(ctx, cs.LogPath)
	}
	return text
}

// readAtMost reads the last max bytes of path.
func readAtMost(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		if _, err := f.Seek(fi.Size()-max, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, max))
}

func lastLogLines(ctx context.Context, path string) string {
	var buf bytes.Buffer
	if err := podlogs.Copy(ctx, &buf, path, podlogs.ReadOptions{TailLines: maxTerminationMessageLogRows}); err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	b := buf.Bytes()
	if len(b) > maxTerminationMessageLogs {
		b = b[len(b)-maxTerminationMessageLogs:]
	}
	return string(b)
}

// withMessage returns cs with the termination message appended to the
// runtime's message (as the kubelet joins them with ": ").
func withMessage(cs *runtime.ContainerStatus, text string) *runtime.ContainerStatus {
	if text == "" {
		return cs
	}
	c := *cs
	if c.Message != "" {
		c.Message += ": "
	}
	c.Message += text
	return &c
}
