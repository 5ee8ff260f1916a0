package scheme

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/podspec"
)

// addAppsDefaults registers upstream's apps/v1 defaulting
// (pkg/apis/apps/v1/defaults.go: SetDefaults_Deployment,
// SetDefaults_ReplicaSet) and the pod template's, which is the pod's less
// enableServiceLinks (upstream defaults that in SetDefaults_Pod only).
func addAppsDefaults(s *runtime.Scheme) {
	s.AddTypeDefaultingFunc(&appsv1.Deployment{}, func(obj any) { DefaultDeployment(obj.(*appsv1.Deployment)) })
	s.AddTypeDefaultingFunc(&appsv1.DeploymentList{}, func(obj any) {
		l := obj.(*appsv1.DeploymentList)
		for i := range l.Items {
			DefaultDeployment(&l.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&appsv1.ReplicaSet{}, func(obj any) { DefaultReplicaSet(obj.(*appsv1.ReplicaSet)) })
	s.AddTypeDefaultingFunc(&appsv1.ReplicaSetList{}, func(obj any) {
		l := obj.(*appsv1.ReplicaSetList)
		for i := range l.Items {
			DefaultReplicaSet(&l.Items[i])
		}
	})
}

// DefaultDeployment fills what upstream's SetDefaults_Deployment fills:
// replicas 1, strategy RollingUpdate with maxUnavailable and maxSurge 25%,
// revisionHistoryLimit 10, progressDeadlineSeconds 600, and the template.
func DefaultDeployment(d *appsv1.Deployment) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr.To[int32](1)
	}
	st := &d.Spec.Strategy
	if st.Type == "" {
		st.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if st.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		quarter := intstr.FromString("25%")
		if st.RollingUpdate.MaxUnavailable == nil {
			st.RollingUpdate.MaxUnavailable = &quarter
		}
		if st.RollingUpdate.MaxSurge == nil {
			st.RollingUpdate.MaxSurge = &quarter
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	}
	DefaultPodTemplate(&d.Spec.Template)
}

// DefaultReplicaSet is upstream's SetDefaults_ReplicaSet (replicas 1) plus
// the template's defaults.
func DefaultReplicaSet(rs *appsv1.ReplicaSet) {
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = ptr.To[int32](1)
	}
	DefaultPodTemplate(&rs.Spec.Template)
}

// DefaultPodTemplate applies the pod defaults (podspec.SetDefaults) to a
// template, keeping its namespace and enableServiceLinks as they were.
func DefaultPodTemplate(t *corev1.PodTemplateSpec) {
	pod := &corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}
	podspec.SetDefaults(pod)
	links := t.Spec.EnableServiceLinks
	t.Spec = pod.Spec
	t.Spec.EnableServiceLinks = links
}
