package nsobjects

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

const caPEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func namespace(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
}

func rootCA(data string, annotations map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: RootCAConfigMapName, Annotations: annotations, Labels: map[string]string{"keep": "me"}},
		Data:       map[string]string{RootCAKey: data},
	}
}

var described = map[string]string{descriptionAnnotation: rootCADescription}

func TestSync(t *testing.T) {
	tests := []struct {
		name      string
		spec      func(kubernetes.Interface) Spec
		ns        *corev1.Namespace // in the namespace cache; nil: none
		cached    runtime.Object    // in the object cache (and the server)
		createErr error             // the server's answer to a create
		want      []string          // verbs of the client's actions
	}{
		{"service account created", DefaultServiceAccount, namespace("ns", corev1.NamespaceActive), nil, nil, []string{"create"}},
		{"service account kept", DefaultServiceAccount, namespace("ns", corev1.NamespaceActive),
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default"}}, nil, nil},
		{"terminating namespace untouched", DefaultServiceAccount, namespace("ns", corev1.NamespaceTerminating), nil, nil, nil},
		{"missing namespace untouched", DefaultServiceAccount, nil, nil, nil, nil},
		{"create racing termination is no error", DefaultServiceAccount, namespace("ns", corev1.NamespaceActive), nil,
			terminatingErr(), []string{"create"}},
		{"create racing another is no error", DefaultServiceAccount, namespace("ns", corev1.NamespaceActive), nil,
			apierrors.NewAlreadyExists(schema.GroupResource{Resource: "serviceaccounts"}, "default"), []string{"create"}},
		{"root CA created", withCA, namespace("ns", corev1.NamespaceActive), nil, nil, []string{"create"}},
		{"root CA kept", withCA, namespace("ns", corev1.NamespaceActive), rootCA(caPEM, described), nil, nil},
		{"root CA data restored", withCA, namespace("ns", corev1.NamespaceActive), rootCA("tampered", described), nil, []string{"update"}},
		{"root CA annotation restored", withCA, namespace("ns", corev1.NamespaceActive), rootCA(caPEM, nil), nil, []string{"update"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			if tt.cached != nil {
				objs = append(objs, tt.cached)
			}
			client := kubefake.NewClientset(objs...)
			if tt.createErr != nil {
				client.PrependReactor("create", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tt.createErr
				})
			}
			spec := tt.spec(client)
			namespaces := informers.NewSharedInformerFactory(client, 0).Core().V1().Namespaces()
			c, err := New(spec, namespaces, clocktesting.NewFakeClock(time.Unix(0, 0)))
			if err != nil {
				t.Fatal(err)
			}
			defer c.queue.ShutDown()
			if tt.ns != nil {
				mustAdd(t, namespaces.Informer().GetIndexer(), tt.ns)
			}
			if tt.cached != nil {
				mustAdd(t, spec.Informer.GetIndexer(), tt.cached)
			}
			client.ClearActions()
			if err := c.sync(context.Background(), "ns"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			var verbs []string
			for _, a := range client.Actions() {
				verbs = append(verbs, a.GetVerb())
			}
			if len(verbs) != len(tt.want) || (len(verbs) > 0 && verbs[0] != tt.want[0]) {
				t.Fatalf("actions %v, want %v", verbs, tt.want)
			}
			checkRootCA(t, client, tt.createErr == nil && len(tt.want) > 0 && spec.Name == RootCAConfigMapName)
		})
	}
}

func withCA(client kubernetes.Interface) Spec { return RootCA(client, []byte(caPEM)) }

func terminatingErr() error {
	err := apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "default", nil)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	return err
}

// checkRootCA checks the ConfigMap the server holds after a write: the CA
// under ca.crt, upstream's annotation, other metadata kept.
func checkRootCA(t *testing.T, client kubernetes.Interface, written bool) {
	t.Helper()
	if !written {
		return
	}
	cm, err := client.CoreV1().ConfigMaps("ns").Get(context.Background(), RootCAConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data[RootCAKey] != caPEM || len(cm.Data) != 1 || cm.Annotations[descriptionAnnotation] != rootCADescription {
		t.Fatalf("root CA configmap: %+v", cm)
	}
}

func mustAdd(t *testing.T, store interface{ Add(any) error }, obj any) {
	t.Helper()
	if err := store.Add(obj); err != nil {
		t.Fatal(err)
	}
}

// TestEnqueue: the namespace of a deleted or changed root CA ConfigMap is
// queued, other ConfigMaps and namespaces not active are not.
func TestEnqueue(t *testing.T) {
	client := kubefake.NewClientset()
	c, err := New(withCA(client), informers.NewSharedInformerFactory(client, 0).Core().V1().Namespaces(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.queue.ShutDown()
	other := rootCA(caPEM, nil)
	other.Name = "other"
	c.enqueueObject(other)
	c.enqueueNamespace(namespace("dying", corev1.NamespaceTerminating))
	c.enqueueObject(cache.DeletedFinalStateUnknown{Key: "ns/" + RootCAConfigMapName, Obj: rootCA(caPEM, nil)})
	c.enqueueNamespace(namespace("new", corev1.NamespaceActive))
	var keys []string
	for c.queue.Len() > 0 {
		k, _ := c.queue.Get()
		keys = append(keys, k)
		c.queue.Done(k)
	}
	if len(keys) != 2 || keys[0] != "ns" || keys[1] != "new" {
		t.Fatalf("queued %v, want [ns new]", keys)
	}
}
