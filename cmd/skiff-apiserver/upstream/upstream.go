package upstream

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/util/flowcontrol"
	batchv1internal "k8s.io/kubernetes/pkg/apis/batch/v1"
	rbacv1internal "k8s.io/kubernetes/pkg/apis/rbac/v1"
	"k8s.io/kubernetes/pkg/capabilities"
	"k8s.io/kubernetes/pkg/controller"
	"k8s.io/kubernetes/pkg/controller/clusterroleaggregation"
	"k8s.io/kubernetes/pkg/controller/cronjob"
	"k8s.io/kubernetes/pkg/controller/daemon"
	"k8s.io/kubernetes/pkg/controller/endpoint"
	"k8s.io/kubernetes/pkg/controller/endpointslice"
	"k8s.io/kubernetes/pkg/controller/endpointslicemirroring"
	"k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/kubernetes/pkg/controller/statefulset"
	"k8s.io/kubernetes/pkg/controller/tainteviction"
	"k8s.io/kubernetes/pkg/controller/ttlafterfinished"
	"k8s.io/kubernetes/pkg/features"

	"github.com/skiffnode/skiff/shim/scheme"
	"github.com/skiffnode/skiff/shim/server"
)

// The controllers' workers: kube-controller-manager's defaults
// (--concurrent-job-syncs, --concurrent-cron-job-syncs,
// --concurrent-daemonset-syncs), and the DaemonSet controller's back-off
// for a node's failed pods (kube-controller-manager's).
const (
	jobWorkers         = 5
	cronJobWorkers     = 5
	daemonSetWorkers   = 2
	ttlWorkers         = 5 // --concurrent-ttl-after-finished-syncs
	statefulSetWorkers = 5 // --concurrent-statefulset-syncs
	aggregationWorkers = 5 // as kube-controller-manager runs clusterrole-aggregation

	// --concurrent-service-endpoint-syncs, --concurrent-endpoint-syncs,
	// --mirroring-concurrent-service-endpoint-syncs, and the slices'
	// sizes (--max-endpoints-per-slice,
	// --mirroring-max-endpoints-per-subset).
	endpointSliceWorkers  = 5
	endpointsWorkers      = 5
	mirroringWorkers      = 5
	maxEndpointsPerSlice  = 100
	maxEndpointsPerSubset = 1000

	daemonPodBackoffMin = time.Second
	daemonPodBackoffMax = 15 * time.Minute
)

// Config is what upstream's kinds need beyond server.Options.
type Config struct {
	// ServiceCIDR is the Services' cluster IP range (IPv4), as
	// kube-apiserver's --service-cluster-ip-range; NodePortRange their node
	// ports', as --service-node-port-range ("30000-32767").
	ServiceCIDR   string
	NodePortRange string
}

// Add makes o serve upstream's kinds (core/v1 Services, Endpoints,
// PersistentVolumeClaims, PersistentVolumes, ReplicationControllers,
// PodTemplates and LimitRanges,
// storage.k8s.io/v1 StorageClasses,
// discovery.k8s.io/v1 EndpointSlices, batch/v1 Jobs and CronJobs, apps/v1
// DaemonSets, StatefulSets and ControllerRevisions, policy/v1
// PodDisruptionBudgets, rbac.authorization.k8s.io/v1's four kinds) and
// run upstream's controllers (EndpointSlice, Endpoints, EndpointSlice
// mirroring, Job, TTL after finished, CronJob, DaemonSet, StatefulSet,
// ClusterRole aggregation, replication, disruption, PersistentVolume,
// PVC and PV protection, taint eviction: NoExecute taints evict the pods
// that do not tolerate them), and registers upstream's defaulting of those
// kinds in the shim's scheme, which the shim's decoders apply. It sets
// o.Controllers. Call it once, before server.New.
func Add(o *server.Options, cfg Config) error {
	c, err := newConverter()
	if err != nil {
		return err
	}
	alloc, err := newServiceAllocators(cfg.ServiceCIDR, cfg.NodePortRange)
	if err != nil {
		return err
	}
	svcs, err := services(c, alloc)
	if err != nil {
		return err
	}
	if err := batchv1internal.RegisterDefaults(scheme.Scheme); err != nil {
		return fmt.Errorf("batch defaults: %w", err)
	}
	if err := rbacv1internal.RegisterDefaults(scheme.Scheme); err != nil {
		return fmt.Errorf("rbac defaults: %w", err)
	}
	addDaemonSetDefaults(scheme.Scheme)
	addServiceDefaults(scheme.Scheme)
	if err := addVolumeDefaults(scheme.Scheme); err != nil {
		return err
	}
	addReplicationControllerDefaults(scheme.Scheme)
	addTemplateDefaults(scheme.Scheme)
	// Upstream's validation of pod templates (Jobs, DaemonSets, ...)
	// refuses privileged containers unless allowed, as kube-apiserver's
	// --allow-privileged (kubeadm sets it): the shim's pods may be.
	capabilities.Setup(true, 0)
	o.Kinds = append(o.Kinds, podTemplates(c), limitRanges(c), svcs, endpoints(c), endpointSlices(c), persistentVolumeClaims(c),
		persistentVolumes(c), storageClasses(c), jobs(c), cronJobs(c), daemonSets(c), statefulSets(c), controllerRevisions(c),
		replicationControllers(c), podDisruptionBudgets(c))
	o.Kinds = append(o.Kinds, rbacKinds(c)...)
	o.Controllers = func(cc server.ControllerContext) ([]func(context.Context), error) {
		runs, err := newControllers(cc)
		if err != nil {
			return nil, err
		}
		return append(runs, func(ctx context.Context) { alloc.repair(ctx, cc.Client) }), nil
	}
	return nil
}

// taintEviction builds upstream's taint eviction controller: a NoExecute
// taint evicts the pods that do not tolerate it.
func taintEviction(cc server.ControllerContext) (*tainteviction.Controller, error) {
	core := cc.Informers.Core().V1()
	// The pods' node-name index it reads (the DaemonSet controller adds
	// it too).
	if err := controller.AddPodNodeNameIndexer(core.Pods().Informer()); err != nil {
		return nil, fmt.Errorf("taint eviction controller: %w", err)
	}
	tec, err := tainteviction.New(context.Background(), cc.Client, core.Pods(), core.Nodes(), "taint-eviction-controller")
	if err != nil {
		return nil, fmt.Errorf("taint eviction controller: %w", err)
	}
	return tec, nil
}

// newConverter returns a converter for the groups Add serves.
func newConverter() (converter, error) {
	c := converter{scheme: runtime.NewScheme(), printers: newPrinters()}
	for _, add := range []func(*runtime.Scheme) error{addCoreToScheme, addBatchToScheme, addAppsToScheme, addRBACToScheme, addPolicyToScheme, addStorageToScheme} {
		if err := add(c.scheme); err != nil {
			return converter{}, fmt.Errorf("upstream scheme: %w", err)
		}
	}
	return c, nil
}

// newControllers builds upstream's controllers (Add lists them) on the
// shim's loopback client and shared informers.
func newControllers(cc server.ControllerContext) ([]func(context.Context), error) {
	// With WorkloadWithJob the Job controller waits for Workload and
	// PodGroup informers, which need kinds skiff-apiserver does not serve.
	if utilfeature.DefaultFeatureGate.Enabled(features.WorkloadWithJob) {
		return nil, fmt.Errorf("feature gate %s: scheduling.k8s.io Workloads and PodGroups are not served", features.WorkloadWithJob)
	}
	batch, apps, core := cc.Informers.Batch().V1(), cc.Informers.Apps().V1(), cc.Informers.Core().V1()
	slices := cc.Informers.Discovery().V1().EndpointSlices()
	esc := endpointslice.NewController(context.Background(), core.Pods(), core.Services(), core.Nodes(), slices,
		maxEndpointsPerSlice, cc.Client, 0)
	epc := endpoint.NewEndpointController(context.Background(), core.Pods(), core.Services(), core.Endpoints(), cc.Client, 0)
	mc := endpointslicemirroring.NewController(context.Background(), core.Endpoints(), slices, core.Services(),
		maxEndpointsPerSubset, cc.Client, 0)
	ttl := ttlafterfinished.New(context.Background(), batch.Jobs(), cc.Client)
	ssc := statefulset.NewStatefulSetController(context.Background(), core.Pods(), apps.StatefulSets(),
		core.PersistentVolumeClaims(), apps.ControllerRevisions(), cc.Client)
	agg := clusterroleaggregation.NewClusterRoleAggregation(cc.Informers.Rbac().V1().ClusterRoles(), cc.Client.RbacV1())
	jc, err := job.NewController(context.Background(), cc.Client, cc.Informers.Core().V1().Pods(), batch.Jobs(), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("job controller: %w", err)
	}
	cjc, err := cronjob.NewControllerV2(context.Background(), batch.Jobs(), batch.CronJobs(), cc.Client)
	if err != nil {
		return nil, fmt.Errorf("cronjob controller: %w", err)
	}
	dsc, err := daemon.NewDaemonSetsController(context.Background(), apps.DaemonSets(), apps.ControllerRevisions(),
		cc.Informers.Core().V1().Pods(), cc.Informers.Core().V1().Nodes(), cc.Client,
		flowcontrol.NewBackOff(daemonPodBackoffMin, daemonPodBackoffMax))
	if err != nil {
		return nil, fmt.Errorf("daemonset controller: %w", err)
	}
	tec, err := taintEviction(cc)
	if err != nil {
		return nil, err
	}
	policyRuns, err := policyControllers(cc)
	if err != nil {
		return nil, err
	}
	volumeRuns, err := volumeControllers(cc)
	if err != nil {
		return nil, err
	}
	policyRuns = append(policyRuns, volumeRuns...)
	return append(policyRuns,
		func(ctx context.Context) { esc.Run(ctx, endpointSliceWorkers) },
		func(ctx context.Context) { epc.Run(ctx, endpointsWorkers) },
		func(ctx context.Context) { mc.Run(ctx, mirroringWorkers) },
		func(ctx context.Context) { ttl.Run(ctx, ttlWorkers) },
		func(ctx context.Context) { ssc.Run(ctx, statefulSetWorkers) },
		func(ctx context.Context) { agg.Run(ctx, aggregationWorkers) },
		func(ctx context.Context) { jc.Run(ctx, jobWorkers) },
		func(ctx context.Context) { cjc.Run(ctx, cronJobWorkers) },
		func(ctx context.Context) { dsc.Run(ctx, daemonSetWorkers) },
		tec.Run,
	), nil
}
