package volumes

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type fakeTokens struct{ calls []string }

func (f *fakeTokens) Token(pod *v1.Pod, audience string, exp int64) (string, error) {
	f.calls = append(f.calls, string(pod.UID)+"/"+audience)
	return "tok-" + string(pod.UID), nil
}

// TestProjectedServiceAccountToken_G1: the API server's kube-api-access
// volume (a bound token, the kube-root-ca.crt ConfigMap, the namespace)
// becomes token, ca.crt and namespace files.
func TestProjectedServiceAccountToken_G1(t *testing.T) {
	store := storeWith(configMap("kube-root-ca.crt", map[string]string{"ca.crt": "CA"}))
	m := newTestManager(t, store)
	toks := &fakeTokens{}
	m.cfg.Tokens = toks
	exp := int64(3607)
	src := &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
		{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
			Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
			{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
	}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u1"}}
	got, err := m.projectedPayload(pod, "v", src)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"token": "tok-u1", "ca.crt": "CA", "namespace": "default"}
	for path, data := range want {
		if string(got[path].Data) != data {
			t.Errorf("%s = %q, want %q", path, got[path].Data, data)
		}
	}
	if len(toks.calls) != 1 || toks.calls[0] != "u1/" {
		t.Errorf("token calls %q, want one for the pod with the default audience", toks.calls)
	}
}
