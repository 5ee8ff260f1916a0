package manifests

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

const minimalPod = `apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
  - name: c
    image: busybox
`

func podYAML(name string) string { return strings.Replace(minimalPod, "%s", name, 1) }

// TestDecode covers the accepted formats and the strictness rules (A.1).
func TestDecode(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantNames []string
		wantErr   []string // substrings of the error, all required
	}{
		{name: "single YAML", in: podYAML("a"), wantNames: []string{"a"}},
		{name: "JSON", in: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"x"}]}}`, wantNames: []string{"j"}},
		{name: "JSON with surrounding whitespace", in: "\n  {\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"j\"}}\n\n", wantNames: []string{"j"}},
		{
			name:      "multi-doc with empty and comment-only documents skipped",
			in:        "---\n" + podYAML("a") + "---\n# only a comment\n---\n\n---\n" + podYAML("b") + "---\n",
			wantNames: []string{"a", "b"},
		},
		{name: "YAML flow document", in: "apiVersion: v1\nkind: Pod\nmetadata: {name: f}\n", wantNames: []string{"f"}},
		// Like the kubelet (utilyaml.ToJSON), input starting with "{" is JSON.
		{name: "input starting with a brace is JSON", in: `{apiVersion: v1, kind: Pod}`, wantErr: []string{"not a Pod object"}},
		{name: "empty input", in: " \n\t", wantErr: []string{"empty manifest"}},
		{name: "only comments", in: "# nothing\n---\n# here\n", wantErr: []string{"no documents"}},
		{name: "JSON trailing garbage", in: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"}} trailing`, wantErr: []string{"invalid character"}},
		{name: "two JSON objects", in: `{"apiVersion":"v1","kind":"Pod"}{"apiVersion":"v1","kind":"Pod"}`, wantErr: []string{"after top-level value"}},
		{name: "wrong kind", in: "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", wantErr: []string{`kind: Unsupported value: "Service"`}},
		{name: "wrong apiVersion", in: "apiVersion: apps/v1\nkind: Pod\n", wantErr: []string{`apiVersion: Unsupported value: "apps/v1"`}},
		{name: "missing apiVersion", in: "kind: Pod\nmetadata: {name: a}\n", wantErr: []string{"apiVersion: Required value"}},
		{name: "missing kind", in: "apiVersion: v1\nmetadata: {name: a}\n", wantErr: []string{"kind: Required value"}},
		{name: "PodList is not a Pod", in: `{"apiVersion":"v1","kind":"PodList","items":[]}`, wantErr: []string{`"PodList"`}},
		{
			name:    "unknown field names its path",
			in:      strings.Replace(podYAML("a"), "image: busybox", "imagee: busybox", 1),
			wantErr: []string{`unknown field "spec.containers[0].imagee"`},
		},
		{
			name:    "field names are case-sensitive",
			in:      strings.Replace(podYAML("a"), "image: busybox", "Image: busybox", 1),
			wantErr: []string{`unknown field "spec.containers[0].Image"`},
		},
		{
			name:    "duplicate YAML key",
			in:      strings.Replace(podYAML("a"), "  name: a\n", "  name: a\n  name: b\n", 1),
			wantErr: []string{"invalid YAML", `"name" already set`},
		},
		{
			name:    "duplicate JSON key",
			in:      `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","name":"b"}}`,
			wantErr: []string{`duplicate field "metadata.name"`},
		},
		{name: "wrong type", in: "apiVersion: v1\nkind: Pod\nspec:\n  containers: nope\n", wantErr: []string{"decoding Pod"}},
		{
			name:    "error names the document",
			in:      podYAML("a") + "---\napiVersion: v1\nkind: Deployment\n",
			wantErr: []string{"document 2: kind: Unsupported value"},
		},
		{name: "bad separator line", in: podYAML("a") + "--- junk\n" + podYAML("b"), wantErr: []string{`document 2: line 9: content after the document separator is not supported: "--- junk"`}},
		{name: "dashes that are not a separator", in: podYAML("a") + "----\n", wantErr: []string{"invalid YAML"}},
		{name: "CRLF line endings", in: strings.ReplaceAll(podYAML("a")+"---\n"+podYAML("b"), "\n", "\r\n"), wantNames: []string{"a", "b"}},
		{name: "scalar document", in: "just a string\n", wantErr: []string{"not a Pod object"}},
		{name: "list document", in: "- a\n- b\n", wantErr: []string{"not a Pod object"}},
		{name: "binary garbage", in: "\x00\x01\x02\xff\xfe{{{[[[", wantErr: []string{""}},
		{name: "tabs are invalid YAML", in: "apiVersion: v1\nkind: Pod\nmetadata:\n\tname: a\n", wantErr: []string{"invalid YAML"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, err := Decode([]byte(tt.in))
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("Decode() = %d pods, want error containing %q", len(pods), tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("Decode() error = %q, want it to contain %q", err, w)
					}
				}
				if pods != nil {
					t.Errorf("Decode() returned pods with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode() error = %v", err)
			}
			var names []string
			for _, p := range pods {
				names = append(names, p.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.wantNames, ",") {
				t.Errorf("Decode() names = %v, want %v", names, tt.wantNames)
			}
		})
	}
}

// TestDecodeKeepsUnterminatedLastLine guards against the apimachinery
// YAMLReader bug that drops a final line without newline ending exactly at a
// 4 KiB boundary: the last field must not vanish silently.
func TestDecodeKeepsUnterminatedLastLine(t *testing.T) {
	head := podYAML("a") + "  hostNetwork: true"
	pad := "# " + strings.Repeat("p", 4096-len(head)-3) + "\n"
	in := pad + head
	if len(in) != 4096 {
		t.Fatalf("test input is %d bytes, want 4096", len(in))
	}
	pods, err := Decode([]byte(in))
	if err != nil {
		t.Fatalf("Decode() error = %v", err)
	}
	if !pods[0].Spec.HostNetwork {
		t.Errorf("spec.hostNetwork lost: the unterminated last line was dropped")
	}
}

// TestDecodeDropsStatus: the kubelet ignores status in manifests.
func TestDecodeDropsStatus(t *testing.T) {
	data, err := os.ReadFile("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pods, err := Decode(data)
	if err != nil {
		t.Fatalf("Decode(full.yaml) error = %v", err)
	}
	if got := pods[0].Status.Phase; got != "" {
		t.Errorf("status.phase = %q, want it dropped", got)
	}
}

// TestDecodeHostile feeds input built to exhaust time or memory; Decode must
// return (an error or pods) without large allocations. The elapsed time is
// logged, not asserted: tests assert behaviour, benchmarks measure speed.
func TestDecodeHostile(t *testing.T) {
	laughs := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		laughs += n + ": &" + n + " [*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + "]\n"
		prev = n
	}
	tests := []struct {
		name    string
		in      string
		wantErr bool
	}{
		{name: "billion laughs", in: "apiVersion: v1\nkind: Pod\n" + laughs, wantErr: true},
		{name: "deeply nested YAML flow", in: strings.Repeat("[", 200000) + strings.Repeat("]", 200000), wantErr: true},
		{name: "deeply nested YAML block", in: nestedBlockYAML(5000), wantErr: true},
		{name: "deeply nested JSON", in: "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"labels\":" + strings.Repeat("{\"a\":", 100000) + "1" + strings.Repeat("}", 100000) + "}}", wantErr: true},
		{name: "huge label value", in: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  labels:\n    a: " + strings.Repeat("x", 8<<20) + "\n"},
		{name: "many documents", in: strings.Repeat("---\n# c\n", 20000) + podYAML("a")},
		{name: "long line without newline", in: strings.Repeat("x", 4<<20), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := Decode([]byte(tt.in))
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			t.Logf("err=%.200v elapsed=%v alloc=%dMiB", err, elapsed, (after.TotalAlloc-before.TotalAlloc)>>20)
			if (err != nil) != tt.wantErr {
				t.Errorf("Decode() error = %v, wantErr %v", err, tt.wantErr)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<30 {
				t.Errorf("Decode() allocated %d MiB", alloc>>20)
			}
		})
	}
}

func nestedBlockYAML(depth int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n")
	for i := range depth {
		b.WriteString(strings.Repeat(" ", 4+i))
		b.WriteString("a:\n")
	}
	return b.String()
}
