package scheme

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// FieldLabels are the field selector labels each kind supports beyond
// metadata.name and metadata.namespace, as kube-apiserver 1.34 accepts them
// (pkg/apis/core/v1/conversion.go, pkg/apis/apps/v1/conversion.go). The
// registries' GetAttrs functions return the same keys. events.k8s.io/v1
// Events map their own labels onto core's (events.go).
var FieldLabels = map[schema.GroupVersionKind][]string{
	corev1.SchemeGroupVersion.WithKind("Pod"): {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
		"spec.serviceAccountName", "spec.hostNetwork", "status.phase",
		"status.podIP", "status.nominatedNodeName"},
	corev1.SchemeGroupVersion.WithKind("Event"): {"involvedObject.kind", "involvedObject.namespace",
		"involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion",
		"involvedObject.resourceVersion", "involvedObject.fieldPath",
		"reason", "reportingComponent", "source", "type"},
	corev1.SchemeGroupVersion.WithKind("Secret"):     {"type"},
	corev1.SchemeGroupVersion.WithKind("Service"):    {"spec.clusterIP", "spec.type"},
	corev1.SchemeGroupVersion.WithKind("Namespace"):  {"status.phase"},
	corev1.SchemeGroupVersion.WithKind("Node"):       {"spec.unschedulable"},
	appsv1.SchemeGroupVersion.WithKind("ReplicaSet"): {"status.replicas"},
}

func addFieldLabelConversions(s *runtime.Scheme) error {
	for gvk, extra := range FieldLabels {
		allowed := map[string]bool{"metadata.name": true, "metadata.namespace": true}
		for _, l := range extra {
			allowed[l] = true
		}
		err := s.AddFieldLabelConversionFunc(gvk,
			func(label, value string) (string, string, error) {
				if !allowed[label] {
					return "", "", fmt.Errorf("field label not supported: %s", label)
				}
				return label, value, nil
			})
		if err != nil {
			return err
		}
	}
	// Leases, Deployments and the other kinds get
	// runtime.DefaultMetaV1FieldSelectorConversion (metadata.name and
	// metadata.namespace) when none is registered.
	return nil
}
