// Package deadcode checks, for skiff's tests, that a binary keeps the Go
// linker's method dead-code elimination: no function reachable from main
// calls reflect's Method or MethodByName with a computed name (the
// linker's <ReflectMethod> mark), which would make the linker keep every
// exported method of every reachable type (see
// docs/decisions/0073-built-grpcnotrace.md). cmd/skiff and cmd/skiff-apiserver use it.
package deadcode

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Check builds the main package in the current directory as makefile
// (the repository's Makefile) builds it, with tags (which must be the
// Makefile's BUILD_TAGS), asks the linker for its dependency graph
// (-dumpdep), and reports every reachable <ReflectMethod> function with a
// shortest chain of callers from the root. Slow (a full build): skipped
// with -short.
func Check(t *testing.T, makefile, tags string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	mk, err := os.ReadFile(makefile)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^BUILD_TAGS := ` + regexp.QuoteMeta(tags) + `$`).Match(mk) {
		t.Fatalf("the Makefile's BUILD_TAGS is not %q: keep this test's tags and the Makefile's the same", tags)
	}
	bin := filepath.Join(t.TempDir(), "bin")
	cmd := exec.Command("go", "build", "-tags", tags, "-ldflags", "-dumpdep", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	deps := filepath.Join(t.TempDir(), "deps")
	out, err := os.Create(deps)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = out // the linker writes its dependency graph there
	err = cmd.Run()
	_ = out.Close()
	if err != nil {
		data, _ := os.ReadFile(deps)
		t.Fatalf("go build: %v\n%.2000s", err, data)
	}
	for _, m := range Marked(t, deps) {
		t.Errorf("%s", m)
	}
}

// Marked reads a -dumpdep graph and describes each <ReflectMethod>
// function outside reflect with the chain of callers that reaches it.
func Marked(t testing.TB, path string) []string {
	t.Helper()
	rev, marked := readDeps(t, path)
	var out []string
	for _, m := range marked {
		out = append(out, m+" calls reflect's Method/MethodByName with a computed name; reached by:\n"+chainTo(rev, m))
	}
	return out
}

// readDeps reads a -dumpdep graph: the callers of each symbol and the
// symbols marked <ReflectMethod> that are not reflect's own.
func readDeps(t testing.TB, path string) (rev map[string][]string, marked []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rev = map[string][]string{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		from, to, ok := strings.Cut(sc.Text(), " -> ")
		if !ok {
			continue
		}
		name, attrs, _ := strings.Cut(from, " ")
		to, _, _ = strings.Cut(to, " ")
		rev[to] = append(rev[to], name)
		if strings.Contains(attrs, "<ReflectMethod>") && !strings.HasPrefix(name, "reflect.") && !seen[name] {
			seen[name] = true
			marked = append(marked, name)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rev, marked
}

// chainTo is a shortest chain of callers from the program's root ("_")
// to sym, one per line.
func chainTo(rev map[string][]string, sym string) string {
	next := map[string]string{sym: ""}
	queue := []string{sym}
	for len(queue) > 0 && next["_"] == "" {
		n := queue[0]
		queue = queue[1:]
		for _, c := range rev[n] {
			if _, ok := next[c]; !ok {
				next[c] = n
				queue = append(queue, c)
			}
		}
	}
	var b strings.Builder
	for n := "_"; n != ""; n = next[n] {
		b.WriteString("  " + n + "\n")
		if n == sym {
			break
		}
	}
	return b.String()
}
