package staticpods

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/objects"
)

func cmManifest(name, ns, value string) string {
	s := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
	if ns != "" {
		s += "  namespace: " + ns + "\n"
	}
	return s + "data:\n  key: " + value + "\n"
}

func secretManifest(name, value string) string {
	return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\nstringData:\n  password: " + value + "\n"
}

// waitConfigMapValue polls the store (fed synchronously by the source's loop) until
// the ConfigMap's "key" is want ("" for absent), or fails the test.
func waitConfigMapValue(t *testing.T, store *objects.Store, ns, name, want string) {
	t.Helper()
	deadline := time.Now().Add(failAfter)
	for {
		cm, err := store.ConfigMap(ns, name)
		got := ""
		if err == nil {
			got = cm.Data["key"]
		}
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("configmap %s/%s key = %q (err %v), want %q", ns, name, got, err, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStaticObjects: ConfigMaps and Secrets from their own files and beside
// a pod reach the store, in their namespace, before the sink hears of the
// pods; secrets' stringData is merged into data.
func TestStaticObjects(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "app.yaml"), podManifest("app", "busybox")+"---\n"+cmManifest("app-config", "", "v1")+"---\n"+secretManifest("db", "hunter2"))
	writeAtomic(t, filepath.Join(dir, "other.yaml"), cmManifest("shared", "kube-system", "s"))
	store := objects.NewStore()
	h := start(t, Config{Dir: dir, Objects: store})
	wantNames(t, h.next(), "default/app-node-1")
	// The sink ran after Replace: the objects are there without waiting.
	cm, err := store.ConfigMap("default", "app-config")
	if err != nil || cm.Data["key"] != "v1" || cm.UID == "" {
		t.Fatalf("configmap default/app-config = %v, %v; want key v1 and a UID", cm, err)
	}
	if _, err := store.ConfigMap("kube-system", "shared"); err != nil {
		t.Errorf("configmap kube-system/shared: %v", err)
	}
	sec, err := store.Secret("default", "db")
	if err != nil || string(sec.Data["password"]) != "hunter2" || sec.StringData != nil || sec.Type != "Opaque" {
		t.Fatalf("secret default/db = %+v, %v; want data.password from stringData, type Opaque", sec, err)
	}
	if errs := h.src.Errors(); len(errs) != 0 {
		t.Errorf("Errors() = %v", errs)
	}

	// An edit of an object file reaches the store promptly; the UID stays.
	uid := cm.UID
	writeAtomic(t, filepath.Join(dir, "app.yaml"), podManifest("app", "busybox")+"---\n"+cmManifest("app-config", "", "v2")+"---\n"+secretManifest("db", "hunter2"))
	waitConfigMapValue(t, store, "default", "app-config", "v2")
	if cm, _ := store.ConfigMap("default", "app-config"); cm.UID != uid {
		t.Errorf("UID after edit = %s, want %s (stable per name)", cm.UID, uid)
	}
	if err := os.Remove(filepath.Join(dir, "other.yaml")); err != nil {
		t.Fatal(err)
	}
	waitConfigMapValue(t, store, "kube-system", "shared", "")
}

// TestStaticObjectErrors: a bad object document rejects its file (pods
// included) with an error naming the file, the object and the field, and
// disturbs no other file's objects; duplicates name both files.
func TestStaticObjectErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "a-good.yaml")
	writeAtomic(t, good, cmManifest("cfg", "", "ok"))
	store := objects.NewStore()
	h := start(t, Config{Dir: dir, Objects: store})
	h.next()
	waitConfigMapValue(t, store, "default", "cfg", "ok")

	tests := []struct {
		name, file, content, wantErr string
	}{
		{
			name: "invalid key", file: "b-bad.yaml",
			content: podManifest("p", "busybox") + "---\n" + strings.Replace(cmManifest("x", "", "v"), "key:", "bad/key:", 1),
			wantErr: `b-bad.yaml: configmap "default/x": data[bad/key]: Invalid value: "bad/key"`,
		},
		{
			name: "duplicate across files", file: "c-dup.yaml",
			content: cmManifest("cfg", "", "other"),
			wantErr: "c-dup.yaml: configmap default/cfg is already defined by " + good + " (the first file in name order wins)",
		},
		{
			name: "duplicate in one file", file: "d-dup.yaml",
			content: secretManifest("s", "a") + "---\n" + secretManifest("s", "b"),
			wantErr: "d-dup.yaml: secret default/s is defined twice in this file",
		},
		{
			name: "same name, other namespace is no duplicate", file: "e-ns.yaml",
			content: cmManifest("cfg", "web", "w"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			writeAtomic(t, path, tc.content)
			deadline := time.Now().Add(failAfter)
			for {
				err := h.src.Errors()[path]
				if tc.wantErr == "" && err == nil {
					if _, gerr := store.ConfigMap("web", "cfg"); gerr == nil {
						break
					}
				}
				if tc.wantErr != "" && err != nil {
					if !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("Errors()[%s] = %v, want %q", tc.file, err, tc.wantErr)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("Errors()[%s] = %v, want %q", tc.file, err, tc.wantErr)
				}
				time.Sleep(5 * time.Millisecond)
			}
			// The good file's object is untouched.
			if cm, err := store.ConfigMap("default", "cfg"); err != nil || cm.Data["key"] != "ok" {
				t.Errorf("default/cfg = %v, %v; want the first file's", cm, err)
			}
		})
	}
	if _, err := store.ConfigMap("default", "x"); err == nil {
		t.Errorf("configmap of a rejected file is in the store")
	}
	for _, pods := range drain(h) {
		for _, p := range pods {
			if strings.HasPrefix(p.Name, "p-") {
				t.Errorf("pod %s of a rejected file was delivered", p.Name)
			}
		}
	}
}

// drain returns the sink calls made so far.
func drain(h *harness) [][]*v1.Pod {
	var out [][]*v1.Pod
	for {
		select {
		case pods := <-h.calls:
			out = append(out, pods)
		default:
			return out
		}
	}
}

// TestExamplesAreValid: every file of examples/manifests is accepted by the
// source, pods and objects alike.
func TestExamplesAreValid(t *testing.T) {
	dir := filepath.Join("..", "examples", "manifests")
	store := objects.NewStore()
	h := start(t, Config{Dir: dir, Objects: store})
	pods := h.next()
	if errs := h.src.Errors(); len(errs) != 0 {
		t.Fatalf("Errors() = %v", errs)
	}
	if len(pods) < 2 {
		t.Errorf("pods = %v, want the examples' pods", podNames(pods))
	}
	if _, err := store.ConfigMap("default", "greeter-config"); err != nil {
		t.Errorf("example ConfigMap: %v", err)
	}
	if _, err := store.Secret("default", "greeter-secret"); err != nil {
		t.Errorf("example Secret: %v", err)
	}
}
