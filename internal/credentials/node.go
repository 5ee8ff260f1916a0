package credentials

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// candidate is one place the node's docker config may be.
type candidate struct {
	path   string
	legacy bool // .dockercfg (keys at the top level), else config.json
	any    bool // an explicit file: either format, chosen by content
}

// SearchPaths returns the files the kubelet searches for the node's
// credentials, in its order, with skiff's root dir in place of the
// kubelet's (pkg/credentialprovider/config.go: ReadDockerConfigJSONFile,
// then ReadDockercfgFile): the first valid config.json of rootDir,
// workDir, homeDir/.docker and /.docker wins; without one, the first valid
// .dockercfg of rootDir, workDir, homeDir and /. An empty homeDir is
// left out.
func SearchPaths(rootDir, workDir, homeDir string) []string {
	var out []string
	for _, c := range searchCandidates(rootDir, workDir, homeDir) {
		out = append(out, c.path)
	}
	return out
}

func searchCandidates(rootDir, workDir, homeDir string) []candidate {
	var jsonDirs, legacyDirs []string
	jsonDirs = append(jsonDirs, rootDir, workDir)
	legacyDirs = append(legacyDirs, rootDir, workDir)
	if homeDir != "" {
		jsonDirs = append(jsonDirs, filepath.Join(homeDir, ".docker"))
		legacyDirs = append(legacyDirs, homeDir)
	}
	jsonDirs = append(jsonDirs, "/.docker")
	legacyDirs = append(legacyDirs, "/")
	var out []candidate
	for _, d := range jsonDirs {
		out = append(out, candidate{path: filepath.Join(d, "config.json")})
	}
	for _, d := range legacyDirs {
		out = append(out, candidate{path: filepath.Join(d, ".dockercfg"), legacy: true})
	}
	return out
}

// fileStamp is what tells that a candidate changed.
type fileStamp struct {
	exists bool
	mtime  time.Time
	size   int64
}

// nodeKeyring holds the node's credentials and re-reads them when one of
// the candidate files changes (checked with one stat per candidate on each
// Get: pulls are rare, so no watcher goroutine). Safe for concurrent use.
type nodeKeyring struct {
	candidates []candidate
	explicit   bool // --image-credential-file: a file that must be valid
	logger     *slog.Logger

	mu      sync.Mutex
	stamps  []fileStamp
	keyring *Keyring
	source  string // the file the keyring came from; "" when none
}

func newNodeKeyring(candidates []candidate, explicit bool, logger *slog.Logger) (*nodeKeyring, error) {
	n := &nodeKeyring{candidates: candidates, explicit: explicit, logger: logger, keyring: &Keyring{}}
	stamps := n.stat()
	kr, source, err := n.load(stamps)
	if err != nil {
		return nil, err
	}
	n.stamps, n.keyring, n.source = stamps, kr, source
	if source != "" {
		logger.Info("node image credentials", "file", source)
	}
	return n, nil
}

func (n *nodeKeyring) stat() []fileStamp {
	stamps := make([]fileStamp, len(n.candidates))
	for i, c := range n.candidates {
		if fi, err := os.Stat(c.path); err == nil {
			stamps[i] = fileStamp{exists: true, mtime: fi.ModTime(), size: fi.Size()}
		}
	}
	return stamps
}

// Get returns the current keyring, re-reading the files first when one of
// them changed. When an explicit file became invalid, the last good
// keyring stays (with a log line).
func (n *nodeKeyring) Get() *Keyring {
	n.mu.Lock()
	defer n.mu.Unlock()
	stamps := n.stat()
	if slices.Equal(stamps, n.stamps) {
		return n.keyring
	}
	n.stamps = stamps
	kr, source, err := n.load(stamps)
	if err != nil {
		n.logger.Warn("node image credentials not reloaded; keeping the previous ones", "err", err)
		return n.keyring
	}
	n.logger.Info("node image credentials reloaded", "file", source)
	n.keyring, n.source = kr, source
	return kr
}

// load reads the first valid candidate (the kubelet skips invalid files of
// its search path; an explicit file must be valid).
func (n *nodeKeyring) load(stamps []fileStamp) (*Keyring, string, error) {
	for i, c := range n.candidates {
		if !stamps[i].exists && !n.explicit {
			continue
		}
		cfg, err := readCandidate(c)
		if err != nil {
			if n.explicit {
				return nil, "", fmt.Errorf("--image-credential-file: %w", err)
			}
			if !errors.Is(err, fs.ErrNotExist) {
				n.logger.Warn("ignoring docker config file", "err", err)
			}
			continue
		}
		kr := &Keyring{}
		for _, err := range kr.Add(cfg) {
			n.logger.Warn("node image credentials", "file", c.path, "err", err)
		}
		return kr, c.path, nil
	}
	return &Keyring{}, "", nil
}

func readCandidate(c candidate) (DockerConfig, error) {
	data, err := os.ReadFile(c.path)
	if err != nil {
		return nil, err
	}
	switch {
	case c.any:
		return ParseAny(data, c.path)
	case c.legacy:
		return ParseDockercfg(data, c.path)
	}
	return ParseConfigJSON(data, c.path)
}
