package imagebuild

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestWriteArchiveIsReproducibleAndComplete(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "bin")
	if err := os.WriteFile(host, []byte("#!binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := []File{
		{Path: "pause", Mode: 0o755, HostPath: host},
		{Path: "tmp", Mode: 0o1777},
		{Path: "bin/sh", Linkname: "/pause"},
		{Path: "etc/passwd", Data: []byte("root:x:0:0::/:/bin/sh\n")},
	}
	cfg := Config{Entrypoint: []string{"/pause"}, StopSignal: "SIGINT", Env: []string{"A=b"}}
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	for _, p := range []string{a, b} {
		if err := WriteArchive(p, "skiff.local/pause:test", files, cfg); err != nil {
			t.Fatal(err)
		}
	}
	imgA, err := tarball.ImageFromPath(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	imgB, err := tarball.ImageFromPath(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	da, _ := imgA.Digest()
	db, _ := imgB.Digest()
	if da != db {
		t.Errorf("same inputs, different digests %s %s", da, db)
	}
	cf, err := imgA.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.StopSignal != "SIGINT" || cf.Config.Entrypoint[0] != "/pause" || cf.OS != "linux" {
		t.Errorf("config %+v", cf.Config)
	}
	layers, _ := imgA.Layers()
	if len(layers) != 1 {
		t.Fatalf("%d layers", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := map[string]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h.Typeflag
	}
	want := map[string]byte{"pause": tar.TypeReg, "tmp/": tar.TypeDir, "bin/sh": tar.TypeSymlink, "etc/passwd": tar.TypeReg, "bin/": tar.TypeDir, "etc/": tar.TypeDir}
	for name, typ := range want {
		if got[name] != typ {
			t.Errorf("entry %s type %c, want %c (all: %v)", name, got[name], typ, got)
		}
	}
}
