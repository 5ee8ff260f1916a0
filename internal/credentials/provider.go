package credentials

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/distribution/reference"
	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/objects"
	"github.com/skiffnode/skiff/runtime"
)

// Config configures a Provider.
type Config struct {
	// File is --image-credential-file: a docker config.json or legacy
	// .dockercfg (chosen by content) that must exist and be valid. Empty:
	// the kubelet's search paths (SearchPaths), where missing or invalid
	// files are skipped.
	File string
	// RootDir is skiff's --root-dir, searched first as the kubelet
	// searches its root dir.
	RootDir string
	// WorkDir and HomeDir default to the working directory and the user's
	// home directory ($HOME); tests set them.
	WorkDir, HomeDir string
	// Secrets looks up the pods' imagePullSecrets; nil: none are found.
	Secrets objects.Getter
	// Logger receives problems with the node's files (default: discard).
	Logger *slog.Logger
}

// Provider implements agent.PullCredentials: the pod's imagePullSecrets,
// then the node's docker config file. Safe for concurrent use.
type Provider struct {
	secrets objects.Getter
	node    *nodeKeyring
}

// New reads the node's credentials: cfg.File, or the first valid file of
// the search paths (none is fine). An explicit file that is missing or
// invalid is an error. Later changes to the files are picked up by ForPod.
func New(cfg Config) (*Provider, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	logger := cfg.Logger.With("component", "credentials")
	var cands []candidate
	if cfg.File != "" {
		cands = []candidate{{path: cfg.File, any: true}}
	} else {
		if cfg.WorkDir == "" {
			wd, err := os.Getwd()
			if err != nil {
				return nil, fmt.Errorf("image credentials: working directory: %w", err)
			}
			cfg.WorkDir = wd
		}
		if cfg.HomeDir == "" {
			cfg.HomeDir, _ = os.UserHomeDir() // none: not searched
		}
		cands = searchCandidates(cfg.RootDir, cfg.WorkDir, cfg.HomeDir)
	}
	node, err := newNodeKeyring(cands, cfg.File != "", logger)
	if err != nil {
		return nil, err
	}
	return &Provider{secrets: cfg.Secrets, node: node}, nil
}

// ForPod returns the credentials to try for image, in order (checklist
// E.13, E.16): those of the pod's imagePullSecrets that match, most
// specific key first, then the node's that match, as the kubelet's
// MakeDockerKeyring/UnionDockerKeyring order them. An image name that
// does not parse gets none (the caller reports InvalidImageName).
//
// missing names the pull secrets that cannot be retrieved, in the pod's
// order; warnings, one line each: secrets of another type, and secrets
// whose content does not parse or has entries that are ignored (naming
// the secret and the key).
func (p *Provider) ForPod(pod *v1.Pod, image string) (auths []runtime.AuthConfig, missing, warnings []string) {
	podKeyring, missing, warnings := p.podKeyring(pod)
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return nil, missing, warnings
	}
	repo := named.Name()
	auths = append(auths, podKeyring.Lookup(repo)...)
	auths = append(auths, p.node.Get().Lookup(repo)...)
	return auths, missing, warnings
}

// podKeyring builds one keyring of all the pod's pull secrets (in their
// order; the kubelet's secretsToTrackedDockerConfigs).
func (p *Provider) podKeyring(pod *v1.Pod) (kr *Keyring, missing, warnings []string) {
	kr = &Keyring{}
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue // API validation let these through; the kubelet ignores them too
		}
		var sec *v1.Secret
		err := fmt.Errorf("no secrets source")
		if p.secrets != nil {
			sec, err = p.secrets.Secret(pod.Namespace, ref.Name)
		}
		if err != nil {
			missing = append(missing, ref.Name)
			continue
		}
		cfg, err := secretConfig(sec)
		if err != nil {
			warnings = append(warnings, err.Error())
			continue
		}
		for _, err := range kr.Add(cfg) {
			warnings = append(warnings, fmt.Sprintf("image pull secret %q: %v", ref.Name, err))
		}
	}
	return kr, missing, warnings
}

// secretConfig parses an image pull secret (checklist E.12): type
// kubernetes.io/dockerconfigjson with key .dockerconfigjson, or
// kubernetes.io/dockercfg with key .dockercfg.
func secretConfig(sec *v1.Secret) (DockerConfig, error) {
	source := fmt.Sprintf("image pull secret %q", sec.Name)
	switch sec.Type {
	case v1.SecretTypeDockerConfigJson:
		data, ok := secretData(sec, v1.DockerConfigJsonKey)
		if !ok {
			return nil, fmt.Errorf("%s of type %s has no %s key; ignoring it", source, sec.Type, v1.DockerConfigJsonKey)
		}
		return ParseConfigJSON(data, source+" key "+v1.DockerConfigJsonKey)
	case v1.SecretTypeDockercfg:
		data, ok := secretData(sec, v1.DockerConfigKey)
		if !ok {
			return nil, fmt.Errorf("%s of type %s has no %s key; ignoring it", source, sec.Type, v1.DockerConfigKey)
		}
		return ParseDockercfg(data, source+" key "+v1.DockerConfigKey)
	}
	typ := sec.Type
	if typ == "" {
		typ = v1.SecretTypeOpaque
	}
	return nil, fmt.Errorf("%s is of type %s, not %s or %s; ignoring it", source, typ, v1.SecretTypeDockercfg, v1.SecretTypeDockerConfigJson)
}

// secretData returns a non-empty value of key, from StringData (which
// wins, as in the API) or Data.
func secretData(sec *v1.Secret, key string) ([]byte, bool) {
	if s := sec.StringData[key]; s != "" {
		return []byte(s), true
	}
	if b := sec.Data[key]; len(b) > 0 {
		return b, true
	}
	return nil, false
}
