package scheme

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// FieldLabels are the field selector labels each kind supports beyond
// metadata.name and metadata.namespace, as kube-apiserver 1.34 accepts them
// (pkg/apis/core/v1/conversion.go). The registries' GetAttrs functions
// return the same keys.
var FieldLabels = map[string][]string{
	"Pod": {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
		"spec.serviceAccountName", "spec.hostNetwork", "status.phase",
		"status.podIP", "status.nominatedNodeName"},
	"Event": {"involvedObject.kind", "involvedObject.namespace",
		"involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion",
		"involvedObject.resourceVersion", "involvedObject.fieldPath",
		"reason", "reportingComponent", "source", "type"},
	"Secret":    {"type"},
	"Namespace": {"status.phase"},
	"Node":      {"spec.unschedulable"},
}

func addFieldLabelConversions(s *runtime.Scheme) error {
	for kind, extra := range FieldLabels {
		allowed := map[string]bool{"metadata.name": true, "metadata.namespace": true}
		for _, l := range extra {
			allowed[l] = true
		}
		kind := kind
		err := s.AddFieldLabelConversionFunc(corev1.SchemeGroupVersion.WithKind(kind),
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
	// Leases and the other kinds get runtime.DefaultMetaV1FieldSelectorConversion
	// (metadata.name and metadata.namespace) when none is registered.
	return nil
}
