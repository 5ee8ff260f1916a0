package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skiffnode/skiff/internal/k8sversion"

	"github.com/moby/sys/userns"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/apisource"
	"github.com/skiffnode/skiff/internal/apiclient"
	"github.com/skiffnode/skiff/internal/events"
	"github.com/skiffnode/skiff/internal/nodestatus"
	"github.com/skiffnode/skiff/runtime"
)

// apiOptions are the flags of the API source (issue 16); names and
// defaults are the kubelet's.
type APIConfig struct {
	Kubeconfig         string
	Bootstrap          string
	RotateCerts        bool
	RegisterNode       bool
	RegisterWithTaints string
	NodeLabels         map[string]string
	NodeIP             string
	StatusUpdate       time.Duration
	StatusReport       time.Duration
	LeaseDuration      int32
	KubeAPIQPS         float32
	KubeAPIBurst       int
	KubeAPIContentType string
	// OfflinePods keeps the offline copy under <root-dir>/offline and
	// runs its pods when the API server does not answer at start
	// (--offline-pods, issue 33).
	OfflinePods bool
}

// offlineDir is the offline copy's directory under the root dir.
const offlineDir = "offline"

// The kubelet's client rate limits (kubeAPIQPS, kubeAPIBurst; 50 and 100
// since Kubernetes 1.27). client-go's own default, 5 per second, made 110
// pods wait on their token requests, status patches and final deletes.
const (
	DefaultKubeAPIQPS   = 50
	DefaultKubeAPIBurst = 100
)

// validate checks the API client's settings (with an API server).
func (o *APIConfig) validate() error {
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst <= 0 {
		return fmt.Errorf("--kube-api-qps %v and --kube-api-burst %d: both must be positive", o.KubeAPIQPS, o.KubeAPIBurst)
	}
	if o.KubeAPIContentType != apiclient.ContentTypeJSON && o.KubeAPIContentType != apiclient.ContentTypeProtobuf {
		return fmt.Errorf("--kube-api-content-type %q: want %s or %s", o.KubeAPIContentType, apiclient.ContentTypeJSON, apiclient.ContentTypeProtobuf)
	}
	return nil
}

// apiSource is the API source wired for one agent: its pod source, the
// status manager (the agent's Config.PodChanged) and the loops to run.
type apiSource struct {
	client  *apiclient.Client
	source  *apisource.Source
	status  *apisource.StatusManager
	mirror  *apisource.MirrorManager
	node    *apisource.NodeManager
	lease   *apisource.LeaseManager
	events  *apisource.EventSink
	objects *apisource.ObjectManager
	tokens  *apisource.TokenManager
	// certs renews the client certificate (--rotate-certificates); nil: no rotation.
	certs *apisource.CertRotator
	// offline is the offline copy (--offline-pods); nil: none.
	offline *apisource.OfflineCopy
	// services are the pods' service variables.
	services *apisource.ServiceEnv
	// trustBundles are the projected clusterTrustBundle sources' anchors.
	trustBundles *apisource.TrustBundles
	// podCerts issues the projected podCertificate sources' credentials.
	podCerts *apisource.PodCertificates
	// claims reads the claims and PersistentVolumes of
	// persistentVolumeClaim volumes.
	claims *apisource.Claims
	// clusterCA is the PEM CA bundle --kubeconfig trusts the API server
	// with (nil: none given).
	clusterCA []byte
}

// newAPISource loads --kubeconfig and builds the managers; nothing runs
// and nothing connects yet. pods is filled in later (the agent needs the
// status manager's callback first).
func (o *APIConfig) newAPISource(node, rootDir string, pods *lateBoundPods, facts func(context.Context) (nodestatus.Facts, nodestatus.Health), events *events.Recorder, log *slog.Logger) (*apiSource, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst, cfg.ContentType = o.KubeAPIQPS, o.KubeAPIBurst, o.KubeAPIContentType
	taints, err := nodestatus.ParseTaints(o.RegisterWithTaints)
	if err != nil {
		return nil, fmt.Errorf("--register-with-taints: %w", err)
	}
	client, err := apiclient.New(cfg)
	if err != nil {
		return nil, err
	}
	s := &apiSource{client: client, clusterCA: cfg.CAData}
	if len(s.clusterCA) == 0 && cfg.CAFile != "" {
		if s.clusterCA, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("--kubeconfig: certificate authority: %w", err)
		}
	}
	var offline *apisource.OfflineCopy
	if o.OfflinePods {
		if offline, err = apisource.NewOfflineCopy(filepath.Join(rootDir, offlineDir), log); err != nil {
			return nil, fmt.Errorf("--offline-pods: %w", err)
		}
	}
	index := apisource.NewIndex()
	s.objects = apisource.NewObjectManager(client, log)
	s.tokens = apisource.NewTokenManager(client, nil, log)
	s.claims = apisource.NewClaims(client)
	s.services = apisource.NewServiceEnv(client.ServiceInformer())
	s.objects.Offline, s.tokens.Offline, s.services.Offline = offline, offline, offline
	s.offline = offline
	if s.trustBundles, err = apisource.NewTrustBundles(client.ClusterTrustBundleInformer()); err != nil {
		return nil, err
	}
	s.status = apisource.NewStatusManager(client, pods, index, 0, log)
	s.node = apisource.NewNodeManager(apisource.NodeConfig{
		API: client, Register: o.RegisterNode,
		Registration: nodestatus.Registration{
			// The node name is the host name (--hostname-override, else
			// the machine's, lower case), as for the kubelet without a
			// cloud provider: the kubernetes.io/hostname label.
			Name: node, Hostname: node, OS: goruntime.GOOS, Arch: goruntime.GOARCH,
			Labels: o.NodeLabels, Taints: taints,
		},
		Facts: facts, UpdateFrequency: o.StatusUpdate, ReportFrequency: o.StatusReport,
		Record:   func(typ, reason, msg string) { events.NodeEvent(typ, reason, msg) },
		Informer: client.NodeInformer(node),
		Logger:   log,
	})
	if s.podCerts, err = apisource.NewPodCertificates(client, client.PodCertificateRequestInformer(node), node, s.node.Node, nil, log); err != nil {
		return nil, err
	}
	s.source = &apisource.Source{Informer: client.PodInformer(node), Index: index, Logger: log, Offline: offline, OnPods: func(pods []*v1.Pod) {
		s.objects.SetPods(pods)
		s.podCerts.SetPods(pods)
	}}
	s.mirror = &apisource.MirrorManager{API: client, Index: index, Node: s.node.Node, Logger: log}
	s.events = apisource.NewEventSink(client, log)
	events.Forward(s.events.Record)
	s.lease = &apisource.LeaseManager{API: client, Node: s.node.Node, Name: node, DurationSeconds: o.LeaseDuration, Logger: log}
	if o.RotateCerts {
		if s.certs, err = certRotator(cfg.CertFile, cfg.KeyFile, client, node, log); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// loops are the API source's loops, each run until its context is done.
func (s *apiSource) loops() []namedLoop {
	out := []namedLoop{
		{"status", s.status.Run}, {"node status", s.node.Run}, {"lease", s.lease.Run}, {"mirror pods", s.mirror.Run},
		{"events", s.events.Run}, {"objects", s.objects.Run}, {"tokens", s.tokens.Run}, {"services", s.services.Run},
		{"cluster trust bundles", s.trustBundles.Run}, {"pod certificates", s.podCerts.Run},
	}
	if s.certs != nil {
		out = append(out, namedLoop{"certificate rotation", func(ctx context.Context) { _ = s.certs.Run(ctx) }})
	}
	if s.offline != nil {
		out = append(out, namedLoop{"offline copy retries", s.offline.Run})
	}
	return out
}

// namedLoop is a loop that cannot fail, with its name.
type namedLoop struct {
	name string
	run  func(context.Context)
}

// lateBoundPods is the agent as the status manager sees it, set once the
// agent exists (before anything runs).
type lateBoundPods struct{ a *agent.Agent }

func (l *lateBoundPods) Pod(uid types.UID) (*v1.Pod, bool) { return l.a.Pod(uid) }
func (l *lateBoundPods) Terminated(uid types.UID) bool     { return l.a.Terminated(uid) }
func (l *lateBoundPods) FinalPod(uid types.UID) (*v1.Pod, bool) {
	return l.a.FinalPod(uid)
}

// removeOfflineCopy removes the offline copy a node with --offline-pods
// left under rootDir, when the flag is off: the Secrets it holds are not
// kept on a node that no longer wants them on disk.
func removeOfflineCopy(rootDir string, log *slog.Logger) error {
	dir := filepath.Join(rootDir, offlineDir)
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the offline copy (--offline-pods is off): %w", err)
	}
	log.Info("removed the offline copy: --offline-pods is off", "dir", dir)
	return nil
}

// nodeIPsFlag parses --node-ip (empty: detected).
func nodeIPsFlag(flag string, detected []string) ([]net.IP, error) {
	var out []net.IP
	if flag == "" {
		for _, s := range detected {
			if ip := net.ParseIP(s); ip != nil {
				out = append(out, ip)
			}
		}
		return out, nil
	}
	for _, s := range strings.Split(flag, ",") {
		ip := net.ParseIP(strings.TrimSpace(s))
		if ip == nil {
			return nil, fmt.Errorf("--node-ip %q: %q is not an IP address", flag, s)
		}
		out = append(out, ip)
	}
	return out, nil
}

// nodeFacts gathers the node status facts: the Hostname address
// (hostname: the node name, as the kubelet's --hostname-override), capacity
// (the machine's, with the root dir's file system as ephemeral-storage),
// allocatable, nodeInfo, the runtime's images, the declared features; the
// node is NotReady while the runtime does not answer.
func nodeFacts(rt runtime.Runtime, hostname, rootDir string, capacity, allocatable v1.ResourceList, ips []net.IP, kubeletPort int32, declared []string, log *slog.Logger) func(context.Context) (nodestatus.Facts, nodestatus.Health) {
	info, err := nodestatus.SystemInfo(os.DirFS("/"))
	if err != nil {
		log.Warn("node system info", "err", err)
	}
	info.KubeletVersion = k8sversion.KubeletVersion
	// KubeletInUserNamespace: the kubelet reports it, true or false.
	info.RunningInUserNamespace = ptr.To(userns.RunningInUserNS())
	// The runtime's handlers and features, kept while the runtime does not
	// answer (as the kubelet keeps its last ones); the closure runs on the
	// status loop only.
	var handlers []v1.NodeRuntimeHandler
	var features *v1.NodeFeatures
	return func(ctx context.Context) (nodestatus.Facts, nodestatus.Health) {
		f := nodestatus.Facts{Hostname: hostname, InternalIPs: ips, Info: info,
			Capacity: capacity.DeepCopy(), Allocatable: allocatable.DeepCopy(), KubeletPort: kubeletPort, DeclaredFeatures: declared}
		var st unix.Statfs_t
		if err := unix.Statfs(rootDir, &st); err == nil {
			q := resource.NewQuantity(int64(st.Blocks)*st.Bsize, resource.BinarySI)
			f.Capacity[v1.ResourceEphemeralStorage], f.Allocatable[v1.ResourceEphemeralStorage] = *q, *q
		}
		var h nodestatus.Health
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		v, err := rt.Version(ctx)
		if err != nil {
			h.NotReady = append(h.NotReady, fmt.Errorf("container runtime is down: %w", err))
		} else {
			f.Info.ContainerRuntimeVersion = v.Name + "://" + v.Version
		}
		if feats, err := rt.Features(ctx); err == nil {
			handlers, features = nodeRuntimeFeatures(feats)
		}
		f.RuntimeHandlers, f.Features = handlers, features
		if imgs, err := rt.ListImages(ctx); err == nil {
			for _, img := range imgs {
				f.Images = append(f.Images, nodestatus.Image{RepoDigests: img.RepoDigests, RepoTags: img.RepoTags, Size: int64(img.Size)})
			}
		}
		return f, h
	}
}

// nodeRuntimeFeatures are the node status's runtimeHandlers and features
// from what the runtime reports, as the kubelet's RuntimeHandlers and
// NodeFeatures setters: every handler with both its features, sorted by
// name (the kubelet since 1.37), and the
// supplementalGroupsPolicy only where the runtime reported runtime-wide
// features. Pure.
func nodeRuntimeFeatures(f runtime.Features) ([]v1.NodeRuntimeHandler, *v1.NodeFeatures) {
	var handlers []v1.NodeRuntimeHandler
	for _, h := range f.Handlers {
		handlers = append(handlers, v1.NodeRuntimeHandler{Name: h.Name, Features: &v1.NodeRuntimeHandlerFeatures{
			RecursiveReadOnlyMounts: ptr.To(h.RecursiveReadOnlyMounts), UserNamespaces: ptr.To(h.UserNamespaces)}})
	}
	slices.SortFunc(handlers, func(a, b v1.NodeRuntimeHandler) int { return strings.Compare(a.Name, b.Name) })
	if !f.Reported {
		return handlers, nil
	}
	return handlers, &v1.NodeFeatures{SupplementalGroupsPolicy: ptr.To(f.SupplementalGroupsPolicy)}
}

// signalFanIn returns a loop that forwards a signal of any of ins to out
// (coalesced) until its context is done.
func signalFanIn(out chan struct{}, ins ...<-chan struct{}) func(context.Context) {
	return func(ctx context.Context) {
		var wg sync.WaitGroup
		for _, in := range ins {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-ctx.Done():
						return
					case <-in:
						select {
						case out <- struct{}{}:
						default:
						}
					}
				}
			}()
		}
		wg.Wait()
	}
}
