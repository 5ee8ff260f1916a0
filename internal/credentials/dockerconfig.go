// Package credentials finds the registry credentials to try when pulling a
// pod's image, as the kubelet does (checklist E.11-E.16): the pod's
// imagePullSecrets (Secrets of type kubernetes.io/dockercfg or
// kubernetes.io/dockerconfigjson in the pod's namespace) first, then the
// node's docker config file (--image-credential-file, or the kubelet's
// search paths). Keys of the config files may be globbed hosts with path
// prefixes; every matching credential is returned, most specific first.
//
// Provider implements agent.PullCredentials; the package does not import
// agent (cmd/skiff wires it).
package credentials

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/skiffnode/skiff/runtime"
)

// DockerConfig is the credentials of a docker config file: registry key
// (a host with an optional scheme, port, path and globs) to credential.
type DockerConfig map[string]Entry

// Entry is one credential of a docker config file. Auth (base64 of
// "user:password") is decoded into Username and Password when parsed.
type Entry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	Email         string `json:"email,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// empty reports whether e carries no credential (credsStore-style entries
// such as `"https://index.docker.io/v1/": {}`).
func (e Entry) empty() bool {
	return e.Username == "" && e.Password == "" && e.IdentityToken == "" && e.RegistryToken == ""
}

// authConfig is e as the runtime port takes it. ServerAddress stays empty,
// as in the kubelet: the runtime offers the credential to every host of
// the pull (mirrors included).
func (e Entry) authConfig() runtime.AuthConfig {
	return runtime.AuthConfig{
		Username: e.Username, Password: e.Password,
		IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken,
	}
}

// ParseConfigJSON parses a docker config.json (`{"auths": {...}}`, also the
// content of a kubernetes.io/dockerconfigjson Secret). source names the file
// or secret in errors.
func ParseConfigJSON(data []byte, source string) (DockerConfig, error) {
	var raw struct {
		Auths map[string]json.RawMessage `json:"auths"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: not a docker config.json: %w", source, err)
	}
	return parseEntries(raw.Auths, source)
}

// ParseDockercfg parses a legacy .dockercfg (registry keys at the top
// level; also the content of a kubernetes.io/dockercfg Secret).
func ParseDockercfg(data []byte, source string) (DockerConfig, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: not a .dockercfg: %w", source, err)
	}
	return parseEntries(raw, source)
}

// ParseAny parses data as config.json when its top level has an "auths"
// key, else as a legacy .dockercfg.
func ParseAny(data []byte, source string) (DockerConfig, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%s: not a docker config file: %w", source, err)
	}
	if _, ok := top["auths"]; ok {
		return ParseConfigJSON(data, source)
	}
	return parseEntries(top, source)
}

func parseEntries(raw map[string]json.RawMessage, source string) (DockerConfig, error) {
	cfg := make(DockerConfig, len(raw))
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		e, err := parseEntry(raw[key])
		if err != nil {
			return nil, fmt.Errorf("%s: key %q: %w", source, key, err)
		}
		cfg[key] = e
	}
	return cfg, nil
}

func parseEntry(raw json.RawMessage) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return Entry{}, err
	}
	if e.Auth == "" {
		return e, nil
	}
	user, pass, err := decodeAuth(e.Auth)
	if err != nil {
		return Entry{}, fmt.Errorf("auth: %w", err)
	}
	e.Username, e.Password, e.Auth = user, pass, ""
	return e, nil
}

// decodeAuth decodes the "auth" field, base64(username:password), padded
// or not, as the kubelet's decodeDockerConfigFieldAuth does.
func decodeAuth(field string) (username, password string, err error) {
	enc := base64.RawStdEncoding
	if strings.HasSuffix(strings.TrimSpace(field), "=") {
		enc = base64.StdEncoding
	}
	decoded, err := enc.DecodeString(field)
	if err != nil {
		return "", "", fmt.Errorf("not base64: %w", err)
	}
	user, pass, ok := strings.Cut(string(decoded), ":")
	if !ok {
		return "", "", errors.New("unable to parse auth field, must be formatted as base64(username:password)")
	}
	return user, pass, nil
}
