// Package registries reads skiff's registries file (<root-dir>/registries.yaml
// or --registry-config: mirrors, TLS and auth per registry, a subset of
// k3s's format) and renders it for the managed containerd: one hosts.toml
// per registry host namespace under containerd's config_path, and the CRI
// plugin's registry.configs."<host>".auth entries.
//
// Everything here is pure except Load (reads the file) and Validate (stats
// the certificate files).
package registries

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// File is the registries file.
type File struct {
	// Mirrors maps a registry host as image names give it ("docker.io",
	// "127.0.0.1:5443"), or "*" for every registry, to its mirrors.
	Mirrors map[string]Mirror `json:"mirrors,omitempty"`
	// Configs maps a registry host[:port] (an upstream or a mirror) to its
	// auth and TLS settings.
	Configs map[string]Config `json:"configs,omitempty"`
}

// Mirror lists the endpoints to try, in order, before the registry itself.
type Mirror struct {
	Endpoints []string `json:"endpoint,omitempty"`
}

// Config is one host's settings.
type Config struct {
	Auth *Auth `json:"auth,omitempty"`
	TLS  *TLS  `json:"tls,omitempty"`
}

// Auth is a credential for one host: Username and Password, or Auth
// (base64 of "user:password"), or IdentityToken.
type Auth struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
}

// TLS is a host's TLS settings. Relative paths are relative to the
// registries file's directory (Load makes them absolute).
type TLS struct {
	CAFile             string `json:"ca_file,omitempty"`
	CertFile           string `json:"cert_file,omitempty"`
	KeyFile            string `json:"key_file,omitempty"`
	InsecureSkipVerify bool   `json:"insecure_skip_verify,omitempty"`
}

// Load reads and strictly decodes the registries file at path (an unknown
// or duplicate field is an error naming the file and the field), makes its
// certificate paths absolute and validates it. Errors name the file.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("registries file: %w", err)
	}
	f, err := Parse(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("registries file %s: %w", path, err)
	}
	return f, nil
}

// Parse decodes data strictly (every mapping key a string, see
// checkKeys), resolves relative certificate paths
// against baseDir and validates the result.
func Parse(data []byte, baseDir string) (*File, error) {
	if err := checkKeys(data); err != nil {
		return nil, err
	}
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, err
	}
	for host, c := range f.Configs {
		if c.TLS != nil {
			for _, p := range []*string{&c.TLS.CAFile, &c.TLS.CertFile, &c.TLS.KeyFile} {
				if *p != "" && !filepath.IsAbs(*p) {
					*p = filepath.Join(baseDir, *p)
				}
			}
		}
		f.Configs[host] = c
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// Validate checks f: hosts are host[:port] (no IPv6 literals); endpoints
// are http(s) URLs;
// plain http and insecure_skip_verify only for loopback hosts (127.0.0.0/8,
// ::1, localhost); certificate files exist, cert_file and key_file come
// together; an auth has exactly one kind of credential. All problems are
// returned, joined, each naming its field.
func (f *File) Validate() error {
	var errs []error
	add := func(field string, err error) { errs = append(errs, fmt.Errorf("%s: %w", field, err)) }
	for _, host := range slices.Sorted(maps.Keys(f.Mirrors)) {
		field := fmt.Sprintf("mirrors[%q]", host)
		if host != "*" {
			if err := checkHost(host); err != nil {
				add(field, err)
			}
		}
		for i, ep := range f.Mirrors[host].Endpoints {
			if err := checkEndpoint(ep); err != nil {
				add(fmt.Sprintf("%s.endpoint[%d]", field, i), err)
			}
		}
	}
	for _, host := range slices.Sorted(maps.Keys(f.Configs)) {
		field := fmt.Sprintf("configs[%q]", host)
		if host == "*" {
			add(field, errors.New(`"*" is not supported here; name each host`))
			continue
		}
		if err := checkHost(host); err != nil {
			add(field, err)
			continue
		}
		c := f.Configs[host]
		if c.Auth != nil {
			if err := c.Auth.check(); err != nil {
				add(field+".auth", err)
			}
		}
		if c.TLS != nil {
			for _, err := range c.TLS.check(host) {
				add(field+".tls", err)
			}
		}
	}
	return errors.Join(errs...)
}

// checkHost accepts host[:port] without scheme or path, whose host name
// has no empty label ("." and ".." would also name no directory of
// containerd's config_path).
func checkHost(host string) error {
	if host == "" || strings.ContainsAny(host, "/ \t@?#") {
		return fmt.Errorf("%q is not a host[:port]", host)
	}
	u, err := url.Parse("https://" + host)
	if err != nil || u.Host != host || u.Hostname() == "" || slices.Contains(strings.Split(u.Hostname(), "."), "") {
		return fmt.Errorf("%q is not a host[:port]", host)
	}
	return checkNotIPv6(host)
}

// checkNotIPv6 refuses IPv6 literals: containerd's TOML reader (go-toml 1)
// cannot read them as the quoted table keys hosts.toml and config.toml
// need ("[::1]:5000" holds a ']').
func checkNotIPv6(host string) error {
	if strings.ContainsAny(host, "[]") {
		return fmt.Errorf("%q: IPv6 literals are not supported (containerd cannot read them in hosts.toml); use a host name such as localhost", host)
	}
	return nil
}

func checkEndpoint(ep string) error {
	u, err := url.Parse(ep)
	if err != nil {
		return err
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("%q: want an https:// (or, for a loopback host, http://) URL", ep)
	}
	if u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q: want scheme://host[:port][/path]", ep)
	}
	if err := checkNotIPv6(u.Host); err != nil {
		return err
	}
	if u.Scheme == "http" && !IsLoopback(u.Host) {
		return fmt.Errorf("%q: plain http is allowed only for a loopback host (127.0.0.0/8, ::1, localhost)", ep)
	}
	return nil
}

func (a *Auth) check() error {
	// containerd's config.toml holds these as TOML strings, which skiff
	// writes without control characters (runtime/containerd refuses them).
	for _, f := range []struct{ name, value string }{{"username", a.Username}, {"password", a.Password}, {"auth", a.Auth}, {"identitytoken", a.IdentityToken}} {
		if strings.ContainsFunc(f.value, isControl) {
			return fmt.Errorf("%s: holds a control character", f.name)
		}
	}
	kinds := 0
	if a.Username != "" || a.Password != "" {
		kinds++
		if a.Username == "" {
			return errors.New("password without username")
		}
	}
	if a.Auth != "" {
		kinds++
		dec, err := base64.StdEncoding.DecodeString(a.Auth)
		if err != nil {
			return fmt.Errorf("auth: not base64: %w", err)
		}
		if !strings.Contains(string(dec), ":") {
			return errors.New("auth: want base64 of user:password")
		}
	}
	if a.IdentityToken != "" {
		kinds++
	}
	if kinds != 1 {
		return errors.New("give one of username/password, auth or identitytoken")
	}
	return nil
}

func (t *TLS) check(host string) []error {
	var errs []error
	if t.InsecureSkipVerify && !IsLoopback(host) {
		errs = append(errs, fmt.Errorf("insecure_skip_verify is allowed only for a loopback host (127.0.0.0/8, ::1, localhost), not %q", host))
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		errs = append(errs, errors.New("cert_file and key_file go together"))
	}
	for _, p := range []struct{ name, path string }{{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile}} {
		if p.path == "" {
			continue
		}
		if fi, err := os.Stat(p.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
		} else if fi.IsDir() {
			errs = append(errs, fmt.Errorf("%s: %s is a directory", p.name, p.path))
		}
	}
	return errs
}

// isControl reports the characters a TOML basic string cannot hold as
// they are.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// IsLoopback reports whether host (host[:port], an IPv6 literal in
// brackets) names this machine: localhost, 127.0.0.0/8 or ::1.
func IsLoopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
