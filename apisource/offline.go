package apisource

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/internal/atomicfile"
	"github.com/skiffnode/skiff/internal/objects"
)

// OfflineCopyAnnotation marks an API pod the agent runs from the offline
// copy (the API server did not answer at start); its value is when the
// copy of the pod was written (RFC 3339). The pod loses it when the API
// server answers and its own object replaces the copy.
const OfflineCopyAnnotation = "skiff.io/offline-copy"

// OfflineStartAfter is how long the API source waits at start for the API
// server's first pod list before it runs the pods of the offline copy.
const OfflineStartAfter = 10 * time.Second

// The offline copy's layout under its directory (0700, every file 0600).
const (
	offlinePods       = "pods"       // <uid>.json: the pod as the agent got it
	offlineConfigMaps = "configmaps" // <namespace>_<name>.json
	offlineSecrets    = "secrets"    // <namespace>_<name>.json
	offlineTokens     = "tokens"     // <pod uid>_<key hash>.json: a TokenRequest
	offlineServices   = "services"   // <namespace>_links.json, <namespace>_nolinks.json: env vars
	offlineComplete   = "complete"   // written once the first full pod list was saved
)

// OfflineCopy is the local copy of the API pods bound to the node and of
// what they read: ConfigMaps and Secrets (kube-root-ca.crt among them),
// service account tokens and service environment variables (--offline-pods,
// issue 33). The API source saves every pod list it gives the agent, the
// object manager every object it watches, the token manager every token
// it gets, the service env what it gives a container; each file is
// written atomically and durably, and only when its content changes.
// Files of pods gone from the list, and of what no listed pod reads, are
// removed with the next list.
//
// At start, when the API server does not answer within OfflineStartAfter,
// the pods of the copy run (see Source) and the managers read the copy
// while their watches have not listed. A nil *OfflineCopy is a copy that
// is off: it saves nothing and has nothing. Safe for concurrent use.
type OfflineCopy struct {
	dir    string
	log    *slog.Logger
	active atomic.Bool

	mu sync.Mutex // serializes writes and removals
	// saved are the pod objects saved last (the source keeps a pod's
	// object while it does not change): those are not compared again.
	saved map[types.UID]*v1.Pod
	// failed are the writes that failed (a full disk), by file: Run
	// retries them, as nothing else may write that file again (an
	// object's watch has no resync).
	failed map[string][]byte
}

// RetryInterval is how often Run retries the writes that failed.
const RetryInterval = 10 * time.Second

// Run retries the failed writes every RetryInterval until ctx is done.
// A nil copy only waits.
func (c *OfflineCopy) Run(ctx context.Context) {
	if c == nil {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(RetryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.retryFailed()
		}
	}
}

// retryFailed writes again each file whose last write failed.
func (c *OfflineCopy) retryFailed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for rel, data := range c.failed {
		c.writeLocked(rel, data)
	}
}

// NewOfflineCopy opens (creating) the copy in dir, made 0700.
func NewOfflineCopy(dir string, log *slog.Logger) (*OfflineCopy, error) {
	for _, sub := range []string{"", offlinePods, offlineConfigMaps, offlineSecrets, offlineTokens, offlineServices} {
		d := filepath.Join(dir, sub)
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("offline copy: %w", err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, fmt.Errorf("offline copy: %w", err)
		}
	}
	return &OfflineCopy{dir: dir, log: log, saved: map[types.UID]*v1.Pod{}, failed: map[string][]byte{}}, nil
}

// Active reports whether the agent runs pods from the copy: the API
// server did not answer at start and has not listed the pods since.
func (c *OfflineCopy) Active() bool { return c != nil && c.active.Load() }

func (c *OfflineCopy) setActive(on bool) {
	if c != nil {
		c.active.Store(on)
	}
}

// SavePods saves the agent's list of API pods (the source's copies),
// writing the pods that changed, and removes the files of pods gone from
// it and of objects, tokens and service variables no listed pod reads.
// Errors are logged: a failed save leaves the previous copy.
func (c *OfflineCopy) SavePods(pods []*v1.Pod) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := map[string]map[string]bool{offlinePods: {}, offlineConfigMaps: {}, offlineSecrets: {}, offlineServices: {}}
	uids := map[string]bool{}
	saved := make(map[types.UID]*v1.Pod, len(pods))
	for _, p := range pods {
		name := string(p.UID) + ".json"
		keep[offlinePods][name] = true
		uids[string(p.UID)] = true
		for _, r := range referencedObjects(p) {
			keep[r.resource][objectFile(r.namespace, r.name)] = true
		}
		keep[offlineServices][p.Namespace+"_links.json"] = true
		keep[offlineServices][p.Namespace+"_nolinks.json"] = true
		if c.saved[p.UID] == p || c.writeLocked(filepath.Join(offlinePods, name), offlinePod(p)) {
			saved[p.UID] = p
		}
	}
	c.saved = saved
	for sub, names := range keep {
		c.pruneLocked(sub, func(name string) bool { return names[name] })
	}
	c.pruneLocked(offlineTokens, func(name string) bool {
		uid, _, _ := strings.Cut(name, "_")
		return uids[uid]
	})
	c.writeLocked(offlineComplete, []byte("1\n"))
}

// offlinePod is the saved form of an API pod: without what changes with
// every status update (resourceVersion, managedFields, the status but a
// terminal phase), so a pod is written again only when what the agent
// acts on changed.
func offlinePod(p *v1.Pod) any {
	q := p.DeepCopy()
	q.ResourceVersion, q.ManagedFields = "", nil
	phase := q.Status.Phase
	q.Status = v1.PodStatus{}
	if phase == v1.PodSucceeded || phase == v1.PodFailed {
		q.Status.Phase = phase
	}
	return q
}

// LoadPods returns the saved pods, each annotated with OfflineCopyAnnotation;
// false when no complete list was ever saved (the flag was just turned
// on), or on an error (logged).
func (c *OfflineCopy) LoadPods() ([]*v1.Pod, bool) {
	if c == nil {
		return nil, false
	}
	if _, err := os.Stat(filepath.Join(c.dir, offlineComplete)); err != nil {
		return nil, false
	}
	entries, err := os.ReadDir(filepath.Join(c.dir, offlinePods))
	if err != nil {
		c.log.Error("offline copy", "err", err)
		return nil, false
	}
	var out []*v1.Pod
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := &v1.Pod{}
		if !c.read(filepath.Join(offlinePods, e.Name()), p) {
			continue
		}
		if info, err := e.Info(); err == nil {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[OfflineCopyAnnotation] = info.ModTime().UTC().Format(time.RFC3339)
		}
		out = append(out, p)
	}
	return out, true
}

// saveObject saves a watched ConfigMap or Secret (resource "configmaps"
// or "secrets").
func (c *OfflineCopy) saveObject(resource string, obj any) {
	if c == nil {
		return
	}
	var ns, name string
	switch o := obj.(type) {
	case *v1.ConfigMap:
		ns, name = o.Namespace, o.Name
		o = o.DeepCopy()
		o.ManagedFields = nil
		obj = o
	case *v1.Secret:
		ns, name = o.Namespace, o.Name
		o = o.DeepCopy()
		o.ManagedFields = nil
		obj = o
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeLocked(filepath.Join(resource, objectFile(ns, name)), obj)
}

// deleteObject removes a ConfigMap or Secret the API server deleted.
func (c *OfflineCopy) deleteObject(resource, namespace, name string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(filepath.Join(resource, objectFile(namespace, name)))
}

// ConfigMap returns the saved ConfigMap namespace/name (objects.Getter).
func (c *OfflineCopy) ConfigMap(namespace, name string) (*v1.ConfigMap, error) {
	o := &v1.ConfigMap{}
	if c == nil || !c.read(filepath.Join(offlineConfigMaps, objectFile(namespace, name)), o) {
		return nil, fmt.Errorf("configmaps %s/%s: not in the offline copy: %w", namespace, name, objects.ErrNotFound)
	}
	return o, nil
}

// Secret returns the saved Secret namespace/name (objects.Getter).
func (c *OfflineCopy) Secret(namespace, name string) (*v1.Secret, error) {
	o := &v1.Secret{}
	if c == nil || !c.read(filepath.Join(offlineSecrets, objectFile(namespace, name)), o) {
		return nil, fmt.Errorf("secrets %s/%s: not in the offline copy: %w", namespace, name, objects.ErrNotFound)
	}
	return o, nil
}

// saveToken saves the token the API server issued for k at now, unless
// the saved one stays valid long enough (see tokenWorthSaving): tokens
// rotate every ~48 minutes, and most (the kube-api-access volume's, which
// the API server extends to a year) would otherwise be written to disk
// each time for nothing.
func (c *OfflineCopy) saveToken(k tokenKey, tr *authnv1.TokenRequest, now time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	saved := &authnv1.TokenRequest{}
	if c.read(filepath.Join(offlineTokens, tokenFile(k)), saved) && !tokenWorthSaving(saved, tr, now) {
		return
	}
	c.writeLocked(filepath.Join(offlineTokens, tokenFile(k)), tr)
}

// tokenWorthSaving reports whether a new token replaces the saved one: when
// the saved one has less than half the new one's remaining validity left.
// Pure.
func tokenWorthSaving(saved, issued *authnv1.TokenRequest, now time.Time) bool {
	left := saved.Status.ExpirationTimestamp.Sub(now)
	return left < issued.Status.ExpirationTimestamp.Sub(now)/2
}

// token returns the saved token of k, expired or not.
func (c *OfflineCopy) token(k tokenKey) (*authnv1.TokenRequest, bool) {
	tr := &authnv1.TokenRequest{}
	if c == nil || !c.read(filepath.Join(offlineTokens, tokenFile(k)), tr) {
		return nil, false
	}
	return tr, true
}

// saveServiceEnv saves the service variables a container of namespace got.
func (c *OfflineCopy) saveServiceEnv(namespace string, links bool, env []v1.EnvVar) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeLocked(filepath.Join(offlineServices, serviceFile(namespace, links)), env)
}

// serviceEnv returns the saved service variables of namespace.
func (c *OfflineCopy) serviceEnv(namespace string, links bool) ([]v1.EnvVar, bool) {
	var env []v1.EnvVar
	if c == nil || !c.read(filepath.Join(offlineServices, serviceFile(namespace, links)), &env) {
		return nil, false
	}
	return env, true
}

// objectFile names a namespaced object's file: "_" is in neither a
// namespace nor a ConfigMap's or Secret's name.
func objectFile(namespace, name string) string { return namespace + "_" + name + ".json" }

func serviceFile(namespace string, links bool) string {
	if links {
		return namespace + "_links.json"
	}
	return namespace + "_nolinks.json"
}

// tokenFile names a token's file: the pod's UID, then a hash of the rest
// of the key.
func tokenFile(k tokenKey) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%d", k.namespace, k.serviceAccount, k.audience, k.expiration))
	return string(k.pod) + "_" + hex.EncodeToString(h[:8]) + ".json"
}

// writeLocked writes v's JSON to rel unless the file has it already;
// false on an error (logged).
func (c *OfflineCopy) writeLocked(rel string, v any) bool {
	data, ok := v.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(v); err != nil {
			c.log.Error("offline copy", "file", rel, "err", err)
			return false
		}
	}
	path := filepath.Join(c.dir, rel)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		delete(c.failed, rel)
		return true
	}
	if err := atomicfile.WriteSync(path, data, 0o600); err != nil {
		if _, again := c.failed[rel]; !again {
			c.log.Error("offline copy; retrying", "err", err)
		}
		c.failed[rel] = data
		return false
	}
	delete(c.failed, rel)
	return true
}

func (c *OfflineCopy) removeLocked(rel string) {
	delete(c.failed, rel)
	if err := os.Remove(filepath.Join(c.dir, rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.log.Error("offline copy", "err", err)
	}
}

// pruneLocked removes the files of sub that keep does not want.
func (c *OfflineCopy) pruneLocked(sub string, keep func(name string) bool) {
	entries, err := os.ReadDir(filepath.Join(c.dir, sub))
	if err != nil {
		c.log.Error("offline copy", "err", err)
		return
	}
	for _, e := range entries {
		if !keep(e.Name()) {
			c.removeLocked(filepath.Join(sub, e.Name()))
		}
	}
	for rel := range c.failed {
		if dir, name := filepath.Split(rel); filepath.Clean(dir) == sub && !keep(name) {
			delete(c.failed, rel)
		}
	}
}

// read decodes the file rel into v; false if it is missing or broken
// (logged).
func (c *OfflineCopy) read(rel string, v any) bool {
	data, err := os.ReadFile(filepath.Join(c.dir, rel))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.log.Error("offline copy", "err", err)
		}
		return false
	}
	if err := json.Unmarshal(data, v); err != nil {
		c.log.Error("offline copy: a broken file", "file", filepath.Join(c.dir, rel), "err", err)
		return false
	}
	return true
}
