package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	v1 "k8s.io/api/core/v1"
)

// Environment variables from files (EnvFiles, beta and on since 1.35):
// env[].valueFrom.fileKeyRef reads KEY='value' lines from a file of a pod
// volume (an emptyDir an init container wrote), on the host, as the
// kubelet's makeEnvironmentVariables does.

// fileKeyValue resolves ref against the host paths of the pod's volumes;
// ok is false for an optional key that is missing. Errors carry the
// kubelet's messages.
func fileKeyValue(ref *v1.FileKeySelector, volumePaths map[string]string) (value string, ok bool, err error) {
	host, found := volumePaths[ref.VolumeName]
	if !found {
		return "", false, fmt.Errorf("cannot find the volume %q referenced by FileKeyRef", ref.VolumeName)
	}
	file, err := securejoin.SecureJoin(host, ref.Path)
	if err != nil {
		return "", false, fmt.Errorf("env file %q in volume %q: %w", ref.Path, ref.VolumeName, err)
	}
	// A regular file only: opening a FIFO a container left there would
	// block the worker.
	var v string
	if info, statErr := os.Lstat(file); statErr != nil || !info.Mode().IsRegular() {
		err = errors.New("not a regular file")
	} else {
		v, err = parseEnvFile(file, ref.Key)
	}
	if err != nil {
		return "", false, errors.New("couldn't parse env file")
	}
	if v == "" {
		if isTrue(ref.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("environment variable key %q not found in file %q", ref.Key, file)
	}
	return v, true, nil
}

// parseEnvFile returns the value of key in the env file at path, "" when
// it is not there, as upstream's ParseEnv: KEY='value' lines (the value
// may span lines), blank lines and # comments skipped, no whitespace
// before '='; whitespace after '=' makes the value empty (as in bash).
func parseEnvFile(path, key string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("failed to open environment variable file %q: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimLeft(sc.Text(), " \t")
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, rest, found := strings.Cut(text, "=")
		if !found {
			return "", fmt.Errorf("invalid environment variable format at line %d: missing '='", line)
		}
		if trimmed := strings.TrimRight(name, " \t"); trimmed == "" || trimmed != name {
			return "", fmt.Errorf("invalid environment variable format at line %d: empty variable name or whitespace before '='", line)
		}
		if strings.TrimLeft(rest, " \t") != rest {
			if name == key {
				return "", nil
			}
			continue
		}
		if !strings.HasPrefix(rest, "'") {
			return "", fmt.Errorf("invalid environment variable format at line %d: value must be enclosed in single quotes", line)
		}
		value, err := quotedValue(sc, rest[1:], &line)
		if err != nil {
			return "", err
		}
		if name == key {
			return value, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("error reading environment variable file %q: %w", path, err)
	}
	return "", nil
}

// quotedValue reads a single-quoted value from rest and, while the quote
// is open, the following lines of sc; only a comment may follow it.
func quotedValue(sc *bufio.Scanner, rest string, line *int) (string, error) {
	var b strings.Builder
	start := *line
	for {
		if i := strings.Index(rest, "'"); i >= 0 {
			b.WriteString(rest[:i])
			if after := strings.TrimLeft(rest[i+1:], " \t"); after != "" && !strings.HasPrefix(after, "#") {
				return "", fmt.Errorf("invalid environment variable format at line %d: unexpected content after closing quote", *line)
			}
			return b.String(), nil
		}
		b.WriteString(rest)
		b.WriteString("\n")
		if !sc.Scan() {
			return "", fmt.Errorf("invalid environment variable format starting at line %d: unclosed single quote", start)
		}
		*line++
		rest = sc.Text()
	}
}

// usesFileKeyRef reports whether c reads a variable from a volume's file.
func usesFileKeyRef(c *v1.Container) bool {
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FileKeyRef != nil {
			return true
		}
	}
	return false
}

// fileKeyVolumes returns the host paths of the pod's volumes when c reads
// a variable from one (nil otherwise), setting them up as the container's
// mounts will (idempotent).
func (w *podWorker) fileKeyVolumes(ctx context.Context, c *v1.Container) (map[string]string, error) {
	if !usesFileKeyRef(c) || w.d.volumes == nil {
		return nil, nil
	}
	vols, err := w.d.volumes.SetUp(ctx, w.pod)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(vols))
	for name, v := range vols {
		out[name] = v.HostPath
	}
	return out, nil
}
