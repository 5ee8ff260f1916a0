// Package cluster runs a real Kubernetes control plane for skiff's tests
// (issue 16): etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler as child processes of the test, on loopback, with no node
// but the skiff agents a test starts. Only tests (test/e2e) import it; it
// does not import k8s.io/kubernetes.
//
// The Kubernetes components come from one multi-call binary,
// kube-controlplane (kube-apiserver, kube-controller-manager,
// kube-scheduler, kubectl as its first argument), built by `make
// controlplane` from the pinned k8s.io/kubernetes release in the separate
// module test/controlplane; etcd is Debian's etcd-server (test/setup.sh).
//
// Start lays out Config.Dir as follows and removes nothing (the test's
// TempDir does):
//
//	ca.crt, ca.key                      the test CA (ECDSA P-256); signs every
//	                                    certificate and, in the controller
//	                                    manager, CSRs
//	apiserver.crt, .key                 serving: 127.0.0.1, 10.96.0.1, localhost,
//	                                    kubernetes[.default[.svc[.cluster.local]]]
//	apiserver-kubelet-client.crt, .key  the API server's client towards kubelets
//	sa.key, sa.pub                      service account token keys (RSA)
//	admin.kubeconfig                    system:masters
//	controller-manager.kubeconfig       system:kube-controller-manager
//	scheduler.kubeconfig                system:kube-scheduler
//	node-<name>.kubeconfig              system:node:<name> in system:nodes
//	etcd/                               etcd's data
//	<component>.log                     each process's output (appended to
//	                                    across restarts)
//
// Kubeconfigs embed their credentials and name https://127.0.0.1:<port>.
// The API server authorizes with Node,RBAC and admits with NodeRestriction,
// so a node kubeconfig is held to what a kubelet may do. The controller
// manager and the scheduler serve no port (--secure-port=0), and the API
// server does not verify kubelets' serving certificates.
//
// Client is client-go's clientset with the admin's credentials; RESTConfig
// gives any kubeconfig's credentials to another client (skiff's
// apiclient.New for a node).
package cluster
