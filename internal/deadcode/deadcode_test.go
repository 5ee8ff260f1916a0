package deadcode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMarked: a <ReflectMethod> function outside reflect is reported with
// its chain from the root; reflect's own and unreachable lines are not.
func TestMarked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deps")
	dump := strings.Join([]string{
		"_ -> main.main",
		"main.main -> pkg.Render",
		"pkg.Render -> text/template.(*state).evalField",
		"text/template.(*state).evalField <ReflectMethod> -> reflect.Value.MethodByName",
		"reflect.Value.MethodByName <ReflectMethod> -> reflect.Value.Method",
		"not a graph line",
	}, "\n")
	if err := os.WriteFile(path, []byte(dump), 0o644); err != nil {
		t.Fatal(err)
	}
	got := Marked(t, path)
	if len(got) != 1 {
		t.Fatalf("marked %q, want one", got)
	}
	want := "text/template.(*state).evalField calls reflect's Method/MethodByName with a computed name; reached by:\n" +
		"  _\n  main.main\n  pkg.Render\n  text/template.(*state).evalField\n"
	if got[0] != want {
		t.Errorf("got\n%s\nwant\n%s", got[0], want)
	}
	if err := os.WriteFile(path, []byte("_ -> main.main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Marked(t, path); len(got) != 0 {
		t.Errorf("a clean graph: %q", got)
	}
}
