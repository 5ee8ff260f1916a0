package server

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
)

// testOpenAPI reads /openapi/v2 and the /openapi/v3 documents, the first
// requests concurrently (they build the lazy specs), and checks that they
// describe the served kinds.
func testOpenAPI(ctx context.Context, t *testing.T, client kubernetes.Interface) {
	get := func(path string, into any) error {
		body, err := client.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		if err != nil {
			return err
		}
		return json.Unmarshal(body, into)
	}
	// Two readers of each at once: the first requests race to build.
	var v2 [2]struct{ Definitions map[string]json.RawMessage }
	var v3 [2]struct{ Paths map[string]json.RawMessage }
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() { errs <- get("/openapi/v2", &v2[i]) })
		wg.Go(func() { errs <- get("/openapi/v3", &v3[i]) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, def := range []string{"io.k8s.api.core.v1.Pod", "io.k8s.api.apps.v1.Deployment", "io.k8s.api.coordination.v1.Lease"} {
		if _, ok := v2[1].Definitions[def]; !ok {
			t.Errorf("/openapi/v2 has no definition %s (%d definitions)", def, len(v2[1].Definitions))
		}
	}
	for _, gv := range []string{"api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1"} {
		if _, ok := v3[1].Paths[gv]; !ok {
			t.Errorf("/openapi/v3 lists no %s: %v", gv, v3[1].Paths)
		}
	}
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := get("/openapi/v3/api/v1", &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Components.Schemas["io.k8s.api.core.v1.Pod"]; !ok {
		t.Errorf("/openapi/v3/api/v1 has no Pod schema (%d schemas)", len(doc.Components.Schemas))
	}
}
