// Package volumes owns the volumes of the node's pods on the host: it sets
// them up before a pod's containers are created, keeps configMap, secret,
// downwardAPI and projected volumes current, and tears them down after the
// pod's containers are gone.
//
// Layout (the kubelet's): <pods-dir>/<uid>/volumes/<plugin>/<name>, with
// the kubelet's plugin directory names (kubernetes.io~empty-dir, ...). A
// hostPath volume has no directory there: containers mount the host path;
// nor has a persistentVolumeClaim volume: containers mount the directory
// of its PersistentVolume (hostPath or local), which outlives the pod.
// Memory-medium emptyDirs, secret and projected volumes are tmpfs mounts
// at their directory, so secrets never reach the disk.
package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/internal/objects"
)

// The kubelet's plugin directory names.
const (
	PluginEmptyDir    = "kubernetes.io~empty-dir"
	PluginConfigMap   = "kubernetes.io~configmap"
	PluginSecret      = "kubernetes.io~secret"
	PluginDownwardAPI = "kubernetes.io~downward-api"
	PluginProjected   = "kubernetes.io~projected"
)

// volumeDirMode is the mode of every volume directory, as the kubelet's
// emptyDir (and the emptyDir wrapped by configMap, secret, ...) has it.
const volumeDirMode = 0o777

// Config is what a Manager needs.
type Config struct {
	// PodsDir is <root-dir>/pods. Required.
	PodsDir string
	// Objects holds the ConfigMaps and Secrets volumes read; nil: none.
	Objects objects.Getter
	// Allocatable is the node's allocatable resources: the size bound of
	// memory-backed volumes and the value of unset limits in
	// resourceFieldRef items. nil: unbounded / unknown.
	Allocatable v1.ResourceList
	// Tokens issues the service account tokens of projected
	// serviceAccountToken sources; nil: such a volume fails to set up.
	Tokens TokenSource
	// TrustBundles gives projected clusterTrustBundle sources their
	// anchors; nil: such a volume fails to set up (no API server).
	TrustBundles TrustBundleSource
	// PodCertificates issues projected podCertificate sources'
	// credentials; nil: such a volume fails to set up (no API server).
	PodCertificates PodCertificateSource
	// Claims reads the claims of persistentVolumeClaim volumes and their
	// PersistentVolumes; nil: such a volume fails to set up (no API
	// server).
	Claims ClaimSource
	// Logger; nil: slog.Default().
	Logger *slog.Logger
	// RefreshFailed, when set, is told of each volume of a running pod
	// that a refresh could not rewrite (an object gone, a token the API
	// server no longer issues): the kubelet's FailedMount event.
	RefreshFailed func(pod *v1.Pod, err *SetUpError)
	// Now stamps the data directories; nil: time.Now.
	Now func() time.Time
}

// TokenSource issues service account tokens bound to a pod (the API
// source's token manager). Token may block on an API call; it returns a
// cached token while that is fresh, so a volume refresh re-reads it and
// writes a rotated one.
type TokenSource interface {
	Token(pod *v1.Pod, audience string, expirationSeconds int64) (string, error)
}

// TrustBundleSource gives projected clusterTrustBundle sources their PEM
// trust anchors (the API source's ClusterTrustBundles), as the kubelet's
// ClusterTrustBundle manager: ByName the named bundle's, BySigner those of
// every bundle of the signer whose labels match sel (nil: none match). A
// missing bundle, or none matching, gives no anchors if allowMissing, else
// an error. Methods may block for the first listing of the bundles.
type TrustBundleSource interface {
	ByName(name string, allowMissing bool) ([]byte, error)
	BySigner(signerName string, sel *metav1.LabelSelector, allowMissing bool) ([]byte, error)
}

// Volume is a set-up volume as containers mount it.
type Volume struct {
	// HostPath is what containers bind-mount.
	HostPath string
	// ReadOnly: the volume type is read-only for containers whatever the
	// mount says (configMap, secret, downwardAPI, projected).
	ReadOnly bool
}

// SetUpError is a volume that could not be set up; its message is the
// kubelet's FailedMount event message.
type SetUpError struct {
	Volume string
	Err    error
}

func (e *SetUpError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.Volume, e.Err)
}

func (e *SetUpError) Unwrap() error { return e.Err }

// Manager sets up, refreshes and tears down pod volumes. All methods are
// safe for concurrent use; calls for one pod are serialised, calls for
// different pods run in parallel. Methods block on file system calls.
type Manager struct {
	cfg       Config
	objects   objects.Getter
	log       *slog.Logger
	mountInfo string // mountinfo path (tests may point elsewhere)
	// afterSubPathCheck, when set (tests), runs in SubPathMount between
	// the subPath's check and its open: where a racing container acts.
	afterSubPathCheck func()

	mu   sync.Mutex
	pods map[types.UID]*podEntry
}

// podEntry is the in-memory state of one pod's volumes; its mu serialises
// every operation on the pod's directory.
type podEntry struct {
	mu sync.Mutex
	// gone: the entry was torn down and dropped; a caller that waited
	// for mu must look the pod up again.
	gone bool
	pod  *v1.Pod
	// vols is nil until every volume of pod was set up.
	vols map[string]Volume
}

// New returns a Manager.
func New(cfg Config) (*Manager, error) {
	if cfg.PodsDir == "" {
		return nil, errors.New("volumes: PodsDir is required")
	}
	m := &Manager{cfg: cfg, objects: cfg.Objects, log: cfg.Logger, mountInfo: mountInfoPath, pods: map[types.UID]*podEntry{}}
	if m.objects == nil {
		m.objects = noObjects{}
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	if m.cfg.Now == nil {
		m.cfg.Now = time.Now
	}
	return m, nil
}

// PodDir is the pod's directory, <pods-dir>/<uid>.
func (m *Manager) PodDir(uid types.UID) string { return filepath.Join(m.cfg.PodsDir, string(uid)) }

func (m *Manager) volumeDir(uid types.UID, plugin, name string) string {
	return filepath.Join(m.PodDir(uid), "volumes", plugin, name)
}

// lock returns uid's entry, locked, creating it if needed.
func (m *Manager) lock(uid types.UID) *podEntry {
	for {
		m.mu.Lock()
		e, ok := m.pods[uid]
		if !ok {
			e = &podEntry{}
			m.pods[uid] = e
		}
		m.mu.Unlock()
		e.mu.Lock()
		if !e.gone {
			return e
		}
		e.mu.Unlock()
	}
}

// drop forgets uid's locked entry e and unlocks it.
func (m *Manager) drop(uid types.UID, e *podEntry) {
	e.gone = true
	m.mu.Lock()
	if m.pods[uid] == e {
		delete(m.pods, uid)
	}
	m.mu.Unlock()
	e.mu.Unlock()
}

// SetUp makes every volume of pod ready and returns them by name. It is
// idempotent and cheap once the pod is set up (a map lookup: the result is
// remembered until TearDown; a newer object of the pod, another pointer,
// rewrites the object-backed volumes whose content changed, so the
// downwardAPI files follow edited labels); after an agent restart it finds what is
// already there (mounted tmpfs, written files) and keeps it. The first
// volume that fails ends the call with a *SetUpError; the volumes set up
// before it stay and the next call retries. The returned map is shared:
// callers must not modify it.
func (m *Manager) SetUp(ctx context.Context, pod *v1.Pod) (map[string]Volume, error) {
	e := m.lock(pod.UID)
	defer e.mu.Unlock()
	if e.vols != nil {
		if pod != e.pod {
			// A newer object of the pod (its labels or annotations edited):
			// the downwardAPI files follow it; unchanged volumes are not
			// rewritten.
			e.pod = pod
			if err := m.refreshLocked(e); err != nil {
				m.log.Warn("updating volumes", "pod", pod.Namespace+"/"+pod.Name, "err", err)
			}
		}
		return e.vols, nil
	}
	vols := make(map[string]Volume, len(pod.Spec.Volumes))
	for i := range pod.Spec.Volumes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v := &pod.Spec.Volumes[i]
		vol, err := m.setUpVolume(ctx, pod, v)
		if err != nil {
			return nil, &SetUpError{Volume: v.Name, Err: err}
		}
		vols[v.Name] = vol
	}
	e.pod, e.vols = pod, vols
	return vols, nil
}

// setUpVolume sets up one volume (idempotent).
func (m *Manager) setUpVolume(ctx context.Context, pod *v1.Pod, v *v1.Volume) (Volume, error) {
	src := &v.VolumeSource
	switch {
	case src.PersistentVolumeClaim != nil:
		return m.setUpClaim(ctx, pod, src.PersistentVolumeClaim)
	case src.Image != nil:
		// The runtime mounts the image itself (the agent pulls it):
		// nothing on the node's file system.
		return Volume{ReadOnly: true}, nil
	case src.HostPath != nil:
		if err := checkHostPath(src.HostPath.Path, src.HostPath.Type); err != nil {
			return Volume{}, err
		}
		return Volume{HostPath: src.HostPath.Path}, nil
	case src.EmptyDir != nil:
		dir := m.volumeDir(pod.UID, PluginEmptyDir, v.Name)
		var created bool
		var err error
		switch src.EmptyDir.Medium {
		case v1.StorageMediumDefault:
			created, err = makeVolumeDir(dir)
		case v1.StorageMediumMemory:
			created, err = m.ensureTmpfs(dir, memoryVolumeSize(pod, src.EmptyDir.SizeLimit, m.cfg.Allocatable))
		default:
			return Volume{}, fmt.Errorf("emptyDir medium %q is not supported by skiff yet", src.EmptyDir.Medium)
		}
		if err == nil && created {
			// Only a volume created now: see "Ownership by fsGroup" in
			// docs/volumes.md (the kubelet's ready file).
			fsGroup, policy := podFSGroup(pod)
			err = m.setOwnership(dir, fsGroup, policy, false)
		}
		return Volume{HostPath: dir}, err
	}
	plugin, onTmpfs := payloadPlugin(src)
	if plugin == "" {
		return Volume{}, errors.New("volume type not supported by skiff yet")
	}
	dir := m.volumeDir(pod.UID, plugin, v.Name)
	var err error
	if onTmpfs {
		_, err = m.ensureTmpfs(dir, memoryVolumeSize(pod, nil, m.cfg.Allocatable))
	} else {
		_, err = makeVolumeDir(dir)
	}
	if err != nil {
		return Volume{}, err
	}
	if _, err := m.writeVolume(pod, v, dir); err != nil {
		return Volume{}, err
	}
	return Volume{HostPath: dir, ReadOnly: true}, nil
}

// payloadPlugin names the plugin directory of a volume type whose content
// skiff writes, and whether it lives on a tmpfs (secrets must never reach
// the disk; projected volumes may hold secrets). "" for other types.
func payloadPlugin(src *v1.VolumeSource) (plugin string, onTmpfs bool) {
	switch {
	case src.ConfigMap != nil:
		return PluginConfigMap, false
	case src.Secret != nil:
		return PluginSecret, true
	case src.DownwardAPI != nil:
		return PluginDownwardAPI, false
	case src.Projected != nil:
		return PluginProjected, true
	}
	return "", false
}

// writeVolume computes the files of a configMap, secret, downwardAPI or
// projected volume and writes them atomically if they changed. A write
// gives the whole volume to the pod's fsGroup before the new version
// becomes visible, with the read-only mask and whatever the pod's
// fsGroupChangePolicy (the kubelet passes no policy here: OnRootMismatch
// would skip the new files, as the root is owned since the first write).
func (m *Manager) writeVolume(pod *v1.Pod, v *v1.Volume, dir string) (bool, error) {
	payload, err := m.payload(pod, v)
	if err != nil {
		return false, err
	}
	var setPerms func() error
	if fsGroup, _ := podFSGroup(pod); fsGroup != nil {
		setPerms = func() error { return m.setOwnership(dir, fsGroup, nil, true) }
		// The modes the ownership gives (a 0600 token becomes 0640), so
		// that an unchanged volume compares equal and is not rewritten.
		for p, f := range payload {
			f.Mode |= int32(roMask)
			payload[p] = f
		}
	}
	return writeAtomic(dir, payload, m.cfg.Now(), setPerms)
}

// podFSGroup returns the pod's fsGroup and fsGroupChangePolicy (nil when
// unset).
func podFSGroup(pod *v1.Pod) (*int64, *v1.PodFSGroupChangePolicy) {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup, sc.FSGroupChangePolicy
	}
	return nil, nil
}

func (m *Manager) payload(pod *v1.Pod, v *v1.Volume) (map[string]file, error) {
	src := &v.VolumeSource
	switch {
	case src.ConfigMap != nil:
		s := src.ConfigMap
		return configMapPayload(m.objects, pod.Namespace, s.Name, s.Items, modeOr(s.DefaultMode, defaultFileMode), isTrue(s.Optional))
	case src.Secret != nil:
		s := src.Secret
		return secretPayload(m.objects, pod.Namespace, s.SecretName, s.Items, modeOr(s.DefaultMode, defaultFileMode), isTrue(s.Optional))
	case src.DownwardAPI != nil:
		return downwardAPIPayload(pod, src.DownwardAPI.Items, modeOr(src.DownwardAPI.DefaultMode, defaultFileMode), m.cfg.Allocatable)
	case src.Projected != nil:
		return m.projectedPayload(pod, v.Name, src.Projected)
	}
	return nil, errors.New("volume type has no content")
}

// makeVolumeDir creates dir (and its parents) with mode 0777 and reports
// whether dir did not exist before.
func makeVolumeDir(dir string) (created bool, err error) {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		created = true
	}
	if err := os.MkdirAll(dir, volumeDirMode); err != nil {
		return false, err
	}
	return created, chmodVolumeDir(dir)
}

// chmodVolumeDir sets dir's mode to 0777 (the umask filtered it), keeping
// the setgid bit that fsGroup ownership gave it before an agent restart
// and the sticky bit of a tmpfs root (1777, which the kubelet leaves as
// the mount made it, and a subPath created in it copies).
func chmodVolumeDir(dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	return os.Chmod(dir, volumeDirMode|info.Mode()&(fs.ModeSetgid|fs.ModeSticky))
}

// ensureTmpfs makes dir a tmpfs mount of size bytes unless it already is
// one (after an agent restart), and reports whether it mounted it now.
func (m *Manager) ensureTmpfs(dir string, size int64) (mountedNow bool, err error) {
	if err := os.MkdirAll(dir, volumeDirMode); err != nil {
		return false, err
	}
	mounted, err := isMountPoint(m.mountInfo, dir)
	if err != nil {
		return false, err
	}
	if !mounted {
		if err := mountTmpfs(dir, size); err != nil {
			return false, err
		}
	}
	return !mounted, chmodVolumeDir(dir)
}

// Refresh rewrites the configMap, secret, downwardAPI and projected
// volumes of every set-up pod whose content changed (the ..data swap; an
// unchanged volume is not written). A volume whose objects are missing or
// invalid keeps its last content, as in the kubelet. Call it when the
// objects changed; blocking; errors are joined.
func (m *Manager) Refresh(ctx context.Context) error {
	m.mu.Lock()
	uids := make([]types.UID, 0, len(m.pods))
	for uid := range m.pods {
		uids = append(uids, uid)
	}
	m.mu.Unlock()
	var errs []error
	for _, uid := range uids {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		errs = append(errs, m.refreshPod(uid))
	}
	return errors.Join(errs...)
}

func (m *Manager) refreshPod(uid types.UID) error {
	m.mu.Lock()
	e := m.pods[uid]
	m.mu.Unlock()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return m.refreshLocked(e)
}

// refreshLocked rewrites e's object-backed volumes whose content changed;
// e.mu is held.
func (m *Manager) refreshLocked(e *podEntry) error {
	if e.gone || e.vols == nil {
		return nil
	}
	var errs []error
	for i := range e.pod.Spec.Volumes {
		v := &e.pod.Spec.Volumes[i]
		plugin, _ := payloadPlugin(&v.VolumeSource)
		if plugin == "" {
			continue
		}
		changed, err := m.writeVolume(e.pod, v, m.volumeDir(e.pod.UID, plugin, v.Name))
		if err != nil {
			if m.cfg.RefreshFailed != nil {
				m.cfg.RefreshFailed(e.pod, &SetUpError{Volume: v.Name, Err: err})
			}
			errs = append(errs, fmt.Errorf("pod %s/%s volume %q: %w", e.pod.Namespace, e.pod.Name, v.Name, err))
		} else if changed {
			m.log.Info("volume updated", "pod", e.pod.Namespace+"/"+e.pod.Name, "volume", v.Name)
		}
	}
	return errors.Join(errs...)
}

// TearDown unmounts everything mounted under the pod's directory and
// removes its volumes directory and its pinned subPaths (volume-subpaths). Idempotent, and independent of memory:
// it works for pods set up by an earlier agent. Call it only once the
// pod's containers are gone. It never removes across a mount it could not
// unmount (that could delete another file system's data).
func (m *Manager) TearDown(ctx context.Context, uid types.UID) error {
	e := m.lock(uid)
	defer m.drop(uid, e)
	return m.tearDown(uid, filepath.Join(m.PodDir(uid), "volumes"), filepath.Join(m.PodDir(uid), subPathsDirName))
}

// tearDown unmounts what is mounted under the pod's directory, then
// removes dirs if nothing is mounted under it any more.
func (m *Manager) tearDown(uid types.UID, dirs ...string) error {
	podDir := m.PodDir(uid)
	mps, err := mountsUnder(m.mountInfo, podDir)
	if err != nil {
		return err
	}
	var errs []error
	for _, mp := range mps {
		errs = append(errs, unmount(mp))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if left, err := mountsUnder(m.mountInfo, podDir); err != nil {
		return err
	} else if len(left) > 0 {
		return fmt.Errorf("still mounted under %s: %v", podDir, left)
	}
	for _, dir := range dirs {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove %s: %w", dir, err)
		}
	}
	return nil
}

// CleanOrphans removes the directory of every pod under PodsDir whose UID
// is neither in keep nor set up by this Manager, unmounting what is
// mounted there first: what a crash or an agent stopped mid-teardown left.
// Call it once, after the sources delivered their first full lists, with
// keep holding every pod the agent knows or the runtime still runs.
// Blocking; errors are joined (the other pods are still cleaned).
func (m *Manager) CleanOrphans(ctx context.Context, keep map[types.UID]bool) error {
	entries, err := os.ReadDir(m.cfg.PodsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list pods directory: %w", err)
	}
	var errs []error
	for _, ent := range entries {
		uid := types.UID(ent.Name())
		if !ent.IsDir() || keep[uid] {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		m.mu.Lock()
		_, known := m.pods[uid]
		var e *podEntry
		if !known {
			e = &podEntry{}
			e.mu.Lock()
			m.pods[uid] = e
		}
		m.mu.Unlock()
		if known {
			continue
		}
		m.log.Info("removing orphaned pod directory", "uid", uid)
		errs = append(errs, m.tearDown(uid, m.PodDir(uid)))
		m.drop(uid, e)
	}
	return errors.Join(errs...)
}
