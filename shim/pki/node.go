package pki

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Node identity, as kube-apiserver's x509 authenticator and the Node
// authorizer read it: user "system:node:<name>" in group "system:nodes".
const (
	NodeUserPrefix = "system:node:"
	NodesGroup     = "system:nodes"
)

// NodeKubeconfigPath is the node's kubeconfig file under a data directory.
func NodeKubeconfigPath(dataDir string) string { return filepath.Join(dataDir, "node.kubeconfig") }

// EnsureNodeKubeconfig writes <dataDir>/node.kubeconfig (0600) for node:
// server (https://host:port) trusted by the CA, and a client certificate
// with CN system:node:<node> and O system:nodes signed by the CA. The
// certificate and key of an existing file are kept when they are for the
// same node and verify against b's CA; otherwise (name changed, new CA) a
// new pair is issued. The server is rewritten on every call (its port may
// change between starts). Not safe for concurrent calls on one directory.
func EnsureNodeKubeconfig(dataDir, server string, b *Bundle, node string) (string, error) {
	if node == "" {
		return "", errors.New("no node name")
	}
	path := NodeKubeconfigPath(dataDir)
	cert, key, err := reusableNodeCert(path, b, node)
	if err != nil {
		return "", err
	}
	if cert == nil {
		if cert, key, err = b.ClientCert(NodeUserPrefix+node, NodesGroup); err != nil {
			return "", fmt.Errorf("node certificate: %w", err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["skiff"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: b.CACert}
	cfg.AuthInfos[NodeUserPrefix+node] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts["skiff"] = &clientcmdapi.Context{Cluster: "skiff", AuthInfo: NodeUserPrefix + node}
	cfg.CurrentContext = "skiff"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return "", err
	}
	return path, writeFile(path, data, 0o600)
}

// reusableNodeCert returns the client certificate and key of the
// kubeconfig at path if they are node's and verify against b's CA; nil
// when there is nothing to reuse.
func reusableNodeCert(path string, b *Bundle, node string) (certPEM, keyPEM []byte, err error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("node kubeconfig: %w", err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
		return nil, nil, nil
	}
	auth := cfg.AuthInfos[ctx.AuthInfo]
	block, _ := pem.Decode(auth.ClientCertificateData)
	if block == nil {
		return nil, nil, nil
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || cert.Subject.CommonName != NodeUserPrefix+node {
		return nil, nil, nil
	}
	caCert, _, err := parsePair(b.CACert, b.CAKey)
	if err != nil {
		return nil, nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := cert.Verify(opts); err != nil {
		return nil, nil, nil
	}
	return auth.ClientCertificateData, auth.ClientKeyData, nil
}
