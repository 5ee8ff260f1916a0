package node

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/skiffnode/skiff/apisource"
	"github.com/skiffnode/skiff/internal/apiclient"
	"github.com/skiffnode/skiff/internal/atomicfile"
)

// bootstrapClientCert is the kubelet's TLS bootstrap: unless --kubeconfig
// holds a client certificate still valid, it requests one with the
// credentials of --bootstrap-kubeconfig, writes it with its key to
// <certDir>/kubelet-client-current.pem (0600) and writes --kubeconfig
// pointing at it, with the bootstrap kubeconfig's server and CA. Blocking
// until the certificate is issued (the controller manager approves the
// request) or ctx ends.
func bootstrapClientCert(ctx context.Context, kubeconfig, bootstrap, certDir, node string, log *slog.Logger) error {
	if valid, err := kubeconfigCertValid(kubeconfig, time.Now()); err != nil {
		return err
	} else if valid {
		return nil
	}
	cfg, err := loadBootstrapKubeconfig(bootstrap)
	if err != nil {
		return err
	}
	client, err := apiclient.New(cfg)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := apisource.RequestNodeCertificate(ctx, client, node, nil, log)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	pemPath := filepath.Join(certDir, "kubelet-client-current.pem")
	if err := atomicfile.Write(pemPath, append(certPEM, keyPEM...), 0o600); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	kc := nodeKubeconfig(cfg, pemPath)
	if err := os.MkdirAll(filepath.Dir(kubeconfig), 0o700); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		return fmt.Errorf("bootstrap: writing --kubeconfig: %w", err)
	}
	log.Info("node client certificate issued", "kubeconfig", kubeconfig, "cert", pemPath)
	return nil
}

// loadBootstrapKubeconfig loads --bootstrap-kubeconfig, whose server must
// be an https:// URL: client-go sends no credentials to any other (it
// reads a kubeconfig's user only for TLS servers), so neither the
// bootstrap token nor the certificate it would get issued could be used.
func loadBootstrapKubeconfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("--bootstrap-kubeconfig: %w", err)
	}
	if !rest.IsConfigTransportTLS(rest.Config{Host: cfg.Host}) {
		return nil, fmt.Errorf("--bootstrap-kubeconfig %s: server %q is not an https:// URL: the bootstrap token and the client certificate would not be sent to it", path, cfg.Host)
	}
	return cfg, nil
}

// nodeKubeconfig is the kubeconfig of the node: the bootstrap's server and
// CA, the client certificate and key in pemPath. Pure.
func nodeKubeconfig(bootstrap *rest.Config, pemPath string) *clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["default-cluster"] = &clientcmdapi.Cluster{
		Server: bootstrap.Host, CertificateAuthority: bootstrap.CAFile, CertificateAuthorityData: bootstrap.CAData,
		InsecureSkipTLSVerify: bootstrap.Insecure, TLSServerName: bootstrap.ServerName,
	}
	kc.AuthInfos["default-auth"] = &clientcmdapi.AuthInfo{ClientCertificate: pemPath, ClientKey: pemPath}
	kc.Contexts["default-context"] = &clientcmdapi.Context{Cluster: "default-cluster", AuthInfo: "default-auth"}
	kc.CurrentContext = "default-context"
	return kc
}

// kubeconfigCertValid reports whether the kubeconfig at path exists and
// has a client certificate valid at now (a missing file is not an error).
func kubeconfigCertValid(path string, now time.Time) (bool, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return false, fmt.Errorf("--kubeconfig: %w", err)
	}
	data := cfg.CertData
	if len(data) == 0 && cfg.CertFile != "" {
		if data, err = os.ReadFile(cfg.CertFile); err != nil {
			return false, nil // e.g. removed: bootstrap again
		}
	}
	c, err := firstCertificate(data)
	return err == nil && now.After(c.NotBefore) && now.Before(c.NotAfter), nil
}

// certRotator renews the client certificate of the node's kubeconfig
// (--rotate-certificates) in the file that holds both the certificate and
// the key (pemPath: the kubeconfig's client-certificate and client-key),
// which client-go reloads. A kubeconfig with embedded or separate
// credentials is refused: the pair could not be replaced atomically.
func certRotator(certFile, keyFile string, api apisource.CSRAPI, node string, log *slog.Logger) (*apisource.CertRotator, error) {
	if certFile == "" || certFile != keyFile {
		return nil, fmt.Errorf("--rotate-certificates: the --kubeconfig's client-certificate and client-key must be the same file (as --bootstrap-kubeconfig writes them), not %q and %q", certFile, keyFile)
	}
	return &apisource.CertRotator{
		API: api, Node: node, Log: log,
		Current: func() (*x509.Certificate, error) { return readCertFile(certFile) },
		Store: func(certPEM, keyPEM []byte) error {
			return atomicfile.Write(certFile, append(certPEM, keyPEM...), 0o600)
		},
	}, nil
}

// readCertFile returns the first certificate in the PEM file at path.
func readCertFile(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := firstCertificate(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// firstCertificate parses the first CERTIFICATE block of PEM data. Pure.
func firstCertificate(data []byte) (*x509.Certificate, error) {
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			return nil, errors.New("no certificate")
		}
		if b.Type == "CERTIFICATE" {
			return x509.ParseCertificate(b.Bytes)
		}
	}
}
