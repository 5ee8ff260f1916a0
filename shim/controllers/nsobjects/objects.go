package nsobjects

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
)

// DefaultServiceAccountName is the ServiceAccount every namespace has.
const DefaultServiceAccountName = "default"

// DefaultServiceAccount is upstream's serviceaccounts-controller
// (pkg/controller/serviceaccount/serviceaccounts_controller.go): the
// ServiceAccount "default" is created where missing; an existing one is
// left as it is.
func DefaultServiceAccount(client kubernetes.Interface) Spec {
	return Spec{
		Name: DefaultServiceAccountName,
		Informer: coreinformers.NewFilteredServiceAccountInformer(client, metav1.NamespaceAll, 0,
			namespaceIndexers(), nameSelector(DefaultServiceAccountName)),
		Ensure: func(ctx context.Context, ns string, cached runtime.Object) error {
			if cached != nil {
				return nil
			}
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultServiceAccountName}}
			_, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
			return err
		},
	}
}

// Upstream's root CA ConfigMap (pkg/controller/certificates/rootcacertpublisher/publisher.go).
const (
	RootCAConfigMapName   = "kube-root-ca.crt"
	RootCAKey             = "ca.crt"
	descriptionAnnotation = "kubernetes.io/description"
	rootCADescription     = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// RootCA is upstream's root-ca-cert-publisher: the ConfigMap
// "kube-root-ca.crt" holds caPEM under "ca.crt" and upstream's
// description annotation; it is recreated if deleted and its data
// restored if changed.
func RootCA(client kubernetes.Interface, caPEM []byte) Spec {
	data := map[string]string{RootCAKey: string(caPEM)}
	return Spec{
		Name: RootCAConfigMapName,
		Informer: coreinformers.NewFilteredConfigMapInformer(client, metav1.NamespaceAll, 0,
			namespaceIndexers(), nameSelector(RootCAConfigMapName)),
		Ensure: func(ctx context.Context, ns string, cached runtime.Object) error {
			cms := client.CoreV1().ConfigMaps(ns)
			if cached == nil {
				_, err := cms.Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{
						Name:        RootCAConfigMapName,
						Annotations: map[string]string{descriptionAnnotation: rootCADescription},
					},
					Data: data,
				}, metav1.CreateOptions{})
				return err
			}
			cm := cached.(*corev1.ConfigMap)
			if maps.Equal(cm.Data, data) && cm.Annotations[descriptionAnnotation] != "" {
				return nil
			}
			cm = cm.DeepCopy() // the cache's copy is shared
			cm.Data = maps.Clone(data)
			if cm.Annotations == nil {
				cm.Annotations = map[string]string{}
			}
			cm.Annotations[descriptionAnnotation] = rootCADescription
			_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
			return err
		},
	}
}
