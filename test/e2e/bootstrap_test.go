package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestTLSBootstrap_H1: with only a bootstrap token, skiff requests its
// client certificate (a CSR the controller manager approves and signs),
// writes --kubeconfig, and registers a Ready node with it.
func TestTLSBootstrap_H1(t *testing.T) {
	e := NewEnv(t)
	c := startCluster(t, e)
	cs := c.Client()
	ctx := context.Background()
	// A bootstrap token and the bindings kubeadm makes for it: create
	// CSRs, and have node client CSRs approved automatically.
	const id, secret = "abcdef", "0123456789abcdef"
	tok := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system"},
		Type:       "bootstrap.kubernetes.io/token",
		StringData: map[string]string{"token-id": id, "token-secret": secret, "usage-bootstrap-authentication": "true",
			"expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
	}
	if _, err := cs.CoreV1().Secrets("kube-system").Create(ctx, tok, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, role := range map[string]string{
		"skiff-bootstrappers":    "system:node-bootstrapper",
		"skiff-auto-approve-csr": "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
	} {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:bootstrappers"}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bootstrap := filepath.Join(e.Dir, "bootstrap.kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: c.Server(), CertificateAuthority: c.CAFile()}
	kc.AuthInfos["b"] = &clientcmdapi.AuthInfo{Token: id + "." + secret}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "b"}
	kc.CurrentContext = "c"
	if err := clientcmd.WriteToFile(*kc, bootstrap); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(e.Dir, "kubelet.kubeconfig")
	e.StartAgent(t, AgentOptions{Args: []string{"--kubeconfig", kubeconfig, "--bootstrap-kubeconfig", bootstrap, "--port", "0"}})
	waitNodeReady(t, cs) // with the certificate the bootstrap got
	if _, err := os.Stat(kubeconfig); err != nil {
		t.Errorf("--kubeconfig not written: %v", err)
	}
	csrs, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil || len(csrs.Items) != 1 || csrs.Items[0].Spec.Username != "system:bootstrap:"+id {
		t.Errorf("CSRs %v (%v): want the one of the bootstrap token", dump(csrs), err)
	}
}
