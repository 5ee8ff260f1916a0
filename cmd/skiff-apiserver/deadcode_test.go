package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// buildTags are the tags make build-apiserver gives the shim (the
// Makefile's BUILD_TAGS).
const buildTags = "grpcnotrace"

// TestLinkerKeepsDeadCodeElimination: skiff-apiserver, built as make
// build-apiserver builds it, reaches no function that calls reflect's
// Method or MethodByName with a computed name (the linker's
// <ReflectMethod> mark), as cmd/skiff's test of the same name checks for
// the agent. Such a function makes the linker keep every exported method
// of every reachable type: the shim had two (html/template through etcd's
// embed and golang.org/x/net/trace; go-cmp's appendTypeName through etcd's
// backend verification), and without them its stripped binary went from
// 80.7 to 58.6 MB, 10 MB less RSS (third_party/README.md,
// shim/etcd/internal/embed/SKIFF.md). The test prints the chain that
// reaches a new one.
func TestLinkerKeepsDeadCodeElimination(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the shim")
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^BUILD_TAGS := ` + buildTags + `$`).Match(makefile) {
		t.Fatalf("the Makefile's BUILD_TAGS is not %q: keep this test's tags and make build's the same", buildTags)
	}
	bin := filepath.Join(t.TempDir(), "skiff-apiserver")
	cmd := exec.Command("go", "build", "-tags", buildTags, "-ldflags", "-dumpdep", "-o", bin, ".")
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
	rev, marked := readDeps(t, deps)
	for _, m := range marked {
		t.Errorf("%s calls reflect's Method/MethodByName with a computed name; reached by:\n%s", m, chainTo(rev, m))
	}
}

// readDeps reads a -dumpdep graph: the callers of each symbol and the
// symbols marked <ReflectMethod> that are not reflect's own.
func readDeps(t *testing.T, path string) (rev map[string][]string, marked []string) {
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
