package crds

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/cmd/skiff-apiserver/internal/servertest"
	"github.com/skiffnode/skiff/shim/server"
)

// startServer runs the shim with Server as its extensions on a free port
// and returns the admin client's configuration once it serves.
func startServer(t *testing.T) *rest.Config {
	t.Helper()
	rc, _ := servertest.Start(context.Background(), t, server.Options{DataDir: t.TempDir(), BindAddress: "127.0.0.1", Extensions: Server})
	return rc
}

// widgets is a namespaced CRD with a schema, a status subresource and a
// printer column.
func widgets() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ShortNames: []string{"wd"}},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size": {Type: "integer", Minimum: ptr.To(1.0)},
						}},
						"status": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
					},
				}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Size", Type: "integer", JSONPath: ".spec.size"}},
			}},
		},
	}
}

func widget(name string, size any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"size": size},
	}}
}

// TestCustomResources: a CRD created through the shim is established,
// listed in the shim's discovery, and serves its custom resources with
// its schema (a wrong field is refused naming it); deleting the CRD
// deletes them.
func TestCustomResources(t *testing.T) {
	rc := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ext := apiextensionsclient.NewForConfigOrDie(rc)
	crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, widgets(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		crd, err = ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("CRD never established: %v (%+v)", err, crd.Status.Conditions)
	}

	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	// The shim's /apis lists the group (aggregated discovery, as kubectl
	// asks for it).
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		_, lists, err := discovery.NewDiscoveryClientForConfigOrDie(rc).ServerGroupsAndResources()
		if err != nil {
			return false, nil //nolint:nilerr // the group may not be listed yet
		}
		for _, l := range lists {
			if l.GroupVersion == "example.com/v1" {
				for _, r := range l.APIResources {
					if r.Name == "widgets" && r.Namespaced && strings.Join(r.ShortNames, ",") == "wd" {
						return true, nil
					}
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("discovery never listed example.com/v1 widgets: %v", err)
	}
	// And in the legacy form clients before aggregated discovery ask for.
	raw, err := discovery.NewDiscoveryClientForConfigOrDie(rc).RESTClient().Get().AbsPath("/apis").SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var legacy metav1.APIGroupList
	if err := json.Unmarshal(raw, &legacy); err != nil {
		t.Fatalf("/apis: %v\n%s", err, raw)
	}
	groups := map[string]string{}
	for _, g := range legacy.Groups {
		groups[g.Name] = g.PreferredVersion.GroupVersion
	}
	if legacy.Kind != "APIGroupList" || groups["example.com"] != "example.com/v1" || groups["apiextensions.k8s.io"] != "apiextensions.k8s.io/v1" || groups["apps"] != "apps/v1" {
		t.Errorf("legacy /apis: %s\nwant apps, apiextensions.k8s.io and example.com, each with its v1 preferred", raw)
	}

	dyn := dynamic.NewForConfigOrDie(rc).Resource(gvr).Namespace("default")
	if _, err := dyn.Create(ctx, widget("a", int64(3)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := dyn.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 3 {
		t.Errorf("spec.size %d, want 3", size)
	}
	_, err = dyn.Create(ctx, widget("b", int64(0)), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.size") {
		t.Errorf("size 0: %v, want invalid naming spec.size", err)
	}

	if err := ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("CRD never deleted: %v", err)
	}
	if _, err := dyn.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("widget after its CRD's deletion: %v, want not found", err)
	}
}
