package staticpods

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/manifests"
	"github.com/skiffnode/skiff/podspec"
)

// maxManifestSize bounds how much of one file is read; larger files are an
// error for that file.
const maxManifestSize = 4 << 20

// fileResult is what one manifest file yields. It is cached by content so
// an unchanged file is neither re-parsed nor re-logged.
type fileResult struct {
	sum  [sha256.Size]byte
	pods []*v1.Pod // defaulted and valid; nil when err is set
	// configMaps and secrets are the file's static objects, defaulted and
	// valid; never modified once parsed (the objects store keeps them).
	configMaps []*v1.ConfigMap
	secrets    []*v1.Secret
	err        error // names the file and, for validation, the field path
}

// snapshot is the outcome of one listing of the directory.
type snapshot struct {
	pods       []*v1.Pod
	configMaps []*v1.ConfigMap
	secrets    []*v1.Secret
	errs       map[string]error
	signature  string // changes iff the set of pods changes
}

// relist reads the manifest directory. A missing directory is an empty
// snapshot; any other failure to list it is returned as an error (the
// caller keeps the previous set rather than dropping every pod). Only the
// Run goroutine calls relist; it owns s.cache.
func (s *Source) relist() (snapshot, error) {
	entries, err := os.ReadDir(s.cfg.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		s.cache = map[string]fileResult{}
		return snapshot{errs: map[string]error{}}, nil
	}
	if err != nil {
		return snapshot{}, fmt.Errorf("listing manifest directory %s: %w", s.cfg.Dir, err)
	}
	cache := make(map[string]fileResult, len(entries))
	var paths []string
	for _, e := range entries { // sorted by name
		if ignoredName(e.Name()) {
			continue
		}
		path := filepath.Join(s.cfg.Dir, e.Name())
		res, ok := s.readFile(path)
		if !ok {
			continue
		}
		cache[path] = res
		paths = append(paths, path)
	}
	s.cache = cache
	return s.assemble(paths), nil
}

// readFile reads and parses one directory entry; ok is false for entries
// that are not manifests (directories, sockets, files gone since listing).
func (s *Source) readFile(path string) (res fileResult, ok bool) {
	info, err := os.Stat(path) // follows symlinks, like the kubelet
	if err != nil || !info.Mode().IsRegular() {
		if err == nil && info.IsDir() {
			s.log.Debug("not recursing into subdirectory of the manifest directory", "path", path)
		}
		return fileResult{}, false
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileResult{}, false
	}
	if err != nil {
		return fileResult{err: fmt.Errorf("%s: %w", path, err)}, true
	}
	defer f.Close()
	data, err := limitedRead(f, maxManifestSize)
	if err != nil {
		return fileResult{err: fmt.Errorf("%s: %w", path, err)}, true
	}
	sum := sha256.Sum256(data)
	if cached, ok := s.cache[path]; ok && cached.sum == sum {
		return cached, true
	}
	res = s.parse(path, data)
	res.sum = sum
	return res, true
}

// parse decodes, applies the static-pod and API defaults, and validates the
// pods and objects of one file. A file is all or nothing: any error rejects
// all its pods and objects.
func (s *Source) parse(path string, data []byte) fileResult {
	m, err := manifests.DecodeManifest(data)
	if err != nil {
		return fileResult{err: fmt.Errorf("%s: %w", path, err)}
	}
	pods, err := s.parsePods(path, m.Pods)
	if err != nil {
		return fileResult{err: err}
	}
	if err := parseObjects(s.cfg.NodeName, path, m); err != nil {
		return fileResult{err: err}
	}
	return fileResult{pods: pods, configMaps: m.ConfigMaps, secrets: m.Secrets}
}

// parsePods defaults and validates the pods of the file at path.
func (s *Source) parsePods(path string, pods []*v1.Pod) ([]*v1.Pod, error) {
	seen := time.Now().UTC().Format(time.RFC3339Nano)
	for i, pod := range pods {
		where := path
		if len(pods) > 1 {
			where = fmt.Sprintf("%s: pod %d", path, i+1)
		}
		if err := applyStaticDefaults(pod, s.cfg.NodeName, path, seen); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		podspec.SetDefaults(pod)
		if errs := podspec.Validate(pod); len(errs) > 0 {
			return nil, fmt.Errorf("%s: %w", where, errs.ToAggregate())
		}
	}
	return pods, nil
}

// assemble builds the snapshot from the parsed files in name order. As in
// the kubelet, the first file (by name) defining a namespace/name or UID
// wins; a later file with a duplicate is rejected whole, with an error.
func (s *Source) assemble(paths []string) snapshot {
	snap := snapshot{errs: map[string]error{}}
	names := map[string]string{}    // namespace/name -> path
	uids := map[string]string{}     // uid -> path
	objNames := map[string]string{} // kind namespace/name -> path
	var sig strings.Builder
	for _, path := range paths {
		res := s.cache[path]
		if res.err != nil {
			snap.errs[path] = res.err
			continue
		}
		if err := checkDuplicates(path, res.pods, names, uids); err != nil {
			snap.errs[path] = err
			continue
		}
		if err := checkObjectDuplicates(path, res, objNames); err != nil {
			snap.errs[path] = err
			continue
		}
		addObjects(&snap, path, res, objNames)
		sum := hex.EncodeToString(res.sum[:])
		for _, pod := range res.pods {
			names[pod.Namespace+"/"+pod.Name] = path
			uids[string(pod.UID)] = path
			snap.pods = append(snap.pods, pod)
			fmt.Fprintf(&sig, "%s:%s;", pod.UID, sum)
		}
	}
	snap.signature = sig.String()
	return snap
}

// checkDuplicates reports the first pod of path whose name or UID is taken,
// by an earlier file or by an earlier pod in the same file.
func checkDuplicates(path string, pods []*v1.Pod, names, uids map[string]string) error {
	local := map[string]bool{}
	for _, pod := range pods {
		key := pod.Namespace + "/" + pod.Name
		if other, ok := names[key]; ok {
			return fmt.Errorf("%s: pod %q is already defined by %s (the first file in name order wins)", path, key, other)
		}
		if other, ok := uids[string(pod.UID)]; ok {
			return fmt.Errorf("%s: pod %q has UID %s, already used by %s (the first file in name order wins)", path, key, pod.UID, other)
		}
		if local[key] || local["uid:"+string(pod.UID)] {
			return fmt.Errorf("%s: pod %q is defined twice in this file", path, key)
		}
		local[key], local["uid:"+string(pod.UID)] = true, true
	}
	return nil
}
