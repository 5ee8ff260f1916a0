package staticpods

import (
	"path/filepath"
	"testing"

	"github.com/skiffnode/skiff/internal/objects"
)

// TestShapesAreValid: skiff accepts every real-world pod shape of
// examples/shapes unchanged (issue 14), with the ConfigMaps and Secrets
// written beside them.
func TestShapesAreValid(t *testing.T) {
	dir := filepath.Join("..", "examples", "shapes")
	store := objects.NewStore()
	h := start(t, Config{Dir: dir, Objects: store})
	pods := h.next()
	if errs := h.src.Errors(); len(errs) != 0 {
		t.Fatalf("Errors() = %v", errs)
	}
	if len(pods) != 13 {
		t.Errorf("pods = %v, want the 13 shapes", podNames(pods))
	}
	for _, name := range []string{"web-content", "db-config", "app-settings"} {
		if _, err := store.ConfigMap("default", name); err != nil {
			t.Errorf("ConfigMap %s: %v", name, err)
		}
	}
	if _, err := store.Secret("default", "db-credentials"); err != nil {
		t.Errorf("Secret db-credentials: %v", err)
	}
}
