package node

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/internal/credentials"
	"github.com/skiffnode/skiff/internal/objects"
	"github.com/skiffnode/skiff/internal/registries"
	"github.com/skiffnode/skiff/runtime/containerd"
)

var _ agent.PullCredentials = (*credentials.Provider)(nil)

// registryOptions are the flags for pull credentials and the registries
// file, and the registries file once resolved.
type RegistryConfig struct {
	CredentialFile string
	RegistryConfig string

	// rendered is the registries file for the managed containerd, set by
	// resolve; nil when there is none.
	Rendered *registries.Rendered
}

// resolve reads and validates the registries file: --registry-config, or
// <root-dir>/registries.yaml when it exists. It applies to the managed
// containerd only: with --container-runtime-endpoint an explicit
// --registry-config is an error and a default-path file is ignored with
// a warning.
func (o *RegistryConfig) resolve(rootDir, runtimeEndpoint string, log *slog.Logger) error {
	path, explicit := o.RegistryConfig, o.RegistryConfig != ""
	if !explicit {
		path = filepath.Join(rootDir, "registries.yaml")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	if runtimeEndpoint != "" {
		if explicit {
			return fmt.Errorf("--registry-config configures skiff's managed containerd; with --container-runtime-endpoint configure the registries of that runtime instead")
		}
		log.Warn("ignoring the registries file: it configures skiff's managed containerd only, and --container-runtime-endpoint is set", "file", path)
		return nil
	}
	f, err := registries.Load(path)
	if err != nil {
		return err
	}
	r := f.Render()
	o.Rendered = &r
	dirs := make([]string, 0, len(r.Hosts))
	for d := range r.Hosts {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	log.Info("registries file", "file", path, "hostsDirs", dirs, "auths", len(r.Auths))
	return nil
}

// containerdRegistry is the resolved registries file in the managed
// containerd's terms (empty without one: containerd's defaults).
func (o *RegistryConfig) containerdRegistry() (map[string]string, map[string]containerd.RegistryAuth) {
	if o.Rendered == nil {
		return nil, nil
	}
	auths := make(map[string]containerd.RegistryAuth, len(o.Rendered.Auths))
	for host, a := range o.Rendered.Auths {
		auths[host] = containerd.RegistryAuth(a)
	}
	return o.Rendered.Hosts, auths
}

// credentials builds the agent's pull credentials: the pods'
// imagePullSecrets from secrets, then the node's docker config file.
func (o *RegistryConfig) credentials(rootDir string, secrets objects.Getter, log *slog.Logger) (*credentials.Provider, error) {
	return credentials.New(credentials.Config{File: o.CredentialFile, RootDir: rootDir, Secrets: secrets, Logger: log})
}
