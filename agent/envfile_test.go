package agent

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestParseEnvFile: upstream's ParseEnv format: single-quoted values, which
// may span lines; comments and blank lines; whitespace after '=' makes the
// value empty; format errors.
func TestParseEnvFile(t *testing.T) {
	const good = "# config\n\nA='1'\n  B='two words' # note\nC='line1\nline2'\nD= 'ignored'\n"
	for _, tc := range []struct {
		name, content, key, want, err string
	}{
		{"simple", good, "A", "1", ""},
		{"indented, comment after", good, "B", "two words", ""},
		{"multi-line", good, "C", "line1\nline2", ""},
		{"space after =", good, "D", "", ""},
		{"missing", good, "E", "", ""},
		{"unquoted", "A=1\n", "A", "", "value must be enclosed in single quotes"},
		{"space before =", "A ='1'\n", "A", "", "whitespace before '='"},
		{"no =", "A\n", "A", "", "missing '='"},
		{"unclosed", "A='1\n", "A", "", "unclosed single quote"},
		{"content after quote", "A='1' x\n", "A", "", "unexpected content after closing quote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "env")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := parseEnvFile(path, tc.key)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestFileKeyValue: the kubelet's errors for a missing volume, an
// unparsable file and a missing key; an optional missing key is skipped;
// the path cannot leave the volume.
func TestFileKeyValue(t *testing.T) {
	vol := t.TempDir()
	if err := os.WriteFile(filepath.Join(vol, "env"), []byte("K='v'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "bad"), []byte("K=v\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(vol, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{"data": vol}
	ref := func(vol, path, key string, optional bool) *v1.FileKeySelector {
		return &v1.FileKeySelector{VolumeName: vol, Path: path, Key: key, Optional: ptr.To(optional)}
	}
	if v, ok, err := fileKeyValue(ref("data", "env", "K", false), paths); v != "v" || !ok || err != nil {
		t.Errorf("K: %q %t %v", v, ok, err)
	}
	if _, ok, err := fileKeyValue(ref("data", "env", "X", true), paths); ok || err != nil {
		t.Errorf("optional missing key: %t %v, want skipped", ok, err)
	}
	for _, tc := range []struct {
		ref  *v1.FileKeySelector
		want string
	}{
		{ref("other", "env", "K", false), `cannot find the volume "other" referenced by FileKeyRef`},
		{ref("data", "bad", "K", false), "couldn't parse env file"},
		{ref("data", "env", "X", false), `environment variable key "X" not found in file "` + filepath.Join(vol, "env") + `"`},
		{ref("data", "../../etc/passwd", "root", false), "couldn't parse env file"},
		{ref("data", "fifo", "K", false), "couldn't parse env file"}, // never opened: it would block
	} {
		if _, _, err := fileKeyValue(tc.ref, paths); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.ref, err, tc.want)
		}
	}
}
