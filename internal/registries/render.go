package registries

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// DefaultDir is the host directory containerd reads for registries that
// have none of their own: the "*" mirror.
const DefaultDir = "_default"

// dockerHubHost is the host containerd contacts for "docker.io" images.
const dockerHubHost = "registry-1.docker.io"

// Rendered is a File in containerd's terms (containerd 1.6, CRI plugin
// with registry.config_path set).
type Rendered struct {
	// Hosts is the content of <config_path>/<dir>/hosts.toml by dir: the
	// registry host as image names give it, or DefaultDir for "*".
	Hosts map[string]string
	// Auths are the CRI plugin's registry.configs."<host>".auth entries.
	// containerd looks them up by the host it contacts, so "docker.io"
	// auth also serves registry-1.docker.io.
	Auths map[string]Auth
}

// Render renders f, which must be valid. A hosts file is written for each
// mirrored registry and for each host with TLS settings:
//
//   - server (the registry itself, tried last) only when the registry has
//     TLS settings, then as https:// with them (otherwise containerd's
//     default applies: https, or http for a loopback host);
//   - one [host."<endpoint>"] per mirror endpoint, in order, with
//     capabilities pull and resolve and the TLS settings of the endpoint's
//     host (https endpoints only).
//
// Render is pure and deterministic.
func (f *File) Render() Rendered {
	r := Rendered{Hosts: map[string]string{}, Auths: map[string]Auth{}}
	namespaces := map[string]bool{}
	for host := range f.Mirrors {
		namespaces[host] = true
	}
	for host, c := range f.Configs {
		if c.TLS != nil {
			namespaces[host] = true
		}
		if c.Auth != nil {
			r.Auths[host] = *c.Auth
		}
	}
	if a, ok := r.Auths["docker.io"]; ok {
		if _, set := r.Auths[dockerHubHost]; !set {
			r.Auths[dockerHubHost] = a
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		dir := ns
		if ns == "*" {
			dir = DefaultDir
		}
		r.Hosts[dir] = f.renderHosts(ns)
	}
	return r
}

func (f *File) renderHosts(ns string) string {
	var b strings.Builder
	b.WriteString("# Written by skiff from its registries file; changes are overwritten on start.\n")
	if tls := f.tlsOf(ns); ns != "*" && tls != nil {
		server := ns
		if ns == "docker.io" {
			server = dockerHubHost
		}
		fmt.Fprintf(&b, "server = %s\n", tomlString("https://"+server))
		writeTLS(&b, tls, "")
	}
	endpoints := f.Mirrors[ns].Endpoints
	if len(endpoints) == 0 {
		// containerd 1.6 and 1.7 reject a hosts.toml without a host table
		// ("invalid `host` tree") and fall back to defaults.
		b.WriteString("\n[host]\n")
	}
	for _, ep := range endpoints {
		fmt.Fprintf(&b, "\n[host.%s]\n", tomlString(ep))
		b.WriteString("  capabilities = [\"pull\", \"resolve\"]\n")
		if u, err := url.Parse(ep); err == nil && u.Scheme == "https" {
			writeTLS(&b, f.tlsOf(u.Host), "  ")
		}
	}
	return b.String()
}

func (f *File) tlsOf(host string) *TLS {
	if c, ok := f.Configs[host]; ok {
		return c.TLS
	}
	return nil
}

func writeTLS(b *strings.Builder, t *TLS, indent string) {
	if t == nil {
		return
	}
	if t.CAFile != "" {
		fmt.Fprintf(b, "%sca = %s\n", indent, tomlString(t.CAFile))
	}
	if t.CertFile != "" {
		fmt.Fprintf(b, "%sclient = [[%s, %s]]\n", indent, tomlString(t.CertFile), tomlString(t.KeyFile))
	}
	if t.InsecureSkipVerify {
		fmt.Fprintf(b, "%sskip_verify = true\n", indent)
	}
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
