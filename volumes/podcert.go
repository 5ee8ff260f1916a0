package volumes

import (
	"errors"

	v1 "k8s.io/api/core/v1"
)

// PodCertificateSource issues the credentials of projected podCertificate
// sources (the API source's pod certificate manager): Bundle returns the
// private key (PEM) and certificate chain (PEM) of source index of pod's
// volume, or an error while none is issued. It may block on API calls.
type PodCertificateSource interface {
	Bundle(pod *v1.Pod, volume string, index int, src *v1.PodCertificateProjection) (key, chain []byte, err error)
}

// errNoPodCertificates is the error of a podCertificate source without an
// API server (the kubelet's NoOpManager's).
var errNoPodCertificates = errors.New("unimplemented")

// podCertificatePayload is the kubelet's projected podCertificate: the key
// then the chain in credentialBundlePath, the key in keyPath, the chain in
// certificateChainPath (each when set), with f's mode and owner.
func (m *Manager) podCertificatePayload(pod *v1.Pod, volume string, index int, s *v1.PodCertificateProjection, f file) (map[string]file, error) {
	if m.cfg.PodCertificates == nil {
		return nil, errNoPodCertificates
	}
	key, chain, err := m.cfg.PodCertificates.Bundle(pod, volume, index, s)
	if err != nil {
		return nil, err
	}
	out := map[string]file{}
	with := func(data []byte) file { g := f; g.Data = data; return g }
	if s.CredentialBundlePath != "" {
		out[s.CredentialBundlePath] = with(append(append([]byte{}, key...), chain...))
	}
	if s.KeyPath != "" {
		out[s.KeyPath] = with(key)
	}
	if s.CertificateChainPath != "" {
		out[s.CertificateChainPath] = with(chain)
	}
	return out, nil
}
