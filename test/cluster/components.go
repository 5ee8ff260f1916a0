package cluster

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// serviceCIDR is the service range; its first address (10.96.0.1) is the
// kubernetes service's ClusterIP and a SAN of the serving certificate.
const serviceCIDR = "10.96.0.0/16"

// serviceAccountIssuer is the issuer of service account tokens.
const serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// etcdProcess is a single-member etcd serving plain HTTP on loopback, its
// data under dir/etcd.
func etcdProcess(dir, bin string, clientPort, peerPort int) *process {
	client := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	return newProcess(dir, "etcd", bin,
		"--name=default",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+client,
		"--advertise-client-urls="+client,
		"--listen-peer-urls="+peer,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster=default="+peer,
		"--initial-cluster-state=new",
		"--logger=zap",
		"--log-level=warn",
	)
}

// apiserverProcess is kube-apiserver on 127.0.0.1:port backed by the etcd at
// etcdURL, with the certificates and keys Start wrote into dir; with
// advertise (Config.AdvertiseAddress) on every address, that one
// advertised.
func apiserverProcess(dir, bin string, port int, etcdURL, advertise string) *process {
	f := func(name string) string { return filepath.Join(dir, name) }
	args := []string{
		"kube-apiserver",
		"--etcd-servers=" + etcdURL,
		"--secure-port=" + strconv.Itoa(port),
	}
	if advertise == "" {
		// The kubernetes service's endpoints would be 127.0.0.1, which
		// Endpoints validation rejects (loopback) every 10 s.
		args = append(args, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none")
	} else {
		args = append(args, "--bind-address=0.0.0.0", "--advertise-address="+advertise)
	}
	args = append(args,
		// The in-memory self-signed certificates are not used (the
		// files below are); an explicit cert dir keeps the default
		// /var/run/kubernetes out of it.
		"--cert-dir="+f("apiserver-certs"),
		"--tls-cert-file="+f("apiserver.crt"),
		"--tls-private-key-file="+f("apiserver.key"),
		"--client-ca-file="+f("ca.crt"),
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		// Bootstrap tokens (Secrets in kube-system) for the TLS bootstrap test.
		"--enable-bootstrap-token-auth",
		"--service-cluster-ip-range="+serviceCIDR,
		"--service-account-issuer="+serviceAccountIssuer,
		"--service-account-key-file="+f("sa.pub"),
		"--service-account-signing-key-file="+f("sa.key"),
		// The API server's client certificate towards kubelets (logs,
		// exec, port-forward). The kubelets' serving certificates are
		// not verified (no --kubelet-certificate-authority), so a
		// node's self-signed one is enough.
		// Reach nodes at their InternalIP first, as kubeadm sets it: a
		// node's host name (--hostname-override) need not resolve.
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
		"--kubelet-client-certificate="+f("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+f("apiserver-kubelet-client.key"),
		"--allow-privileged=true",
		// The aggregation layer (API services such as metrics-server),
		// routed to the service's endpoints, as no kube-proxy runs.
		"--requestheader-client-ca-file="+f("front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+f("front-proxy-client.crt"),
		"--proxy-client-key-file="+f("front-proxy-client.key"),
		"--enable-aggregator-routing=true",
		// One server, no flow control to set up: faster to ready.
		"--enable-priority-and-fairness=false",
		// On SIGTERM, wait up to 2 s (not the 60 s of --request-timeout)
		// for the HTTP server's shutdown, which the controller manager's
		// and the scheduler's watches hold open: RestartAPIServer then
		// takes seconds, not a minute.
		"--shutdown-send-retry-after=true",
		"--profiling=false",
	)
	return newProcess(dir, "kube-apiserver", bin, args...)
}

// controllerManagerProcess is kube-controller-manager with the
// controller-manager kubeconfig, signing with the test CA and minting
// service account tokens with the service account key. It serves no port.
func controllerManagerProcess(dir, bin string) *process {
	f := func(name string) string { return filepath.Join(dir, name) }
	kubeconfig := f("controller-manager.kubeconfig")
	return newProcess(dir, "kube-controller-manager", bin, "kube-controller-manager",
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+f("sa.key"),
		"--root-ca-file="+f("ca.crt"),
		"--cluster-signing-cert-file="+f("ca.crt"),
		"--cluster-signing-key-file="+f("ca.key"),
		"--service-cluster-ip-range="+serviceCIDR,
		"--controllers=*",
		"--profiling=false",
	)
}

// schedulerProcess is kube-scheduler with the scheduler kubeconfig. It
// serves no port.
func schedulerProcess(dir, bin string) *process {
	kubeconfig := filepath.Join(dir, "scheduler.kubeconfig")
	return newProcess(dir, "kube-scheduler", bin, "kube-scheduler",
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
		"--profiling=false",
	)
}

// nodeKubeconfig is the name of a node's kubeconfig in the cluster's Dir.
func nodeKubeconfig(node string) string {
	return fmt.Sprintf("node-%s.kubeconfig", node)
}
