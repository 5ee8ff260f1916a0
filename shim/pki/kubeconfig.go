package pki

import (
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigPath is the admin kubeconfig's file.
func KubeconfigPath(dir string) string { return filepath.Join(dir, "admin.kubeconfig") }

// WriteAdminKubeconfig writes <dataDir>/admin.kubeconfig (0600): server
// (https://host:port) trusted by the CA, the admin token.
func WriteAdminKubeconfig(dataDir, server string, b *Bundle) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["skiff"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: b.CACert}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: b.AdminToken}
	cfg.Contexts["skiff"] = &clientcmdapi.Context{Cluster: "skiff", AuthInfo: "admin"}
	cfg.CurrentContext = "skiff"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return writeFile(KubeconfigPath(dataDir), data, 0o600)
}
