package network

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMigrateIPAM: the IP records an earlier skiff left in host-local's
// default directory are copied once into the new one (a running pod's IP
// is not handed out again); an existing new directory is left alone; with
// nothing to copy the directory is just created.
func TestMigrateIPAM(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "old", "skiff"), filepath.Join(dir, "new", "skiff")
	if err := os.MkdirAll(from, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"10.88.0.5": "c1\neth0", "last_reserved_ip.0": "10.88.0.5", "lock": ""} {
		if err := os.WriteFile(filepath.Join(from, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := migrateIPAM(from, to); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(to, "10.88.0.5")); err != nil || string(got) != "c1\neth0" {
		t.Errorf("copied record: %q, %v", got, err)
	}
	// Later starts keep the new directory as it is.
	if err := os.Remove(filepath.Join(to, "10.88.0.5")); err != nil {
		t.Fatal(err)
	}
	if err := migrateIPAM(from, to); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(to, "10.88.0.5")); err == nil {
		t.Error("a second start copied the old records again")
	}
	fresh := filepath.Join(dir, "fresh", "skiff")
	if err := migrateIPAM(filepath.Join(dir, "absent"), fresh); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(fresh); err != nil || !st.IsDir() {
		t.Errorf("without old records: %v", err)
	}
	if _, err := os.Stat(fresh + ".tmp"); err == nil {
		t.Error("temporary directory left")
	}
}

// TestEnsureWritable: a writable directory is created if missing and not
// mounted over.
func TestEnsureWritable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "var", "lib", "cni")
	mounted, err := ensureWritable(dir, filepath.Join(t.TempDir(), "cache"))
	if err != nil || mounted {
		t.Fatalf("ensureWritable = %t, %v; want created, not mounted", mounted, err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Errorf("%s not created: %v", dir, err)
	}
}
