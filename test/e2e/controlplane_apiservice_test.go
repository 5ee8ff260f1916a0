package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestControlPlaneKubernetesService_Issue36: against `skiff agent
// --control-plane`, default/kubernetes is kube-apiserver's Service (the
// first address of 10.96.0.0/12, port 443 "https") with an EndpointSlice
// and Endpoints at the node's address and the API's port; the node
// reaches the API at the cluster IP with the admin's credentials, the
// serving certificate naming that IP; a pod connects to it, and the
// token, ca.crt and namespace the ServiceAccount plugin mounts are what an
// in-cluster client needs (whoami at the cluster IP, verified with that
// ca.crt, names the pod's service account).
func TestControlPlaneKubernetesService_Issue36(t *testing.T) {
	_, kc := startControlPlane(t)
	t.Cleanup(func() { _, _ = cpKubectlErr(kc, "", "delete", "pod/client", "--wait=true", "--ignore-not-found") })

	// Published once the Node has an address and the API listens there.
	eventually(t, time.Minute, func() (bool, string) {
		out, _ := cpKubectlErr(kc, "", "get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP} {.spec.ports[0].name} {.spec.ports[0].port}")
		return out == "10.96.0.1 https 443", "Service kubernetes: " + out + ", want 10.96.0.1 https 443"
	})
	nodeIP := strings.Fields(cpKubectl(t, kc, "", "get", "node", "-o", "jsonpath={.items[0].status.addresses[?(@.type==\"InternalIP\")].address}"))[0]
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	port := cfg.Host[strings.LastIndex(cfg.Host, ":")+1:]
	eventually(t, time.Minute, func() (bool, string) {
		out, _ := cpKubectlErr(kc, "", "get", "endpointslice", "kubernetes", "-o", "jsonpath={.endpoints[0].addresses[0]}:{.ports[0].port}")
		// Endpoints come with upstream's deprecation warning first.
		eps, _ := cpKubectlErr(kc, "", "get", "endpoints", "kubernetes", "-o", "jsonpath={.subsets[0].addresses[0].ip}:{.subsets[0].ports[0].port}")
		return out == nodeIP+":"+port && strings.HasSuffix(eps, "\n"+nodeIP+":"+port),
			"EndpointSlice kubernetes: " + out + ", Endpoints: " + eps + "; want " + nodeIP + ":" + port
	})

	cfg.Host = "https://10.96.0.1:443"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		v, err := cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
		return err == nil, "GET https://10.96.0.1/version from the node: " + string(v) + " " + errString(err)
	})

	cpKubectl(t, kc, inClusterManifest, "apply", "-f", "-")
	cpKubectl(t, kc, "", "wait", "--for=condition=Ready", "pod/client", "--timeout=2m")
	// The ServiceAccount plugin's volume: the namespace, the CA, a token.
	sa := "/var/run/secrets/kubernetes.io/serviceaccount"
	if out := cpKubectl(t, kc, "", "exec", "client", "--", "cat", sa+"/namespace"); out != "default" {
		t.Errorf("%s/namespace = %q, want default", sa, out)
	}
	if out := cpKubectl(t, kc, "", "exec", "client", "--", "head", "-1", sa+"/ca.crt"); out != "-----BEGIN CERTIFICATE-----\n" {
		t.Errorf("%s/ca.crt starts %q", sa, out)
	}
	// The pod reaches the API at the cluster IP (busybox has no TLS
	// client that Go's server accepts: a connection is enough here)...
	if out, _ := cpKubectlErr(kc, "", "exec", "client", "--", "sh", "-c", "nc -w 3 10.96.0.1 443 </dev/null; echo rc=$?"); !strings.HasSuffix(out, "rc=0\n") {
		t.Errorf("connect to 10.96.0.1:443 from a pod: %q, want rc=0", out)
	}
	// ...and its token and ca.crt are what an in-cluster client needs.
	token := cpKubectl(t, kc, "", "exec", "client", "--", "cat", sa+"/token")
	ca := cpKubectl(t, kc, "", "exec", "client", "--", "cat", sa+"/ca.crt")
	inCluster, err := kubernetes.NewForConfig(&rest.Config{Host: "https://10.96.0.1:443", BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte(ca)}})
	if err != nil {
		t.Fatal(err)
	}
	who, err := inCluster.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || who.Status.UserInfo.Username != "system:serviceaccount:default:default" {
		t.Errorf("whoami with the pod's token and ca.crt at 10.96.0.1: %+v, %v; want the pod's service account", who, err)
	}
}

// inClusterManifest is a pod that keeps its service account token.
const inClusterManifest = `apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: sh
    image: ` + busyboxImage + `
    command: ["sleep", "3600"]
`

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
