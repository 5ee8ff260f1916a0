package server

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"os"

	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/skiffnode/skiff/shim/pki"
	"github.com/skiffnode/skiff/shim/registry/pod"
)

// kubeletTransport is the transport to kubelets: the shim's kubelet client
// certificate (<dataDir>/pki/apiserver-kubelet-client.{crt,key}, issued by
// its CA), and serving certificates verified against caFile when given
// (kube-apiserver's --kubelet-certificate-authority), else not verified
// (see pod.NewKubeletTransport).
func kubeletTransport(dataDir string, b *pki.Bundle, caFile string) (*http.Transport, error) {
	cert, err := pki.EnsureKubeletClientCert(dataDir, b)
	if err != nil {
		return nil, err
	}
	var roots *x509.CertPool
	if caFile != "" {
		data, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("kubelet certificate authority: %w", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("kubelet certificate authority %s: no PEM certificates", caFile)
		}
	}
	return pod.NewKubeletTransport(cert, roots), nil
}

// kubeletAccess is how the shim reaches kubelets: transport, and for the
// node named node, host instead of its status addresses (when both set).
type kubeletAccess struct {
	transport  *http.Transport
	node, host string
}

// addPodSubresources adds pods/log, pods/exec, pods/attach and
// pods/portforward to the core group's storage: pods read through the
// pods' Store, nodes through the nodes', kubelets reached through k; and
// pods/proxy, to the pods' IPs.
func addPodSubresources(storage map[string]rest.Storage, k kubeletAccess) error {
	pods, ok := storage["pods"].(rest.Getter)
	if !ok {
		return fmt.Errorf("pods storage is a %T", storage["pods"])
	}
	nodes, ok := storage["nodes"].(rest.Getter)
	if !ok {
		return fmt.Errorf("nodes storage is a %T", storage["nodes"])
	}
	sub := pod.NewSubresources(pods, &pod.Kubelets{Nodes: nodes, Transport: k.transport,
		LocalNode: k.node, LocalHost: k.host})
	storage["pods/log"] = sub.Log
	storage["pods/exec"] = sub.Exec
	storage["pods/attach"] = sub.Attach
	storage["pods/portforward"] = sub.PortForward
	storage["pods/proxy"] = pod.NewProxyREST(pods)
	return nil
}
