package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"text/template"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffnode/skiff/internal/k8sversion"
	"github.com/skiffnode/skiff/network"
)

// The cluster add-ons of the full [Conformance] suite (-addons, make
// conformance-full): kube-proxy in nftables mode as kubeadm's DaemonSet,
// and CoreDNS as kubeadm's Deployment behind the kube-dns Service, both as
// pods on the node under test, their images built from local binaries
// (images.go) and served as registry.k8s.io's. The manifests are kubeadm
// 1.37's (cmd/kubeadm/app/phases/addons/{proxy,dns}/manifests.go) with its
// values filled in.

const (
	// dnsServiceIP is kube-dns's ClusterIP: the 10th address of the
	// service range (test/cluster's 10.96.0.0/16), as kubeadm picks it.
	dnsServiceIP = "10.96.0.10"
	// clusterDomain is the e2e suite's --dns-domain default and skiff's.
	clusterDomain = "cluster.local"
	// addonsReadyTimeout bounds the wait for the add-ons' pods.
	addonsReadyTimeout = 5 * time.Minute
)

// Add-on images (kubeadm 1.37's names; CoreDNS at the version it pins).
var (
	kubeProxyRepo = "kube-proxy:" + k8sversion.Version
	corednsRepo   = "coredns/coredns:v1.14.6"
)

// addonValues fill the manifests.
type addonValues struct {
	// Server is the API server's URL for kube-proxy (on the host
	// network, so loopback would do; the advertised address is what a
	// kubeadm cluster has).
	Server, ClusterCIDR, DNSIP, DNSDomain, KubeProxyImage, CoreDNSImage string
}

// addonManifests renders the add-ons' objects as one YAML stream.
func addonManifests(v addonValues) (string, error) {
	var b bytes.Buffer
	if err := template.Must(template.New("addons").Parse(addonsTemplate)).Execute(&b, v); err != nil {
		return "", fmt.Errorf("add-on manifests: %w", err)
	}
	return b.String(), nil
}

// deployAddons applies the add-ons with kubectl and waits until every
// kube-system pod is Ready (the suite's own start waits for that too,
// with less to say when it does not happen).
func deployAddons(ctx context.Context, o options, kubeconfig, server string, cs kubernetes.Interface) error {
	removeKubeProxyTables(o.nft)
	manifests, err := addonManifests(addonValues{
		Server: server, ClusterCIDR: network.DefaultPodCIDR, DNSIP: dnsServiceIP, DNSDomain: clusterDomain,
		KubeProxyImage: "registry.k8s.io/" + kubeProxyRepo, CoreDNSImage: "registry.k8s.io/" + corednsRepo,
	})
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, o.kubectl, "--kubeconfig", kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifests)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl apply the add-ons: %w: %s", err, out)
	}
	logf("add-ons applied: kube-proxy (nftables), CoreDNS at %s", dnsServiceIP)
	var why string
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, addonsReadyTimeout, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			why = err.Error()
			return false, nil
		}
		why = notReady(pods.Items)
		return why == "" && len(pods.Items) >= 3, nil // kube-proxy and two CoreDNS
	})
	if err != nil {
		return fmt.Errorf("add-ons not Ready within %v: %s", addonsReadyTimeout, why)
	}
	logf("add-ons Ready")
	return nil
}

// removeKubeProxyTables deletes the host's kube-proxy nftables tables. A
// kube-proxy killed with its pod (the teardown) leaves them, and a new one
// then found its service map stale and left it empty (the kubernetes
// Service unreachable, CoreDNS never Ready): the node's rules die with its
// cluster here. Missing tables are no error.
func removeKubeProxyTables(nft string) {
	for _, family := range []string{"ip", "ip6"} {
		out, err := exec.Command(nft, "delete", "table", family, "kube-proxy").CombinedOutput()
		if err != nil && !strings.Contains(string(out), "No such file or directory") {
			logf("nft delete table %s kube-proxy: %v: %s", family, err, strings.TrimSpace(string(out)))
		}
	}
}

// removeAddons deletes the add-ons' DaemonSet and Deployment (orphaning
// nothing: their pods go with them), so that draining the node's pods
// ends.
func removeAddons(cs kubernetes.Interface) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	if err := cs.AppsV1().DaemonSets("kube-system").Delete(ctx, "kube-proxy", opts); err != nil {
		logf("delete the kube-proxy DaemonSet: %v", err)
	}
	if err := cs.AppsV1().Deployments("kube-system").Delete(ctx, "coredns", opts); err != nil {
		logf("delete the coredns Deployment: %v", err)
	}
}

// notReady names the pods that are not Ready, with their phase.
func notReady(pods []v1.Pod) string {
	var out []string
	for _, p := range pods {
		ready := false
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			out = append(out, fmt.Sprintf("%s (%s)", p.Name, p.Status.Phase))
		}
	}
	return strings.Join(out, ", ")
}

// advertiseAddress is the node's first IPv4 address (network.NodeIPs: the
// default route's interface, the node's InternalIP): the address the API
// server is advertised on, which pods reach through the kubernetes
// Service.
func advertiseAddress() (string, error) {
	ips, err := network.NodeIPs()
	if err != nil {
		return "", fmt.Errorf("advertise address: %w", err)
	}
	for _, ip := range ips {
		if ip.To4() != nil && !ip.IsLoopback() {
			return ip.String(), nil
		}
	}
	return "", fmt.Errorf("advertise address: no IPv4 address other than loopback among the node's %v", ips)
}

// serverAt is server (https://127.0.0.1:port) with its host set to addr.
func serverAt(server, addr string) (string, error) {
	u, err := url.Parse(server)
	if err != nil {
		return "", err
	}
	u.Host = net.JoinHostPort(addr, u.Port())
	return u.String(), nil
}

// addonsTemplate: kubeadm 1.37's kube-proxy ConfigMap, DaemonSet and RBAC
// (proxy.go: the SA and its system:node-proxier binding), and CoreDNS's
// ConfigMap, Deployment (2 replicas), Service, ClusterRole, binding and SA.
// kube-proxy's configuration: nftables mode, the pod range as its cluster
// CIDR, no conntrack table sizing (the sysctl is the host's).
const addonsTemplate = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: kube-proxy
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: kubeadm:node-proxier
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:node-proxier
subjects:
- kind: ServiceAccount
  name: kube-proxy
  namespace: kube-system
---
kind: ConfigMap
apiVersion: v1
metadata:
  name: kube-proxy
  namespace: kube-system
  labels:
    app: kube-proxy
data:
  kubeconfig.conf: |-
    apiVersion: v1
    kind: Config
    clusters:
    - cluster:
        certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
        server: {{ .Server }}
      name: default
    contexts:
    - context:
        cluster: default
        namespace: default
        user: default
      name: default
    current-context: default
    users:
    - name: default
      user:
        tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
  config.conf: |-
    apiVersion: kubeproxy.config.k8s.io/v1alpha1
    kind: KubeProxyConfiguration
    mode: nftables
    clusterCIDR: {{ .ClusterCIDR }}
    clientConnection:
      kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
    conntrack:
      maxPerCore: 0
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  labels:
    k8s-app: kube-proxy
  name: kube-proxy
  namespace: kube-system
spec:
  selector:
    matchLabels:
      k8s-app: kube-proxy
  updateStrategy:
    type: RollingUpdate
  template:
    metadata:
      labels:
        k8s-app: kube-proxy
    spec:
      priorityClassName: system-node-critical
      containers:
      - name: kube-proxy
        image: {{ .KubeProxyImage }}
        imagePullPolicy: IfNotPresent
        command:
        - /usr/local/bin/kube-proxy
        - --config=/var/lib/kube-proxy/config.conf
        - --hostname-override=$(NODE_NAME)
        securityContext:
          privileged: true
        volumeMounts:
        - mountPath: /var/lib/kube-proxy
          name: kube-proxy
        - mountPath: /run/xtables.lock
          name: xtables-lock
          readOnly: false
        - mountPath: /lib/modules
          name: lib-modules
          readOnly: true
        env:
          - name: NODE_NAME
            valueFrom:
              fieldRef:
                fieldPath: spec.nodeName
      hostNetwork: true
      serviceAccountName: kube-proxy
      volumes:
      - name: kube-proxy
        configMap:
          name: kube-proxy
      - name: xtables-lock
        hostPath:
          path: /run/xtables.lock
          type: FileOrCreate
      - name: lib-modules
        hostPath:
          path: /lib/modules
      tolerations:
      - operator: Exists
      nodeSelector:
        kubernetes.io/os: linux
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: coredns
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:coredns
rules:
- apiGroups:
  - ""
  resources:
  - endpoints
  - services
  - pods
  - namespaces
  verbs:
  - list
  - watch
- apiGroups:
  - discovery.k8s.io
  resources:
  - endpointslices
  verbs:
  - list
  - watch
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:coredns
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:coredns
subjects:
- kind: ServiceAccount
  name: coredns
  namespace: kube-system
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: coredns
  namespace: kube-system
data:
  Corefile: |
    .:53 {
        errors
        health {
           lameduck 5s
        }
        ready
        kubernetes {{ .DNSDomain }} in-addr.arpa ip6.arpa {
           pods insecure
           fallthrough in-addr.arpa ip6.arpa
           ttl 30
        }
        prometheus :9153
        forward . /etc/resolv.conf {
           max_concurrent 1000
        }
        cache 30 {
           disable success {{ .DNSDomain }}
           disable denial {{ .DNSDomain }}
        }
        loop
        reload
        loadbalance
    }
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: kube-system
  labels:
    k8s-app: kube-dns
spec:
  replicas: 2
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 1
  selector:
    matchLabels:
      k8s-app: kube-dns
  template:
    metadata:
      labels:
        k8s-app: kube-dns
    spec:
      priorityClassName: system-cluster-critical
      serviceAccountName: coredns
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm:
              labelSelector:
                matchExpressions:
                - key: k8s-app
                  operator: In
                  values: ["kube-dns"]
              topologyKey: kubernetes.io/hostname
      tolerations:
      - key: CriticalAddonsOnly
        operator: Exists
      - key: node-role.kubernetes.io/control-plane
        effect: NoSchedule
      nodeSelector:
        kubernetes.io/os: linux
      containers:
      - name: coredns
        image: {{ .CoreDNSImage }}
        imagePullPolicy: IfNotPresent
        resources:
          limits:
            memory: 170Mi
          requests:
            cpu: 100m
            memory: 70Mi
        args: [ "-conf", "/etc/coredns/Corefile" ]
        volumeMounts:
        - name: config-volume
          mountPath: /etc/coredns
          readOnly: true
        ports:
        - containerPort: 53
          name: dns
          protocol: UDP
        - containerPort: 53
          name: dns-tcp
          protocol: TCP
        - containerPort: 9153
          name: metrics
          protocol: TCP
        - containerPort: 8080
          name: liveness-probe
          protocol: TCP
        - containerPort: 8181
          name: readiness-probe
          protocol: TCP
        livenessProbe:
          httpGet:
            path: /health
            port: liveness-probe
            scheme: HTTP
          initialDelaySeconds: 60
          timeoutSeconds: 5
          successThreshold: 1
          failureThreshold: 5
        readinessProbe:
          httpGet:
            path: /ready
            port: readiness-probe
            scheme: HTTP
        securityContext:
          allowPrivilegeEscalation: false
          capabilities:
            add:
            - NET_BIND_SERVICE
            drop:
            - ALL
          readOnlyRootFilesystem: true
      dnsPolicy: Default
      volumes:
        - name: config-volume
          configMap:
            name: coredns
            items:
            - key: Corefile
              path: Corefile
---
apiVersion: v1
kind: Service
metadata:
  labels:
    k8s-app: kube-dns
    kubernetes.io/cluster-service: "true"
    kubernetes.io/name: "CoreDNS"
  name: kube-dns
  namespace: kube-system
  annotations:
    prometheus.io/port: "9153"
    prometheus.io/scrape: "true"
spec:
  clusterIP: {{ .DNSIP }}
  ports:
  - name: dns
    port: 53
    protocol: UDP
    targetPort: 53
  - name: dns-tcp
    port: 53
    protocol: TCP
    targetPort: 53
  - name: metrics
    port: 9153
    protocol: TCP
    targetPort: 9153
  selector:
    k8s-app: kube-dns
`
