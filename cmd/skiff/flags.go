package main

import (
	"github.com/spf13/pflag"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/apisource"
	"github.com/skiffnode/skiff/images"
	"github.com/skiffnode/skiff/internal/apiclient"
	"github.com/skiffnode/skiff/internal/nodestatus"
	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/node"
)

// The flags of `skiff agent` bind into node.Config; names and defaults are
// the kubelet's unless their usage says otherwise.

func addSecurityFlags(f *pflag.FlagSet, o *node.SecurityConfig) {
	f.BoolVar(&o.SeccompDefault, "seccomp-default", false, "run containers that name no seccomp profile with the runtime's default profile instead of unconfined")
	f.StringSliceVar(&o.AllowedUnsafeSysctls, "allowed-unsafe-sysctls", nil, "comma-separated unsafe sysctls or prefixes ending in * (e.g. 'kernel.msg*,net.core.somaxconn') that pods may set beyond the safe set")
}

func addPullFlags(f *pflag.FlagSet, o *node.PullConfig) {
	f.BoolVar(&o.Serialize, "serialize-image-pulls", true, "Pull images one at a time.")
	f.IntVar(&o.MaxParallel, "max-parallel-image-pulls", 0, "maximum number of image pulls in parallel (0: no limit); cannot be larger than 1 unless --serialize-image-pulls is set to false")
}

func addRegistryFlags(f *pflag.FlagSet, o *node.RegistryConfig) {
	f.StringVar(&o.CredentialFile, "image-credential-file", "", "docker config.json (or legacy .dockercfg) with the node's registry credentials, re-read when it changes (default: the kubelet's search paths: config.json in <root-dir>, the working directory, $HOME/.docker and /.docker, then .dockercfg in <root-dir>, the working directory, $HOME and /)")
	f.StringVar(&o.RegistryConfig, "registry-config", "", "registries file (mirrors, TLS, auth) for the managed containerd (default: <root-dir>/registries.yaml if it exists)")
}

// addGCFlags registers the GC and log rotation flags on f.
func addGCFlags(f *pflag.FlagSet, o *node.GCConfig) {
	f.IntVar(&o.Image.HighThresholdPercent, "image-gc-high-threshold", images.DefaultHighThresholdPercent, "percent of image filesystem usage at or above which image garbage collection runs (100: never for disk space)")
	f.IntVar(&o.Image.LowThresholdPercent, "image-gc-low-threshold", images.DefaultLowThresholdPercent, "percent of image filesystem usage image garbage collection frees down to; must be less than --image-gc-high-threshold")
	f.DurationVar(&o.Image.MinAge, "image-minimum-gc-age", images.DefaultMinAge, "minimum age of an unused image before it is garbage collected")
	f.DurationVar(&o.Image.MaxAge, "image-maximum-gc-age", 0, "unused images not used for longer are garbage collected whatever the disk usage (0: never)")
	f.DurationVar(&o.ImageGCPeriod, "image-gc-period", images.DefaultGCPeriod, "period of image garbage collection (for tests)")
	f.DurationVar(&o.Container.MinAge, "minimum-container-ttl-duration", 0, "minimum age of a dead container before it is garbage collected")
	f.IntVar(&o.Container.MaxPerPodContainer, "maximum-dead-containers-per-container", 1, "dead instances kept per container of a pod (< 0: no limit); the newest is always kept while its pod exists")
	f.IntVar(&o.Container.MaxContainers, "maximum-dead-containers", -1, "dead containers kept on the node in all (< 0: no limit)")
	f.DurationVar(&o.ContainerGCPeriod, "container-gc-period", agent.DefaultContainerGCPeriod, "period of container garbage collection (for tests)")
	f.StringVar(&o.LogMaxSize, "container-log-max-size", podlogs.DefaultMaxSize, "size at which a container log is rotated, e.g. 10Mi")
	f.IntVar(&o.LogMaxFiles, "container-log-max-files", podlogs.DefaultMaxFiles, "most log files kept per container, the current one included (at least 2)")
	f.IntVar(&o.LogMaxWorkers, "container-log-max-workers", podlogs.DefaultMaxWorkers, "container logs checked and rotated at once")
	f.DurationVar(&o.LogMonitorInterval, "container-log-monitor-interval", podlogs.DefaultMonitorInterval, "how often container logs are checked for rotation (at least 3s)")
	for _, hidden := range []string{"image-gc-period", "container-gc-period"} {
		_ = f.MarkHidden(hidden)
	}
}

func addAPIFlags(f *pflag.FlagSet, o *node.APIConfig) {
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the API server to join: its pods bound to this node run here, beside the static pods (empty: no API server)")
	f.StringVar(&o.Bootstrap, "bootstrap-kubeconfig", "", "kubeconfig with bootstrap credentials (a bootstrap token): when --kubeconfig has no valid client certificate, one is requested with these (a CertificateSigningRequest) and --kubeconfig is written")
	f.BoolVar(&o.RotateCerts, "rotate-certificates", false, "renew the node's client certificate (a CertificateSigningRequest) at 70-90 % of its lifetime; the certificate and key must be one file, as the TLS bootstrap writes them")
	f.BoolVar(&o.RegisterNode, "register-node", true, "register this node with the API server (with --kubeconfig)")
	f.StringVar(&o.RegisterWithTaints, "register-with-taints", "", "taints the node registers with, <key>=<value>:<effect>,...")
	f.StringToStringVar(&o.NodeLabels, "node-labels", nil, "labels the node registers with, <key>=<value>,...")
	f.StringVar(&o.NodeIP, "node-ip", "", "IP addresses of the node (comma-separated, at most one per family); empty: detected")
	f.DurationVar(&o.StatusUpdate, "node-status-update-frequency", apisource.DefaultNodeStatusUpdateFrequency, "how often the node's status is computed and sent when it changed")
	f.DurationVar(&o.StatusReport, "node-status-report-frequency", nodestatus.DefaultReportFrequency, "how often an unchanged node status is sent anyway")
	f.Float32Var(&o.KubeAPIQPS, "kube-api-qps", node.DefaultKubeAPIQPS, "queries per second to the API server (client-side rate limit)")
	f.IntVar(&o.KubeAPIBurst, "kube-api-burst", node.DefaultKubeAPIBurst, "burst of queries to the API server above --kube-api-qps")
	f.StringVar(&o.KubeAPIContentType, "kube-api-content-type", apiclient.ContentTypeJSON, "content type of requests to the API server: application/json or application/vnd.kubernetes.protobuf (the kubelet's default; about 1 MB more RSS here)")
	f.BoolVar(&o.OfflinePods, "offline-pods", false, "keep a copy of the API pods bound to this node and of what they read (ConfigMaps, Secrets, service account tokens) under <root-dir>/offline, and run them from it when the API server does not answer at start (after a reboot without the control plane); off: the copy is removed")
	f.Int32Var(&o.LeaseDuration, "node-lease-duration-seconds", nodestatus.DefaultLeaseDurationSeconds, "duration of the node's lease; it is renewed every quarter of it")
}

func addControlPlaneFlags(f *pflag.FlagSet, o *node.ControlPlaneConfig) {
	f.BoolVar(&o.Enabled, "control-plane", false, "run skiff's Kubernetes API server (skiff-apiserver) for this node under <root-dir>/apiserver, write <root-dir>/admin.kubeconfig for kubectl, and join it as this node (instead of --kubeconfig)")
	f.StringVar(&o.Binary, "control-plane-binary", "skiff-apiserver", "the skiff-apiserver executable (a name: beside this executable, else on PATH)")
	f.StringVar(&o.BindAddress, "control-plane-bind-address", "127.0.0.1", "address the control plane's API listens on")
	f.IntVar(&o.Port, "control-plane-port", 6443, "HTTPS port of the control plane's API")
	f.StringSliceVar(&o.EtcdServers, "control-plane-etcd-servers", nil, "external etcd client URLs for the control plane instead of its embedded etcd")
	f.BoolVar(&o.ClusterDNS, "control-plane-cluster-dns", true, "have the control plane serve the cluster DNS (kube-system/kube-dns) at the first --cluster-dns address (default then: 10.96.0.10), for --cluster-domain, answering this node and --pod-cidr; needs --control-plane-service-proxy; false: pods get --cluster-dns as given (a DNS of your own) or none")
	f.BoolVar(&o.ServiceProxy, "control-plane-service-proxy", true, "run the control plane's service proxy (kube-proxy's nftables mode, needs nft) for this node: its nftables carry the Services' cluster IPs (10.96.0.0/12) and node ports")
}

func addKubeletAPIFlags(f *pflag.FlagSet, o *node.KubeletAPIConfig) {
	f.IntVar(&o.Port, "port", node.DefaultKubeletPort, "HTTPS port of the kubelet API (logs, exec, attach, port-forward, stats; 0 disables)")
	f.StringVar(&o.BindAddress, "bind-address", "", "IP address --port listens on (default: 127.0.0.1 with --control-plane, whose API server runs on this machine; else all interfaces, as the kubelet's --address)")
	f.StringVar(&o.TLSCertFile, "tls-cert-file", "", "serving certificate of --port (with its intermediates); empty: a self-signed one in --cert-dir")
	f.StringVar(&o.TLSKeyFile, "tls-private-key-file", "", "private key of --tls-cert-file")
	f.StringVar(&o.CertDir, "cert-dir", "", "directory of the self-signed serving certificate, kubelet.crt and kubelet.key, generated once (default <root-dir>/pki)")
	f.StringVar(&o.ClientCAFile, "client-ca-file", "", "CA bundle for client certificates on --port: a client certificate signed by one of them is the user of its common name, in the groups of its organizations (default: with --kubeconfig or --control-plane, the CA of the API server's kubeconfig, as kubeadm points the kubelet at the cluster CA)")
	f.BoolVar(&o.AnonymousAuth, "anonymous-auth", false, "let requests to --port without credentials through as system:anonymous (group system:unauthenticated), for whatever --authorization-mode allows them: with AlwaysAllow, anyone who reaches --port may list every pod and run commands in its containers as root")
	f.BoolVar(&o.TokenWebhook, "authentication-token-webhook", false, "authenticate bearer tokens on --port with the API server's TokenReview (default: true with --kubeconfig or --control-plane; needs one of them)")
	f.StringVar(&o.AuthorizationMode, "authorization-mode", "", "authorization of requests to --port: Webhook (a SubjectAccessReview to the API server for each; needs --kubeconfig or --control-plane) or AlwaysAllow (every authenticated request is allowed) (default: Webhook with an API server, else AlwaysAllow)")
}

func addShutdownFlags(f *pflag.FlagSet, o *node.ShutdownConfig) {
	f.DurationVar(&o.Config.GracePeriod, "shutdown-grace-period", 0, "how long a node shutdown is delayed (systemd-logind inhibitor lock) while pods stop; 0 disables graceful node shutdown")
	f.DurationVar(&o.Config.GracePeriodCriticalPods, "shutdown-grace-period-critical-pods", 0, "the part of --shutdown-grace-period kept for critical pods (priority >= 2000000000), stopped after the others")
	f.StringVar(&o.ByPriority, "shutdown-grace-period-by-pod-priority", "", "shutdownGracePeriodByPodPriority as priority=seconds pairs, e.g. 100000=10,1000=120,0=60 (instead of the two flags above)")
}
