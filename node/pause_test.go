package node

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffnode/skiff/internal/pause"
)

// choosePause's order: --pause-binary, the built-in pause, skiff-pause
// beside skiff, skiff itself if static, else an error (issue 12: a plain
// `go build` skiff, dynamically linked and alone, must still run pods).
func TestChoosePause(t *testing.T) {
	builtin, _ := pause.Executable("amd64")
	static := "/bin/busybox" // busybox-static, installed by test/setup.sh
	if _, err := os.Stat(static); err != nil {
		t.Skip("needs a static /bin/busybox")
	}
	dynamic := "/bin/ls"
	tests := []struct {
		name, flag, goarch string
		exe                string
		sibling            bool
		wantPath           string // "" with wantBuiltin or wantErr
		wantBuiltin        bool
		wantErr            string
	}{
		{name: "flag wins", flag: static, goarch: "amd64", exe: dynamic, sibling: true, wantPath: static},
		{name: "missing flag", flag: "/nonexistent/pause", goarch: "amd64", exe: dynamic, wantErr: "--pause-binary"},
		{name: "built-in before skiff-pause", goarch: "amd64", exe: dynamic, sibling: true, wantBuiltin: true},
		{name: "built-in for a dynamic skiff alone", goarch: "amd64", exe: dynamic, wantBuiltin: true},
		{name: "skiff-pause without built-in", goarch: "riscv64", exe: dynamic, sibling: true, wantPath: "skiff-pause"},
		{name: "static skiff itself", goarch: "riscv64", exe: static, wantPath: static},
		{name: "dynamic skiff alone", goarch: "riscv64", exe: dynamic, wantErr: "dynamically linked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			exe := filepath.Join(dir, "skiff")
			if err := os.Symlink(tt.exe, exe); err != nil {
				t.Fatal(err)
			}
			wantPath := tt.wantPath
			if tt.sibling {
				if err := os.WriteFile(filepath.Join(dir, "skiff-pause"), []byte("x"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			switch wantPath {
			case "skiff-pause":
				wantPath = filepath.Join(dir, "skiff-pause")
			case tt.exe:
				if tt.flag == "" {
					wantPath = exe
				}
			}
			src, err := choosePause(tt.flag, tt.goarch, exe, slog.New(slog.DiscardHandler))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantBuiltin {
				if src.path != "" || !bytes.Equal(src.data, builtin) {
					t.Fatalf("got %v, want the built-in pause", src)
				}
				return
			}
			if src.path != wantPath {
				t.Fatalf("got %v, want %s", src, wantPath)
			}
		})
	}
}
