package cgroups

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sync"

	libcg "github.com/opencontainers/cgroups"
	cgmanager "github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/cgroups/systemd"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/podspec/qos"
)

// Config configures a Manager.
type Config struct {
	// Driver is the cgroup driver (default cgroupfs).
	Driver Driver
	// Root is --cgroup-root: the cgroup kubepods lives in (default "/";
	// with systemd a slice such as "skiff.slice" also works).
	Root string
	// PodMaxPids is pids.max of every pod cgroup (<= 0: unlimited).
	PodMaxPids int64
	// CPUPeriod is the CFS period of the pod cgroups' cpu quotas (µs, the
	// kubelet's cpuCFSQuotaPeriod; 0: QuotaPeriod).
	CPUPeriod uint64
	// Kubepods limits the kubepods cgroup (node allocatable); nil sets
	// nothing there.
	Kubepods *PodResources
	Logger   *slog.Logger
}

// Manager creates, sizes and removes the QoS and pod cgroups. Safe for
// concurrent use; every method is idempotent.
type Manager struct {
	mode     Mode
	driver   Driver
	kubepods Name
	cfg      Config
	log      *slog.Logger
	// mountpoints of the v1 controllers, by controller name.
	mounts map[string]string
	// unified is where cgroup2 is mounted (V2: UnifiedMountpoint).
	unified string

	mu sync.Mutex // serialises writes to the QoS parents
}

// New detects the cgroup mode and checks the driver can work here: the
// systemd driver needs systemd running as init. It changes nothing.
func New(cfg Config) (*Manager, error) {
	if cfg.Driver == "" {
		cfg.Driver = DriverCgroupfs
	}
	if _, err := ParseDriver(string(cfg.Driver)); err != nil {
		return nil, err
	}
	if cfg.Root == "" {
		cfg.Root = "/"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Driver == DriverSystemd && !systemd.IsRunningSystemd() {
		return nil, errors.New("--cgroup-driver=systemd needs systemd running (no /run/systemd/system); use --cgroup-driver=cgroupfs")
	}
	mode, err := DetectMode(UnifiedMountpoint)
	if err != nil {
		return nil, err
	}
	m := &Manager{
		mode: mode, driver: cfg.Driver, cfg: cfg, log: cfg.Logger,
		kubepods: parseRoot(cfg.Root, cfg.Driver).Child("kubepods"),
		mounts:   map[string]string{}, unified: UnifiedMountpoint,
	}
	if mode == V1 {
		mounts, err := libcg.GetCgroupMounts(false)
		if err != nil {
			return nil, fmt.Errorf("cgroup v1 mounts: %w", err)
		}
		for _, mnt := range mounts {
			for _, s := range mnt.Subsystems {
				m.mounts[s] = mnt.Mountpoint
			}
		}
		if m.mounts["memory"] == "" || m.mounts["cpu"] == "" {
			return nil, fmt.Errorf("cgroup v1: the cpu and memory controllers must be mounted (have %v)", m.mounts)
		}
	}
	return m, nil
}

// Mode is the machine's cgroup version.
func (m *Manager) Mode() Mode { return m.mode }

// Driver is the cgroup driver in use.
func (m *Manager) Driver() Driver { return m.driver }

// KubepodsName is the name of the kubepods cgroup.
func (m *Manager) KubepodsName() Name { return m.kubepods.Child() }

// PodName is the name of pod's cgroup: kubepods[/<qos>]/pod<uid>.
func (m *Manager) PodName(uid types.UID, qos v1.PodQOSClass) Name {
	return qosName(m.kubepods, qos).Child(podPrefix + string(uid))
}

// CgroupParent is what the CRI runtime gets as the sandbox's
// CgroupParent: the cgroupfs path, or the pod's slice name for systemd.
func (m *Manager) CgroupParent(pod *v1.Pod) string {
	n := m.PodName(pod.UID, qos.Class(pod))
	if m.driver == DriverSystemd {
		return path.Base(n.ToSystemd())
	}
	return n.ToCgroupfs()
}

// relPath is n's path below the cgroup mountpoint(s).
func (m *Manager) relPath(n Name) string {
	if m.driver == DriverSystemd {
		return n.ToSystemd()
	}
	return n.ToCgroupfs()
}

// Dir is the directory of cgroup n for controller (v1; ignored on v2).
func (m *Manager) Dir(n Name, controller string) string {
	return m.dirOfRel(m.relPath(n), controller)
}

func (m *Manager) dirOfRel(rel, controller string) string {
	if m.mode == V2 {
		return filepath.Join(m.unified, rel)
	}
	return filepath.Join(m.mounts[controller], rel)
}

// libConfig is the library's description of cgroup n with res.
func (m *Manager) libConfig(n Name, res *PodResources) *libcg.Cgroup {
	c := &libcg.Cgroup{Systemd: m.driver == DriverSystemd, Resources: m.toLib(res)}
	if !c.Systemd {
		c.Path = n.ToCgroupfs()
		return c
	}
	dir, base := path.Split(n.ToSystemd())
	if dir == "/" {
		dir = "-.slice"
	} else {
		dir = path.Base(dir)
	}
	c.Parent, c.Name = dir, base
	return c
}

// toLib converts res; cpu shares become cpu.weight on v2.
func (m *Manager) toLib(res *PodResources) *libcg.Resources {
	r := &libcg.Resources{SkipDevices: true, SkipFreezeOnSet: true}
	if res == nil {
		return r
	}
	if res.CPUShares > 0 {
		if m.mode == V2 {
			r.CpuWeight = SharesToWeight(res.CPUShares)
		} else {
			r.CpuShares = res.CPUShares
		}
	}
	r.CpuQuota, r.CpuPeriod = res.CPUQuota, res.CPUPeriod
	r.Memory = res.Memory
	if res.PidsLimit != 0 {
		pids := res.PidsLimit
		r.PidsLimit = &pids
	}
	return r
}

// ensure creates cgroup n (in every v1 hierarchy) and writes res.
func (m *Manager) ensure(n Name, res *PodResources) error {
	cfg := m.libConfig(n, res)
	mgr, err := cgmanager.New(cfg)
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", m.relPath(n), err)
	}
	if err := mgr.Apply(-1); err != nil {
		return fmt.Errorf("create cgroup %s: %w", m.relPath(n), err)
	}
	if err := mgr.Set(cfg.Resources); err != nil {
		return fmt.Errorf("set limits of cgroup %s: %w", m.relPath(n), err)
	}
	return nil
}

// destroy removes cgroup n (every v1 hierarchy); a missing one is fine.
func (m *Manager) destroy(n Name) error {
	mgr, err := cgmanager.New(m.libConfig(n, nil))
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", m.relPath(n), err)
	}
	if err := mgr.Destroy(); err != nil {
		return fmt.Errorf("remove cgroup %s: %w", m.relPath(n), err)
	}
	return nil
}

// EnsureQoS creates kubepods (sized by Config.Kubepods) and the burstable
// and besteffort parents (cpu shares 2 until UpdateQoS). Idempotent.
func (m *Manager) EnsureQoS(_ context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ensure(m.kubepods, m.cfg.Kubepods); err != nil {
		return err
	}
	for _, qos := range []v1.PodQOSClass{v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		if err := m.ensure(qosName(m.kubepods, qos), &PodResources{CPUShares: MinShares}); err != nil {
			return err
		}
	}
	return nil
}

// UpdateQoS sizes the burstable parent from the active pods (the sum of
// the Burstable pods' cpu requests). Idempotent.
func (m *Manager) UpdateQoS(_ context.Context, pods []*v1.Pod) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ensure(qosName(m.kubepods, v1.PodQOSBurstable), &PodResources{CPUShares: BurstableShares(pods)})
}

// EnsurePod creates the pod's cgroup under its QoS parent and writes its
// limits (ForPod). Call before the sandbox is created. Idempotent.
func (m *Manager) EnsurePod(_ context.Context, pod *v1.Pod) error {
	res := ForPod(pod, m.cfg.PodMaxPids, m.cfg.CPUPeriod)
	if err := m.ensure(m.PodName(pod.UID, qos.Class(pod)), &res); err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// RemovePod kills the processes left in the pod's cgroup (see
// killProcesses), then removes the cgroup, whatever its QoS class; a
// missing one is fine. Call it once the pod's sandboxes are gone.
// Idempotent; blocking, at most ~2 s per cgroup plus the removal, and
// returns early when ctx ends.
func (m *Manager) RemovePod(ctx context.Context, uid types.UID) error {
	var errs []error
	for _, qos := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		n := m.PodName(uid, qos)
		if _, err := os.Stat(m.Dir(n, "memory")); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := m.killProcesses(ctx, n); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, m.destroy(n))
	}
	return errors.Join(errs...)
}

// ListPods returns the UIDs of the pod cgroups that exist (for the cleanup
// of stale ones after a crash).
func (m *Manager) ListPods(_ context.Context) ([]types.UID, error) {
	var out []types.UID
	for _, qos := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		dir := m.Dir(qosName(m.kubepods, qos), "memory")
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list pod cgroups in %s: %w", dir, err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			if uid, ok := uidFromDir(e.Name(), m.driver); ok {
				out = append(out, uid)
			}
		}
	}
	return out, nil
}
