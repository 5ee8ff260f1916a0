package credentials

// The matching in this file is ported from the Kubernetes project's
// pkg/credentialprovider/keyring.go (v1.34.4: BasicDockerKeyring.Add and
// Lookup, URLsMatch, SplitURL, isDefaultRegistryMatch),
// Copyright 2014 The Kubernetes Authors, licensed under the Apache License,
// Version 2.0 (http://www.apache.org/licenses/LICENSE-2.0). Changes: keys
// are split by hand instead of with net/url, so that the glob grammar the
// Kubernetes documentation gives (checklist E.14: '?', '[...]', '[^...]',
// '\\') works in hosts where url.Parse rejects or mangles it (see
// docs/decisions/0051-e-15-conflict-globs-match-one.md and
// docs/decisions/0052-e-14-full-glob-grammar-works.md); empty entries are
// skipped; the
// entries of one file are added in sorted key order, so that equal keys
// keep a stable order.

import (
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/skiffnode/skiff/runtime"
)

// Keyring indexes credentials by registry key (host[:port][/path], host
// labels may hold globs). The zero value is empty and ready to use. Not
// safe for concurrent Add; Lookup is read-only.
type Keyring struct {
	index []string // keys, reverse-sorted: more specific paths first
	creds map[string][]runtime.AuthConfig
}

// defaultRegistryHost is Docker Hub's key ("https://index.docker.io/v1/"
// in docker config files reduces to it).
const defaultRegistryHost = "index.docker.io"

// Add indexes cfg's credentials. It returns an error for each key it
// ignores (no host, or a malformed glob); the others are added.
func (k *Keyring) Add(cfg DockerConfig) []error {
	if k.creds == nil {
		k.creds = map[string][]runtime.AuthConfig{}
	}
	var errs []error
	for _, loc := range slices.Sorted(maps.Keys(cfg)) {
		e := cfg[loc]
		if e.empty() {
			continue
		}
		key, err := indexKey(loc)
		if err != nil {
			errs = append(errs, fmt.Errorf("entry %q ignored: %w", loc, err))
			continue
		}
		if _, seen := k.creds[key]; !seen {
			k.index = append(k.index, key)
		}
		k.creds[key] = append(k.creds[key], e.authConfig())
	}
	// Reverse order puts "quay.io/coreos" before "quay.io", so the most
	// specific credential is tried first (checklist E.16).
	sort.Sort(sort.Reverse(sort.StringSlice(k.index)))
	return errs
}

// indexKey reduces a config key to host[:port][/path]: the scheme goes,
// and a leading /v1/ or /v2/ of the path counts as no path (the docker
// client's ResolveAuthConfig rule, kept by the kubelet).
func indexKey(loc string) (string, error) {
	rest := loc
	for _, scheme := range []string{"https://", "http://"} {
		if r, ok := strings.CutPrefix(rest, scheme); ok {
			rest = r
			break
		}
	}
	host, path := splitHostPath(rest)
	if host == "" {
		return "", fmt.Errorf("no registry host")
	}
	labels, _ := splitHost(host)
	for _, label := range labels {
		if _, err := filepath.Match(label, ""); err != nil {
			return "", fmt.Errorf("host label %q: %w", label, err)
		}
	}
	if strings.HasPrefix(path, "/v2/") || strings.HasPrefix(path, "/v1/") {
		path = path[3:]
	}
	if path == "" || path == "/" {
		return host, nil
	}
	return host + path, nil
}

// splitHostPath splits a schemeless key or image name at its first '/'.
func splitHostPath(s string) (host, path string) {
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// splitHost splits a host into its dot-separated labels and its port (""
// when none). A bracketed IPv6 literal is one label.
func splitHost(host string) (labels []string, port string) {
	if strings.HasPrefix(host, "[") {
		if i := strings.IndexByte(host, ']'); i > 0 && net.ParseIP(host[1:i]) != nil {
			return []string{host[1:i]}, strings.TrimPrefix(host[i+1:], ":")
		}
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host, port = host[:i], host[i+1:]
	}
	return strings.Split(host, "."), port
}

// matchKey reports whether the image repository target
// (host[:port]/path, no scheme) matches the key glob: the ports are equal,
// the hosts have as many labels and each label matches its glob
// (filepath.Match: checklist E.14), and glob's path is a string prefix of
// target's path. Globs never span labels (checklist E.15, decided as the
// kubelet does).
func matchKey(glob, target string) bool {
	globHost, globPath := splitHostPath(glob)
	targetHost, targetPath := splitHostPath(target)
	globLabels, globPort := splitHost(globHost)
	targetLabels, targetPort := splitHost(targetHost)
	if globPort != targetPort || len(globLabels) != len(targetLabels) {
		return false
	}
	if !strings.HasPrefix(targetPath, globPath) {
		return false
	}
	for i, g := range globLabels {
		if ok, err := filepath.Match(g, targetLabels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// Lookup returns the credentials whose keys match repo (a normalized
// repository name without tag or digest, e.g. "docker.io/library/nginx"),
// most specific key first. Docker Hub's "index.docker.io" credentials
// serve Docker Hub images when nothing else matched.
func (k *Keyring) Lookup(repo string) []runtime.AuthConfig {
	var ret []runtime.AuthConfig
	for _, key := range k.index {
		if matchKey(key, repo) {
			ret = append(ret, k.creds[key]...)
		}
	}
	if len(ret) > 0 {
		return ret
	}
	if isDefaultRegistryMatch(repo) {
		return slices.Clone(k.creds[defaultRegistryHost])
	}
	return nil
}

// isDefaultRegistryMatch reports whether image is pulled from Docker Hub,
// judging by its name alone.
func isDefaultRegistryMatch(image string) bool {
	first, _, hasSlash := strings.Cut(image, "/")
	switch {
	case first == "":
		return false
	case !hasSlash:
		return true // e.g. "ubuntu"
	case first == "docker.io" || first == "index.docker.io":
		return true
	}
	// The docker client takes a first component with a '.' or ':' for a
	// registry host, anything else for a Docker Hub user name.
	return !strings.ContainsAny(first, ".:")
}
