package server

import (
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/logutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	genericfeatures "k8s.io/apiserver/pkg/features"
	genericregistry "k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/etcd3"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"
)

// Dial settings of k8s.io/apiserver's etcd clients
// (storage/storagebackend/factory/etcd3.go).
const (
	etcdDialTimeout      = 20 * time.Second
	etcdKeepaliveTime    = 30 * time.Second
	etcdKeepaliveTimeout = 10 * time.Second
)

// sharedEtcd is a RESTOptionsGetter whose storage reaches etcd through one
// client for every resource, where k8s.io/apiserver's storage factory
// dials one client per resource (each a gRPC connection with its
// goroutines and buffers at both ends, ~0.3-0.5 MB each; shim/NOTES.md,
// "RSS, fourth pass"). Everything else is upstream's: each resource's
// etcd3 store over that client, its watch cache (StorageWithCacher's
// wiring) unless uncached names it, one compactor per etcd endpoint.
// Close it after the server has stopped.
type sharedEtcd struct {
	getter    genericregistry.RESTOptionsGetter
	uncached  sets.Set[schema.GroupResource]
	client    *kubernetes.Client
	compactor interface {
		etcd3.Compactor
		Stop()
	}
}

// newSharedEtcd dials servers (plain gRPC, as applyStorage configures
// them) and starts the compactor every compaction interval (none when
// 0); getter supplies each resource's configuration, uncached the
// resources served without a watch cache.
func newSharedEtcd(getter genericregistry.RESTOptionsGetter, servers []string, compaction time.Duration,
	uncached ...schema.GroupResource) (*sharedEtcd, error) {
	// etcd's default client logger at upstream's level (info), without
	// its sampler (~0.45 MB of counters for the client's few messages).
	logCfg := logutil.DefaultZapLoggerConfig
	logCfg.Level = zap.NewAtomicLevelAt(zap.InfoLevel)
	logCfg.Sampling = nil
	logger, err := logCfg.Build()
	if err != nil {
		return nil, fmt.Errorf("etcd client logger: %w", err)
	}
	client, err := kubernetes.New(clientv3.Config{
		Endpoints:            servers,
		DialTimeout:          etcdDialTimeout,
		DialKeepAliveTime:    etcdKeepaliveTime,
		DialKeepAliveTimeout: etcdKeepaliveTimeout,
		Logger:               logger.Named("etcd-client"),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	// Every store's requests count in etcd_request_duration_seconds, as
	// through upstream's clients.
	client.KV = etcd3.NewETCDLatencyTracker(client.KV)
	s := &sharedEtcd{getter: getter, uncached: sets.New(uncached...), client: client}
	if compaction > 0 {
		s.compactor = etcd3.StartCompactorPerEndpoint(client.Client, compaction)
	}
	return s, nil
}

// GetRESTOptions is the wrapped getter's options with the decorator
// replaced by one over the shared client.
func (s *sharedEtcd) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (genericregistry.RESTOptions, error) {
	opts, err := s.getter.GetRESTOptions(resource, example)
	if err != nil {
		return opts, fmt.Errorf("storage options of %s: %w", resource, err)
	}
	opts.Decorator = s.decorate(!s.uncached.Has(resource))
	return opts, nil
}

// decorate returns the storage decorator: an etcd3 store over the shared
// client, behind a watch cache when cached (upstream's
// registry.StorageWithCacher, but for the store's client).
func (s *sharedEtcd) decorate(cached bool) genericregistry.StorageDecorator {
	return func(cfg *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, getAttrs storage.AttrFunc, triggers storage.IndexerFuncs,
		indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		store, closeStore, err := s.newStore(cfg, newFunc, newListFunc, resourcePrefix)
		if err != nil {
			return nil, nil, err
		}
		if !cached {
			return store, closeStore, nil
		}
		cacher, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
			Storage:             store,
			Versioner:           storage.APIObjectVersioner{},
			GroupResource:       cfg.GroupResource,
			EventsHistoryWindow: cfg.EventsHistoryWindow,
			ResourcePrefix:      resourcePrefix,
			KeyFunc:             keyFunc,
			NewFunc:             newFunc,
			NewListFunc:         newListFunc,
			GetAttrsFunc:        getAttrs,
			IndexerFuncs:        triggers,
			Indexers:            indexers,
			Codec:               cfg.Codec,
		})
		if err != nil {
			closeStore()
			return nil, nil, fmt.Errorf("watch cache of %s: %w", cfg.GroupResource, err)
		}
		delegator := cacherstorage.NewCacheDelegator(cacher, store)
		var once sync.Once
		return delegator, func() {
			once.Do(func() {
				delegator.Stop()
				cacher.Stop()
				closeStore()
			})
		}, nil
	}
}

// newStore is upstream's etcd3 store for one resource over the shared
// client (factory.newETCD3Storage but for the client; no encryption, as
// the shim configures none), with its close function.
func (s *sharedEtcd) newStore(cfg *storagebackend.ConfigForResource, newFunc, newListFunc func() runtime.Object,
	resourcePrefix string) (storage.Interface, func(), error) {
	transformer := cfg.Transformer
	if transformer == nil {
		transformer = identity.NewEncryptCheckTransformer()
	}
	versioner := storage.APIObjectVersioner{}
	decoder := etcd3.NewDefaultDecoder(cfg.Codec, versioner)
	unsafeDelete := utilfeature.DefaultFeatureGate.Enabled(genericfeatures.AllowUnsafeMalformedObjectDeletion)
	if unsafeDelete {
		transformer = etcd3.WithCorruptObjErrorHandlingTransformer(transformer)
		decoder = etcd3.WithCorruptObjErrorHandlingDecoder(decoder)
	}
	var compactor etcd3.Compactor
	if s.compactor != nil {
		compactor = s.compactor
	}
	store, err := etcd3.New(s.client, compactor, cfg.Codec, newFunc, newListFunc, cfg.Prefix, resourcePrefix,
		cfg.GroupResource, transformer, cfg.LeaseManagerConfig, decoder, versioner)
	if err != nil {
		return nil, nil, fmt.Errorf("etcd storage of %s: %w", cfg.GroupResource, err)
	}
	if unsafeDelete {
		return etcd3.NewStoreWithUnsafeCorruptObjectDeletion(store, cfg.GroupResource), store.Close, nil
	}
	return store, store.Close, nil
}

// Close stops the compactor and closes the client.
func (s *sharedEtcd) Close() error {
	if s.compactor != nil {
		s.compactor.Stop()
	}
	if err := s.client.Close(); err != nil {
		return fmt.Errorf("close the etcd client: %w", err)
	}
	return nil
}
