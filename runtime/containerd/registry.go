package containerd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// renderRegistry writes the CRI plugin's registry section: config_path
// (hosts.toml files: mirrors and TLS) and the auth entries. containerd
// 1.6 refuses registry.mirrors and registry.configs.*.tls beside
// config_path but still reads registry.configs.*.auth (pkg/cri/server
// image_pull.go: registryHosts looks up Configs[host].Auth when the pull
// brings no credentials).
func renderRegistry(b *strings.Builder, cri, certsD string, auths map[string]RegistryAuth) error {
	fmt.Fprintf(b, "[%s.registry]\n", cri)
	fmt.Fprintf(b, "  config_path = %s\n", tomlString(certsD))
	hosts := make([]string, 0, len(auths))
	for host := range auths {
		hosts = append(hosts, host)
	}
	sort.Strings(hosts)
	for _, host := range hosts {
		a := auths[host]
		for _, s := range []string{host, a.Username, a.Password, a.Auth, a.IdentityToken} {
			if hasControl(s) {
				return fmt.Errorf("containerd config: control character in the registry auth of %q", host)
			}
		}
		if strings.ContainsAny(host, "[]") {
			// containerd's TOML reader (go-toml 1) rejects ']' in a
			// quoted table key.
			return fmt.Errorf("containerd config: registry auth host %q: IPv6 literals are not supported", host)
		}
		fmt.Fprintf(b, "[%s.registry.configs.%s.auth]\n", cri, tomlString(host))
		for _, kv := range [][2]string{{"username", a.Username}, {"password", a.Password}, {"auth", a.Auth}, {"identitytoken", a.IdentityToken}} {
			if kv[1] != "" {
				fmt.Fprintf(b, "  %s = %s\n", kv[0], tomlString(kv[1]))
			}
		}
	}
	return nil
}

// writeHostsDir replaces the content of dir with hosts, each as
// dir/<name>/hosts.toml: it fills a sibling temporary directory and
// swaps it in with one rename (RENAME_EXCHANGE where the filesystem has
// it), so containerd, which reads hosts files on every pull, sees the old
// set or the new one. Leftovers of an interrupted earlier write are
// removed. Not safe for concurrent calls on one dir.
func writeHostsDir(dir string, hosts map[string]string) (retErr error) {
	parent := filepath.Dir(dir)
	leftovers, _ := filepath.Glob(filepath.Join(parent, ".certs.d-*"))
	for _, l := range leftovers {
		_ = os.RemoveAll(l)
	}
	tmp, err := os.MkdirTemp(parent, ".certs.d-")
	if err != nil {
		return fmt.Errorf("registry hosts: %w", err)
	}
	defer func() {
		// After the swap tmp holds the old content; on error, the new.
		_ = os.RemoveAll(tmp)
	}()
	for name, content := range hosts {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
			return fmt.Errorf("registry hosts: bad host directory name %q", name)
		}
		if err := os.Mkdir(filepath.Join(tmp, name), 0o755); err != nil {
			return fmt.Errorf("registry hosts: %w", err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name, "hosts.toml"), []byte(content), 0o644); err != nil {
			return fmt.Errorf("registry hosts: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("registry hosts: %w", err)
	}
	err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dir, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT): // first write: nothing to exchange with
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS):
		// No RENAME_EXCHANGE on this filesystem: remove the old directory
		// first (a pull in between sees containerd's defaults).
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("registry hosts: %w", err)
		}
	default:
		return fmt.Errorf("registry hosts: swap %s: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("registry hosts: %w", err)
	}
	return nil
}
