package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestGetClaimAndVolume: a claim is read in its namespace, a
// PersistentVolume cluster-wide; a 404 is NotFound.
func TestGetClaimAndVolume(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/namespaces/ns/persistentvolumeclaims/c":
			_ = json.NewEncoder(w).Encode(v1.PersistentVolumeClaim{TypeMeta: metav1.TypeMeta{Kind: "PersistentVolumeClaim", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv"}})
		case "/api/v1/persistentvolumes/pv":
			_ = json.NewEncoder(w).Encode(v1.PersistentVolume{TypeMeta: metav1.TypeMeta{Kind: "PersistentVolume", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{Name: "pv"}})
		default:
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound})
		}
	}))
	defer srv.Close()
	c, err := New(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if pvc, err := c.GetPersistentVolumeClaim(ctx, "ns", "c"); err != nil || pvc.Spec.VolumeName != "pv" {
		t.Errorf("claim ns/c = %+v, %v", pvc, err)
	}
	if pv, err := c.GetPersistentVolume(ctx, "pv"); err != nil || pv.Name != "pv" {
		t.Errorf("volume pv = %+v, %v", pv, err)
	}
	if _, err := c.GetPersistentVolumeClaim(ctx, "other", "c"); !apierrors.IsNotFound(err) {
		t.Errorf("claim other/c: %v, want NotFound", err)
	}
	if _, err := c.GetPersistentVolume(ctx, "gone"); !apierrors.IsNotFound(err) {
		t.Errorf("volume gone: %v, want NotFound", err)
	}
}
