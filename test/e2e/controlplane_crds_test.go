package e2e

import (
	"strings"
	"testing"
	"time"
)

// widgetsCRD is a namespaced CustomResourceDefinition with a schema, a
// status subresource, a short name and a printer column.
const widgetsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1}
`

// TestControlPlaneCustomResources_Issue36: against `skiff agent
// --control-plane`, kubectl applies a CustomResourceDefinition, which
// becomes Established and listed by kubectl api-resources; its custom
// resources are applied, listed with the printer column (and, as
// upstream, no AGE column besides the CRD's own), found by the short
// name, and refused with the field named when the schema says no;
// deleting the CRD removes its resources and its API.
func TestControlPlaneCustomResources_Issue36(t *testing.T) {
	_, kc := startControlPlane(t)

	cpKubectl(t, kc, widgetsCRD, "apply", "-f", "-")
	t.Cleanup(func() { _, _ = cpKubectlErr(kc, "", "delete", "crd/widgets.example.com", "--ignore-not-found") })
	cpKubectl(t, kc, "", "wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=1m")
	// Discovery follows the CRD a moment later (upstream's discovery
	// controller has its own queue).
	eventually(t, time.Minute, func() (bool, string) {
		out, _ := cpKubectlErr(kc, "", "api-resources", "--api-group=example.com", "--no-headers")
		return strings.Join(strings.Fields(out), " ") == "widgets wd example.com/v1 true Widget", "kubectl api-resources --api-group=example.com = " + out
	})

	cpKubectl(t, kc, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: small}\nspec: {size: 3}\n", "apply", "-f", "-")
	out := cpKubectl(t, kc, "", "get", "widgets")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME SIZE" ||
		strings.Join(strings.Fields(lines[1]), " ") != "small 3" {
		t.Errorf("kubectl get widgets =\n%s", out)
	}
	// A second apply of a changed object patches it (kubectl's
	// last-applied annotation on a custom resource).
	cpKubectl(t, kc, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: small}\nspec: {size: 4}\n", "apply", "-f", "-")
	if out := cpKubectl(t, kc, "", "get", "wd", "small", "-o", "jsonpath={.spec.size}"); out != "4" {
		t.Errorf("spec.size after the second apply = %q, want 4", out)
	}
	out, err := cpKubectlErr(kc, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: empty}\nspec: {size: 0}\n", "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "spec.size") {
		t.Errorf("kubectl apply of a widget of size 0: %v\n%s\nwant it refused naming spec.size", err, out)
	}

	cpKubectl(t, kc, "", "delete", "crd/widgets.example.com", "--timeout=1m")
	eventually(t, time.Minute, func() (bool, string) {
		out, err := cpKubectlErr(kc, "", "get", "--raw", "/apis/example.com/v1/namespaces/default/widgets")
		return err != nil && strings.Contains(out, "NotFound"), "GET widgets after the CRD's deletion:\n" + out
	})
	eventually(t, time.Minute, func() (bool, string) {
		out, err := cpKubectlErr(kc, "", "api-resources", "--api-group=example.com", "--no-headers")
		return err == nil && out == "", "kubectl api-resources --api-group=example.com after the CRD's deletion = " + out
	})
}
