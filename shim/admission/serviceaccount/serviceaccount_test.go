package serviceaccount

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/ptr"
)

// accounts is a Lookup of fixed service accounts ("ns/name"), counting
// its calls.
type accounts struct {
	m     map[string]*corev1.ServiceAccount
	calls int
}

func (a *accounts) lookup(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	a.calls++
	if sa, ok := a.m[ns+"/"+name]; ok {
		return sa, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
}

func testPlugin(cached, live *accounts) *Plugin {
	p := New(cached.lookup, live.lookup)
	p.retryInterval = func() time.Duration { return 0 }
	p.generateName = func(prefix string) string { return prefix + "x1y2z" }
	return p
}

func admit(t *testing.T, p *Plugin, pod *corev1.Pod) error {
	t.Helper()
	a := admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), pod.Namespace, pod.Name,
		corev1.Resource("pods").WithVersion("v1"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{})
	return p.Admit(context.Background(), a, nil)
}

func newPod(mod func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "a"}, {Name: "b"}},
	}}
	if mod != nil {
		mod(pod)
	}
	return pod
}

// TestAdmit: upstream's behaviour on pod creation.
func TestAdmit(t *testing.T) {
	sa := func(name string, mod func(*corev1.ServiceAccount)) *corev1.ServiceAccount {
		s := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		if mod != nil {
			mod(s)
		}
		return s
	}
	cached := &accounts{m: map[string]*corev1.ServiceAccount{
		"ns/default": sa("default", nil),
		"ns/builder": sa("builder", func(s *corev1.ServiceAccount) {
			s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
		}),
		"ns/quiet": sa("quiet", func(s *corev1.ServiceAccount) { s.AutomountServiceAccountToken = ptr.To(false) }),
	}}
	for _, tc := range []struct {
		name       string
		pod        *corev1.Pod
		wantSA     string
		wantVolume bool
		wantPull   []string
		wantErr    string
	}{
		{name: "defaulted and mounted", pod: newPod(nil), wantSA: "default", wantVolume: true},
		{name: "the account's pull secrets", pod: newPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "builder" }),
			wantSA: "builder", wantVolume: true, wantPull: []string{"regcred"}},
		{name: "the pod's pull secrets win", pod: newPod(func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "builder"
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "mine"}}
		}), wantSA: "builder", wantVolume: true, wantPull: []string{"mine"}},
		{name: "the account opts out", pod: newPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "quiet" }), wantSA: "quiet"},
		{name: "the pod opts back in", pod: newPod(func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "quiet"
			p.Spec.AutomountServiceAccountToken = ptr.To(true)
		}), wantSA: "quiet", wantVolume: true},
		{name: "the deprecated field names it", pod: newPod(func(p *corev1.Pod) { p.Spec.DeprecatedServiceAccount = "builder" }),
			wantSA: "builder", wantVolume: true, wantPull: []string{"regcred"}},
		{name: "the pod opts out", pod: newPod(func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr.To(false) }), wantSA: "default"},
		{name: "a missing account", pod: newPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "ghost" }),
			wantErr: `error looking up service account ns/ghost: serviceaccount "ghost" not found`},
		{name: "a mirror pod", pod: newPod(func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} })},
	} {
		err := admit(t, testPlugin(cached, &accounts{}), tc.pod)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !apierrors.IsForbidden(err) {
				t.Errorf("%s: %v, want a 403 %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.pod.Spec.ServiceAccountName != tc.wantSA || (tc.wantSA != "" && tc.pod.Spec.DeprecatedServiceAccount != tc.wantSA) {
			t.Errorf("%s: service account %q, want %q", tc.name, tc.pod.Spec.ServiceAccountName, tc.wantSA)
		}
		hasVolume := len(tc.pod.Spec.Volumes) == 1 && tc.pod.Spec.Volumes[0].Name == "kube-api-access-x1y2z"
		mounts := 0
		for _, c := range append(tc.pod.Spec.InitContainers, tc.pod.Spec.Containers...) {
			for _, m := range c.VolumeMounts {
				if m.Name == "kube-api-access-x1y2z" && m.MountPath == DefaultAPITokenMountPath && m.ReadOnly {
					mounts++
				}
			}
		}
		if hasVolume != tc.wantVolume || (tc.wantVolume && mounts != 3) || (!tc.wantVolume && mounts != 0) {
			t.Errorf("%s: volume %v with %d mounts, want %v in all 3 containers", tc.name, hasVolume, mounts, tc.wantVolume)
		}
		var pull []string
		for _, s := range tc.pod.Spec.ImagePullSecrets {
			pull = append(pull, s.Name)
		}
		if strings.Join(pull, ",") != strings.Join(tc.wantPull, ",") {
			t.Errorf("%s: imagePullSecrets %v, want %v", tc.name, pull, tc.wantPull)
		}
	}
}

// TestAdmitKeepsOwnMounts: a container with its own mount at the token's
// path keeps it, and an existing kube-api-access-* volume is reused.
func TestAdmitKeepsOwnMounts(t *testing.T) {
	cached := &accounts{m: map[string]*corev1.ServiceAccount{"ns/default": {}}}
	pod := newPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "own", MountPath: DefaultAPITokenMountPath}}
		p.Spec.Volumes = []corev1.Volume{{Name: "own"}, {Name: "kube-api-access-keep1"}}
	})
	if err := admit(t, testPlugin(cached, &accounts{}), pod); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Volumes) != 2 {
		t.Errorf("volumes %v, want the pod's two", pod.Spec.Volumes)
	}
	if m := pod.Spec.Containers[0].VolumeMounts; len(m) != 1 || m[0].Name != "own" {
		t.Errorf("container a's mounts %v, want its own only", m)
	}
	if m := pod.Spec.Containers[1].VolumeMounts; len(m) != 1 || m[0].Name != "kube-api-access-keep1" {
		t.Errorf("container b's mounts %v, want kube-api-access-keep1", m)
	}
}

// TestDefaultAccountIsWaitedFor: "default", missing from the cache, is
// looked up live up to ten times (the namespace's controller makes it);
// another name once.
func TestDefaultAccountIsWaitedFor(t *testing.T) {
	live := &accounts{m: map[string]*corev1.ServiceAccount{}}
	if err := admit(t, testPlugin(&accounts{}, live), newPod(nil)); err == nil || live.calls != 10 {
		t.Errorf("default: %v after %d live lookups, want a refusal after 10", err, live.calls)
	}
	live = &accounts{m: map[string]*corev1.ServiceAccount{}}
	if err := admit(t, testPlugin(&accounts{}, live), newPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "x" })); err == nil || live.calls != 1 {
		t.Errorf("x: %v after %d live lookups, want a refusal after 1", err, live.calls)
	}
	live = &accounts{m: map[string]*corev1.ServiceAccount{"ns/default": {}}}
	if err := admit(t, testPlugin(&accounts{}, live), newPod(nil)); err != nil {
		t.Errorf("default found live: %v", err)
	}
}
