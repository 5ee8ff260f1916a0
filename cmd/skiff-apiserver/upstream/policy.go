package upstream

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	cacheddiscovery "k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	corev1internal "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/apis/policy"
	policyv1internal "k8s.io/kubernetes/pkg/apis/policy/v1"
	"k8s.io/kubernetes/pkg/controller/disruption"
	"k8s.io/kubernetes/pkg/controller/replication"
	"k8s.io/kubernetes/pkg/registry/core/replicationcontroller"
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/shim/registry/generic"
	"github.com/skiffnode/skiff/shim/server"
)

// kube-controller-manager's defaults: --concurrent-replicationcontroller-syncs
// (ConcurrentRCSyncs), the disruption controller's one worker, the
// replication manager's burst (BurstReplicas), and how often its
// RESTMapper forgets what discovery said (as the controller manager's).
const (
	rcWorkers         = 5
	disruptionWorkers = 1
	burstReplicas     = 500
	restMapperReset   = 30 * time.Second
)

// addPolicyToScheme registers policy's internal types and the v1
// conversions in s.
func addPolicyToScheme(s *runtime.Scheme) error {
	if err := policy.AddToScheme(s); err != nil {
		return err
	}
	return policyv1internal.AddToScheme(s)
}

// addReplicationControllerDefaults registers upstream's defaulting of
// ReplicationControllers in s (the shim's scheme), and of no other core
// kind.
func addReplicationControllerDefaults(s *runtime.Scheme) {
	s.AddTypeDefaultingFunc(&corev1.ReplicationController{}, func(obj any) {
		corev1internal.SetObjectDefaults_ReplicationController(obj.(*corev1.ReplicationController))
	})
	s.AddTypeDefaultingFunc(&corev1.ReplicationControllerList{}, func(obj any) {
		corev1internal.SetObjectDefaults_ReplicationControllerList(obj.(*corev1.ReplicationControllerList))
	})
}

// podDisruptionBudgets is policy/v1 PodDisruptionBudgets with upstream's
// strategy; the disruption controller keeps their status.
func podDisruptionBudgets(c converter) *generic.Kind {
	return c.withStrategy(&generic.Kind{
		Group: policyv1.GroupName, Version: "v1", Resource: "poddisruptionbudgets", Singular: "poddisruptionbudget", Namespaced: true,
		New:        func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
		NewList:    func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
		ShortNames: []string{"pdb"},
		Status:     true,
	}, poddisruptionbudget.Strategy, poddisruptionbudget.StatusStrategy)
}

// replicationControllers is core/v1 ReplicationControllers with upstream's
// strategy and the scale subresource, run by upstream's replication
// manager; the disruption controller needs them served. A delete without
// a propagation policy orphans the pods, as kube-apiserver's v1 does
// (its strategy's DefaultGarbageCollectionPolicy, for compatibility).
func replicationControllers(c converter) *generic.Kind {
	return c.withStrategy(&generic.Kind{
		Version: "v1", Resource: "replicationcontrollers", Singular: "replicationcontroller", Namespaced: true,
		New:             func() runtime.Object { return &corev1.ReplicationController{} },
		NewList:         func() runtime.Object { return &corev1.ReplicationControllerList{} },
		ShortNames:      []string{"rc"},
		Categories:      []string{"all"},
		Status:          true,
		OrphanByDefault: true,
		Scale: &generic.ScaleFuncs{
			Replicas:       func(obj runtime.Object) int32 { return ptr.Deref(obj.(*corev1.ReplicationController).Spec.Replicas, 1) },
			SetReplicas:    func(obj runtime.Object, n int32) { obj.(*corev1.ReplicationController).Spec.Replicas = &n },
			StatusReplicas: func(obj runtime.Object) int32 { return obj.(*corev1.ReplicationController).Status.Replicas },
			Selector: func(obj runtime.Object) *metav1.LabelSelector {
				return &metav1.LabelSelector{MatchLabels: obj.(*corev1.ReplicationController).Spec.Selector}
			},
		},
	}, replicationcontroller.Strategy, replicationcontroller.StatusStrategy)
}

// policyControllers are upstream's replication manager and disruption
// controller on cc, the latter with kube-controller-manager's RESTMapper
// (discovery, reset every 30 s) and scale client, for owners of pods that
// are not one of the four built-in workload kinds.
func policyControllers(cc server.ControllerContext) ([]func(context.Context), error) {
	core, apps := cc.Informers.Core().V1(), cc.Informers.Apps().V1()
	rm := replication.NewReplicationManager(context.Background(), core.Pods(), core.ReplicationControllers(), cc.Client, burstReplicas)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cacheddiscovery.NewMemCacheClient(cc.Client.Discovery()))
	scales, err := scale.NewForConfig(cc.Config, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(cc.Client.Discovery()))
	if err != nil {
		return nil, fmt.Errorf("disruption controller: scale client: %w", err)
	}
	dc := disruption.NewDisruptionController(context.Background(), core.Pods(), cc.Informers.Policy().V1().PodDisruptionBudgets(),
		core.ReplicationControllers(), apps.ReplicaSets(), apps.Deployments(), apps.StatefulSets(), cc.Client, mapper, scales,
		cc.Client.Discovery())
	return []func(context.Context){
		func(ctx context.Context) { rm.Run(ctx, rcWorkers) },
		func(ctx context.Context) { dc.Run(ctx, disruptionWorkers) },
		func(ctx context.Context) {
			wait.UntilWithContext(ctx, func(context.Context) { mapper.Reset() }, restMapperReset)
		},
	}, nil
}
