// Package userns gives the pods that ask for it (spec.hostUsers: false) a
// user namespace of their own, as the kubelet's user namespace manager
// does: each pod gets one block of IDsPerPod host IDs from the node's
// range, mapped to IDs 0..IDsPerPod-1 in the pod, the same for UIDs and
// GIDs, so no two pods share a host ID. The block is kept in the pod's
// directory (PodsDir/<uid>/userns, the kubelet's format), so a restarted
// node gives a pod the same IDs again.
package userns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/skiffnode/skiff/internal/atomicfile"
	"github.com/skiffnode/skiff/runtime"
)

// Defaults of Config: the kubelet's (userNamespaces.idsPerPod, and the
// range it takes without a "kubelet" entry in /etc/subuid: every ID above
// the first block, which stays the node's own).
const (
	DefaultIDsPerPod = 1 << 16
	DefaultFirstID   = DefaultIDsPerPod
	DefaultLength    = 1<<32 - DefaultIDsPerPod
)

// mappingFile is the name of a pod's mapping file in its directory.
const mappingFile = "userns"

// Config configures a Manager.
type Config struct {
	// PodsDir holds the pods' directories (<root-dir>/pods).
	PodsDir string
	// FirstID and Length are the node's range of host IDs for pods
	// (defaults DefaultFirstID, DefaultLength); IDsPerPod the block each
	// pod gets (default DefaultIDsPerPod, a multiple of 65536). FirstID
	// and Length must be multiples of IDsPerPod, FirstID at least
	// IDsPerPod (host ID 0 is never mapped).
	FirstID, Length, IDsPerPod uint32
	// MaxPods is how many pods the range must hold (--max-pods).
	MaxPods int
	// Intn picks a free block at random (default math/rand/v2.IntN);
	// tests make it deterministic.
	Intn func(n int) int
}

// Manager allocates the pods' blocks. Safe for concurrent use.
type Manager struct {
	cfg   Config
	mu    sync.Mutex
	n     int            // blocks in the range
	slots map[int]string // pod UID by block index, of the blocks in use
	byPod map[string]int // block index by pod UID
}

// New checks cfg and returns a Manager holding the blocks that the pods'
// mapping files under PodsDir record. A file that cannot be read, or that
// records a block another pod holds or one outside the range, is an
// error naming it: the node must not give two pods the same IDs.
func New(cfg Config) (*Manager, error) {
	if cfg.IDsPerPod == 0 {
		cfg.IDsPerPod = DefaultIDsPerPod
	}
	if cfg.FirstID == 0 && cfg.Length == 0 {
		cfg.FirstID, cfg.Length = DefaultFirstID, DefaultLength
	}
	if cfg.Intn == nil {
		cfg.Intn = rand.IntN
	}
	switch {
	case cfg.PodsDir == "":
		return nil, errors.New("user namespaces: PodsDir is required")
	case cfg.IDsPerPod%DefaultIDsPerPod != 0:
		return nil, fmt.Errorf("user namespaces: IDs per pod %d is not a multiple of %d", cfg.IDsPerPod, DefaultIDsPerPod)
	case cfg.FirstID%cfg.IDsPerPod != 0 || cfg.Length%cfg.IDsPerPod != 0:
		return nil, fmt.Errorf("user namespaces: range %d+%d is not in blocks of %d", cfg.FirstID, cfg.Length, cfg.IDsPerPod)
	case cfg.FirstID < cfg.IDsPerPod:
		return nil, fmt.Errorf("user namespaces: first ID %d must be at least %d", cfg.FirstID, cfg.IDsPerPod)
	case int64(cfg.Length/cfg.IDsPerPod) < int64(cfg.MaxPods):
		return nil, fmt.Errorf("user namespaces: range of %d IDs holds fewer than %d pods of %d IDs", cfg.Length, cfg.MaxPods, cfg.IDsPerPod)
	}
	m := &Manager{cfg: cfg, n: int(cfg.Length / cfg.IDsPerPod), slots: map[int]string{}, byPod: map[string]int{}}
	if err := m.load(); err != nil {
		return nil, err
	}
	return m, nil
}

// load records the blocks of the mapping files under PodsDir.
func (m *Manager) load() error {
	entries, err := os.ReadDir(m.cfg.PodsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("user namespaces: %w", err)
	}
	for _, e := range entries {
		path := filepath.Join(m.cfg.PodsDir, e.Name(), mappingFile)
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("user namespaces: %w", err)
		}
		mp, err := parseMappings(b)
		if err != nil {
			return fmt.Errorf("user namespaces: %s: %w", path, err)
		}
		if err := m.record(e.Name(), mp); err != nil {
			return fmt.Errorf("user namespaces: %s: %w", path, err)
		}
	}
	return nil
}

// record marks mp's block as pod's.
func (m *Manager) record(pod string, mp runtime.IDMapping) error {
	if mp.Length != m.cfg.IDsPerPod {
		return fmt.Errorf("block of %d IDs, want %d", mp.Length, m.cfg.IDsPerPod)
	}
	if mp.HostID%m.cfg.IDsPerPod != 0 || mp.HostID < m.cfg.FirstID || uint64(mp.HostID)+uint64(mp.Length) > uint64(m.cfg.FirstID)+uint64(m.cfg.Length) {
		return fmt.Errorf("host ID %d is outside the range %d+%d or not at a block's start", mp.HostID, m.cfg.FirstID, m.cfg.Length)
	}
	i := int((mp.HostID - m.cfg.FirstID) / m.cfg.IDsPerPod)
	if owner := m.slots[i]; owner != "" && owner != pod {
		return fmt.Errorf("host IDs %d+%d are pod %s's already", mp.HostID, mp.Length, owner)
	}
	m.slots[i], m.byPod[pod] = pod, i
	return nil
}

// Mapping returns pod's block, allocating one (and writing the pod's
// mapping file) on the first call. An error says why it cannot; the range
// full is one.
func (m *Manager) Mapping(pod string) (runtime.IDMapping, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i, ok := m.byPod[pod]; ok {
		return m.mappingOf(i), nil
	}
	i, ok := m.free()
	if !ok {
		return runtime.IDMapping{}, errors.New("could not find an empty slot to allocate a user namespace")
	}
	mp := m.mappingOf(i)
	if err := m.write(pod, mp); err != nil {
		return runtime.IDMapping{}, err
	}
	m.slots[i], m.byPod[pod] = pod, i
	return mp, nil
}

// free picks a free block: the first free one from a random start.
func (m *Manager) free() (int, bool) {
	n := m.n
	start := m.cfg.Intn(n)
	for k := range n {
		if i := (start + k) % n; m.slots[i] == "" {
			return i, true
		}
	}
	return 0, false
}

func (m *Manager) mappingOf(i int) runtime.IDMapping {
	return runtime.IDMapping{HostID: m.cfg.FirstID + uint32(i)*m.cfg.IDsPerPod, Length: m.cfg.IDsPerPod}
}

// Pods lists the pods holding a block, sorted.
func (m *Manager) Pods() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.byPod))
}

// Release frees pod's block and removes its mapping file; a pod without
// one is no error.
func (m *Manager) Release(pod string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, ok := m.byPod[pod]
	if !ok {
		return nil
	}
	path := filepath.Join(m.cfg.PodsDir, pod, mappingFile)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("user namespaces: %w", err)
	}
	delete(m.slots, i)
	delete(m.byPod, pod)
	return nil
}

// fileMapping and file are the kubelet's mapping file format.
type fileMapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}

type file struct {
	UIDMappings []fileMapping `json:"uidMappings"`
	GIDMappings []fileMapping `json:"gidMappings"`
}

func (m *Manager) write(pod string, mp runtime.IDMapping) error {
	fm := []fileMapping{{HostID: mp.HostID, ContainerID: mp.ContainerID, Length: mp.Length}}
	b, err := json.Marshal(file{UIDMappings: fm, GIDMappings: fm})
	if err != nil {
		return fmt.Errorf("user namespaces: %w", err)
	}
	dir := filepath.Join(m.cfg.PodsDir, pod)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("user namespaces: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, mappingFile), b, 0o600); err != nil {
		return fmt.Errorf("user namespaces: %w", err)
	}
	return nil
}

// parseMappings reads a mapping file: one mapping, the same for UIDs and
// GIDs, of container ID 0.
func parseMappings(b []byte) (runtime.IDMapping, error) {
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return runtime.IDMapping{}, fmt.Errorf("invalid user namespace mappings file: %w", err)
	}
	if len(f.UIDMappings) != 1 || len(f.GIDMappings) != 1 {
		return runtime.IDMapping{}, errors.New("invalid user namespace configuration: no more than one mapping allowed")
	}
	if f.UIDMappings[0] != f.GIDMappings[0] {
		return runtime.IDMapping{}, errors.New("invalid user namespace configuration: GID and UID mappings should be identical")
	}
	u := f.UIDMappings[0]
	if u.ContainerID != 0 {
		return runtime.IDMapping{}, errors.New("invalid user namespace configuration: UID 0 must be mapped")
	}
	return runtime.IDMapping{HostID: u.HostID, ContainerID: u.ContainerID, Length: u.Length}, nil
}
