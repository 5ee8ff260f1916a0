// Package server wires the shim: k8s.io/apiserver's generic server with
// the registries of shim/registry, storage in etcd (embedded or external),
// TLS and authentication from shim/pki.
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/google/uuid"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	unionauthn "k8s.io/apiserver/pkg/authentication/request/union"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	pathauthz "k8s.io/apiserver/pkg/authorization/path"
	unionauthz "k8s.io/apiserver/pkg/authorization/union"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/skiffnode/skiff/internal/filepages"
	nodeauthz "github.com/skiffnode/skiff/shim/authz/node"
	"github.com/skiffnode/skiff/shim/etcd"
	"github.com/skiffnode/skiff/shim/pki"
	"github.com/skiffnode/skiff/shim/registry/generic"
	"github.com/skiffnode/skiff/shim/scheme"
	satoken "github.com/skiffnode/skiff/shim/serviceaccount"
)

// AdminUser is the admin identity of the static token.
const AdminUser = "skiff-admin"

// Options configure the shim.
type Options struct {
	// DataDir holds etcd/ (embedded), pki/, admin.token, admin.kubeconfig.
	DataDir string
	// EtcdServers: an external etcd cluster; empty runs the embedded one.
	EtcdServers []string
	// BindAddress and SecurePort of the HTTPS API (port 0: a free port).
	BindAddress string
	SecurePort  int
	// ExtraSANs are host names and IPs added to a new serving certificate.
	ExtraSANs []string
	// NodeName, if set, is the node whose identity (system:node:<name>)
	// gets <DataDir>/node.kubeconfig, re-issued when the name changes.
	NodeName string
	// KubeletCAFile, if set, verifies kubelets' serving certificates
	// (kube-apiserver's --kubelet-certificate-authority); empty: not
	// verified, as kube-apiserver without that flag.
	KubeletCAFile string
	// NodeKubeletHost, if set, is the host at which the kubelet of
	// NodeName is reached for pods/log, exec, attach and portforward,
	// instead of that Node's status addresses (the port is still the
	// Node's kubelet port); other nodes are unaffected. Requires NodeName.
	NodeKubeletHost string
	// ServiceAccountIssuer is the "iss" of the service-account tokens the
	// shim signs and the API's audience (kube-apiserver's
	// --service-account-issuer, and --api-audiences' default); empty:
	// serviceaccount.DefaultIssuer.
	ServiceAccountIssuer string
	// Kinds are served beside the shim's own; their API groups must be in
	// shim/scheme. A skiff-apiserver build adds through them the kinds
	// this module does not describe (validated by packages it may not
	// import).
	Kinds []*generic.Kind
	// Controllers, if set, builds more controllers on the shim's loopback
	// client and shared informer factory. Each returned function runs in
	// its own goroutine from the post-start hook until its context ends,
	// beside the shim's own controllers.
	Controllers func(ControllerContext) ([]func(context.Context), error)
	// Extensions, if set, builds the API server the shim delegates to:
	// it serves the paths the shim's own APIs do not (skiff-apiserver's
	// CustomResourceDefinitions server). Its handlers, post-start hooks
	// and health checks join the shim's.
	Extensions func(ExtensionsConfig) (genericapiserver.DelegationTarget, error)
}

// ExtensionsConfig is what Options.Extensions builds its server on.
type ExtensionsConfig struct {
	// Config is a copy of the shim's: the same authentication,
	// authorization, admission, loopback client and discovery manager,
	// but no post-start hooks, REST options or OpenAPI of its own.
	Config genericapiserver.Config
	// Storage is the shim's etcd: the servers, prefix and transport.
	Storage storagebackend.Config
	// Informers is the shim's shared factory (core kinds).
	Informers informers.SharedInformerFactory
}

// ControllerContext is what Options.Controllers builds controllers on.
type ControllerContext struct {
	// Client is the loopback client (system:apiserver).
	Client kubernetes.Interface
	// Config is the loopback client's configuration, for clients of other
	// kinds (scale, dynamic).
	Config *rest.Config
	// Informers is the shared factory, started once the server serves.
	Informers informers.SharedInformerFactory
	// Listen serves the API on ln too, besides the bind address, until
	// the server stops; the server closes ln then (at once if it has
	// stopped already). ln's connections get the API's TLS.
	Listen func(ln net.Listener)
}

// Server is a prepared shim; Run serves it.
type Server struct {
	// URL is the API's https address, with the port actually bound.
	URL string
	// Kubeconfig is the admin kubeconfig's path.
	Kubeconfig string
	// NodeKubeconfig is the node kubeconfig's path ("" without a NodeName).
	NodeKubeconfig string

	generic     *genericapiserver.GenericAPIServer
	etcd        *etcd.Server
	storage     *sharedEtcd
	controllers *controllers
}

// New starts storage (the embedded etcd unless o.EtcdServers) and builds
// the API server; it serves nothing before Run. Close it if Run is never
// called.
func New(ctx context.Context, o Options) (s *Server, retErr error) {
	if o.DataDir == "" {
		return nil, errors.New("no data directory")
	}
	if o.NodeKubeletHost != "" && o.NodeName == "" {
		return nil, errors.New("a node kubelet host needs a node name")
	}
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, err
	}
	bundle, err := pki.EnsureBundle(o.DataDir, append([]string{o.BindAddress}, o.ExtraSANs...))
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	s = &Server{Kubeconfig: pki.KubeconfigPath(o.DataDir)}
	servers := o.EtcdServers
	if len(servers) == 0 {
		e, err := etcd.Start(ctx, etcd.Options{Dir: filepath.Join(o.DataDir, "etcd")})
		if err != nil {
			return nil, err
		}
		s.etcd = e
		defer func() {
			if retErr != nil {
				e.Close()
			}
		}()
		servers = []string{e.ClientURL()}
	}

	cfg := genericapiserver.NewConfig(scheme.Codecs)
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	// kube-apiserver's (pkg/controlplane/apiserver/config.go): watches and
	// the streaming subresources are long-running, exempt from the request
	// timeout and the max-in-flight limit.
	cfg.LongRunningFunc = genericfilters.BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"),
		sets.NewString("attach", "exec", "proxy", "log", "portforward"))
	applyOpenAPI(cfg)
	bound, err := net.Listen("tcp", net.JoinHostPort(o.BindAddress, strconv.Itoa(o.SecurePort)))
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	ln := newListeners(bound)
	defer func() {
		if retErr != nil {
			ln.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	host := o.BindAddress
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	cfg.ExternalAddress = net.JoinHostPort(host, strconv.Itoa(port))
	s.URL = "https://" + cfg.ExternalAddress
	backend := storagebackend.NewDefaultConfig("/registry", nil)
	backend.Transport.ServerList = servers
	if s.storage, err = applyStorage(cfg, backend); err != nil {
		return nil, err
	}
	built := s // s is nil once an error is returned
	defer func() {
		if retErr != nil {
			built.closeStorage()
		}
	}()
	kubelets, err := kubeletTransport(o.DataDir, bundle, o.KubeletCAFile)
	if err != nil {
		return nil, err
	}
	storage, err := newAPIStorage(cfg.RESTOptionsGetter, kubeletAccess{transport: kubelets, node: o.NodeName, host: o.NodeKubeletHost}, o.Kinds)
	if err != nil {
		return nil, err
	}
	saKey, err := satoken.ParseKey(bundle.ServiceAccountKey)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	sa := serviceAccountTokens{key: saKey, issuer: o.ServiceAccountIssuer}
	if sa.issuer == "" {
		sa.issuer = satoken.DefaultIssuer
	}
	sa.addServiceAccountAPIs(storage)
	if err := applySecurity(cfg, ln, bundle, storage.nodeGraph(), sa, sa.authenticator(storage)); err != nil {
		return nil, err
	}
	addReviewAPIs(storage, cfg)
	loopback, err := kubernetes.NewForConfig(cfg.LoopbackClientConfig)
	if err != nil {
		return nil, fmt.Errorf("loopback client: %w", err)
	}
	// One informer factory for the admission plugins and the controllers,
	// started by genericapiserver once the server serves.
	factory := informers.NewSharedInformerFactoryWithOptions(loopback, 0, informers.WithTransform(dropManagedFields))
	if cfg.AdmissionControl, err = admissionChain(loopback, factory, o.NodeName, cfg.EffectiveVersion.BinaryVersion()); err != nil {
		return nil, err
	}
	if s.controllers, err = newControllers(ControllerContext{Client: loopback, Config: cfg.LoopbackClientConfig, Informers: factory, Listen: ln.add}, bundle.CACert, o.Controllers); err != nil {
		return nil, err
	}
	delegate, err := newDelegate(cfg, *backend, factory, o.Extensions)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			delegate.Destroy() // its storage
		}
	}()
	g, err := cfg.Complete(factory).New("skiff-apiserver", delegate)
	if err != nil {
		return nil, fmt.Errorf("new apiserver: %w", err)
	}
	s.generic = g
	if err := installAPIs(g, storage); err != nil {
		return nil, err
	}
	sa.installIssuerDiscovery(g, cfg.ExternalAddress)
	installLazyOpenAPI(g, cfg)
	g.AddPostStartHookOrDie("skiff-system-namespaces", systemNamespacesHook)
	g.AddPostStartHookOrDie("skiff-controllers", s.controllers.start)
	if err := pki.WriteAdminKubeconfig(o.DataDir, s.URL, bundle); err != nil {
		return nil, fmt.Errorf("admin kubeconfig: %w", err)
	}
	if o.NodeName != "" {
		if s.NodeKubeconfig, err = pki.EnsureNodeKubeconfig(o.DataDir, s.URL, bundle, o.NodeName); err != nil {
			return nil, fmt.Errorf("node kubeconfig: %w", err)
		}
	}
	return s, nil
}

// Run serves until ctx ends, waits for the controllers, then stops the
// embedded etcd. filepages.After into it, and every filepages.Every
// after, the mapped files' pages not used since stop counting in the
// process's resident set (shim/NOTES.md, "RSS, fourth pass").
func (s *Server) Run(ctx context.Context) error {
	defer s.Close()
	defer s.controllers.wait()
	pagesCtx, stopPages := context.WithCancel(ctx)
	pagesDone := make(chan struct{})
	go func() {
		defer close(pagesDone)
		filepages.Periodically(pagesCtx, filepages.After, filepages.Every, reportReleased)
	}()
	defer func() { stopPages(); <-pagesDone }()
	return s.generic.PrepareRun().RunWithContext(ctx)
}

// reportReleased logs a page release's result.
func reportReleased(n uint64, err error) {
	if err != nil {
		klog.ErrorS(err, "release the mapped files' pages")
		return
	}
	klog.V(4).InfoS("released the mapped files' pages", "bytes", n)
}

// Close closes the etcd client and stops the embedded etcd (Run does it
// on return).
func (s *Server) Close() {
	s.closeStorage()
	if s.etcd != nil {
		s.etcd.Close()
	}
}

// closeStorage closes the storage's etcd client once; a failure is logged.
func (s *Server) closeStorage() {
	if s.storage == nil {
		return
	}
	if err := s.storage.Close(); err != nil {
		klog.ErrorS(err, "close the storage")
	}
	s.storage = nil
}

// dropManagedFields is the shared informers' transform: no cached object
// keeps its managedFields (no controller reads them; an update without
// them keeps the stored ones), which saves memory per cached pod.
func dropManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.ObjectMetaAccessor); ok {
		m.GetObjectMeta().SetManagedFields(nil)
	}
	return obj, nil
}

// applySecurity sets TLS (the shim's serving certificate), client
// certificate, admin token and service-account token (saTokens, for the
// API's audiences sa.audiences()) authentication, and authorization: the
// admin (group system:masters) may do everything; a node
// (system:node:<name> in system:nodes) what the Node authorizer allows,
// reading its pods and PersistentVolumes through graph (NodeRestriction,
// in the admission chain, narrows its writes); every authenticated user, service accounts
// included, may read discovery, version and health and create
// SelfSubjectReviews and SelfSubjectAccessReviews, as on a fresh kubeadm
// cluster, and nothing else;
// anonymous requests are refused (no anonymous authenticator: 401). RBAC
// is not planned
// (docs/decisions/0068-service-accounts-shim-get-what-fresh.md).
func applySecurity(cfg *genericapiserver.Config, ln net.Listener, b *pki.Bundle, graph nodeGraph,
	sa serviceAccountTokens, saTokens authenticator.Token) error {
	cert, err := dynamiccertificates.NewStaticCertKeyContent("serving-cert", b.ServingCert, b.ServingKey)
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	clientCA, err := dynamiccertificates.NewStaticCAContent("client-ca", b.CACert)
	if err != nil {
		return fmt.Errorf("client CA: %w", err)
	}
	cfg.SecureServing = &genericapiserver.SecureServingInfo{Listener: ln, Cert: cert, ClientCA: clientCA}
	admin := &user.DefaultInfo{Name: AdminUser, Groups: []string{user.SystemPrivilegedGroup}}
	authn := unionauthn.New(
		x509request.NewDynamic(clientCA.VerifyOptions, x509request.CommonNameUserConversion),
		authenticatorfactory.NewFromTokens(map[string]*user.DefaultInfo{b.AdminToken: admin}, sa.audiences()),
		bearertoken.New(saTokens),
	)
	cfg.Authentication.APIAudiences = sa.audiences()
	cfg.Authentication.Authenticator = group.NewAuthenticatedGroupAdder(authn)
	// upstream's system:discovery and system:public-info-viewer roles,
	// bound to system:authenticated (plugin/pkg/auth/authorizer/rbac/
	// bootstrappolicy/policy.go); the paths are GET-only endpoints.
	discovery, err := pathauthz.NewAuthorizer([]string{"/livez", "/readyz", "/healthz", "/version", "/version/",
		"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*"})
	if err != nil {
		return fmt.Errorf("discovery authorizer: %w", err)
	}
	// The first authorizer to allow or deny decides; NoOpinion from all is a 403.
	union, err := unionauthz.New(
		unionauthz.NamedAuthorizer{AuthorizerName: "privileged-groups", Authorizer: authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)},
		unionauthz.NamedAuthorizer{AuthorizerName: "node", Authorizer: nodeauthz.New(graph.pods, graph.volumes)},
		unionauthz.NamedAuthorizer{AuthorizerName: "discovery", Authorizer: discovery},
		unionauthz.NamedAuthorizer{AuthorizerName: "basic-user", Authorizer: basicUser()},
		unionauthz.NamedAuthorizer{AuthorizerName: "issuer-discovery", Authorizer: issuerDiscovery()},
	)
	if err != nil {
		return fmt.Errorf("authorizer: %w", err)
	}
	cfg.Authorization.Authorizer = union
	loopback, err := cfg.SecureServing.NewLoopbackClientConfig(uuid.NewString(), b.CACert)
	if err != nil {
		return fmt.Errorf("loopback client: %w", err)
	}
	loopback.ServerName = pki.LoopbackServerName
	cfg.LoopbackClientConfig = loopback
	return nil
}

// applyStorage points the REST options at etcd: keys and encoding as
// kube-apiserver's (/registry/<resource>/<namespace>/<name>, protobuf), so
// an external etcd holds what a kube-apiserver would read; every resource
// reaches etcd through the returned client (sharedEtcd), closed by the
// caller.
func applyStorage(cfg *genericapiserver.Config, backend *storagebackend.Config) (*sharedEtcd, error) {
	// The default CompactionInterval (5 minutes) is what keeps etcd's
	// history bounded: the embedded etcd compacts nothing itself
	// (shim/etcd, docs/decisions/0105-shim-etcd-bounded.md).
	etcdOpts := options.NewEtcdOptions(backend)
	etcdOpts.DefaultStorageMediaType = "application/vnd.kubernetes.protobuf"
	resources := serverstorage.NewResourceConfig()
	resources.EnableVersions(corev1.SchemeGroupVersion, coordinationv1.SchemeGroupVersion, appsv1.SchemeGroupVersion,
		eventsv1.SchemeGroupVersion)
	// A nil effective version: store the scheme's preferred version, no
	// emulation of older ones.
	encoding := serverstorage.NewDefaultResourceEncodingConfigForEffectiveVersion(scheme.Scheme, nil)
	factory := serverstorage.NewDefaultStorageFactory(*backend, etcdOpts.DefaultStorageMediaType,
		scheme.Codecs, encoding, resources, nil)
	// One stored object for both event APIs: /registry/events/<ns>/<name>
	// in core/v1 encoding, as kube-apiserver's storage factory (core first).
	factory.AddCohabitatingResources(corev1.Resource("events"), eventsv1.Resource("events"))
	if err := etcdOpts.ApplyWithStorageFactoryTo(factory, cfg); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	// events.k8s.io events read the core events' watch from etcd, as with
	// kube-apiserver's DefaultWatchCacheSizes (no cache for either; the
	// shim keeps the core one, see shim/NOTES.md): a second cache would
	// hold every event twice.
	shared, err := newSharedEtcd(cfg.RESTOptionsGetter, backend.Transport.ServerList, backend.CompactionInterval, eventsv1.Resource("events"))
	if err != nil {
		return nil, err
	}
	cfg.RESTOptionsGetter = shared
	return shared, nil
}
