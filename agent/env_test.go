package agent

import (
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffnode/skiff/internal/downward"
	"github.com/skiffnode/skiff/internal/objects"
	"github.com/skiffnode/skiff/runtime"
)

func envStore() *objects.Store {
	s := objects.NewStore()
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"},
		Data: map[string]string{"B": "cm-b", "A": "cm-a", "log.level": "debug", "SHARED": "from-cm"}}
	other := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "other"}, Data: map[string]string{"A": "wrong-namespace"}}
	sec := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"},
		Data: map[string][]byte{"password": []byte("s3cret"), "SHARED": []byte("from-secret")}}
	s.Replace([]*v1.ConfigMap{cm, other}, []*v1.Secret{sec})
	return s
}

func envPod(c v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u-1",
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"example.com/tier": "front"}},
		Spec: v1.PodSpec{NodeName: "node-a", ServiceAccountName: "default", Containers: []v1.Container{c}},
	}
}

func ptrTrue() *bool { b := true; return &b }

func envString(env []runtime.KeyValue) string {
	parts := make([]string, len(env))
	for i, kv := range env {
		parts[i] = kv.Key + "=" + kv.Value
	}
	return strings.Join(parts, " ")
}

// TestContainerEnv_G3: envFrom, then env; later definitions win; values
// expand against earlier names; object references as the kubelet.
func TestContainerEnv_G3(t *testing.T) {
	cmRef := func(name, prefix string, optional *bool) v1.EnvFromSource {
		return v1.EnvFromSource{Prefix: prefix, ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: name}, Optional: optional}}
	}
	secRef := func(name string) v1.EnvFromSource {
		return v1.EnvFromSource{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: name}}}
	}
	cmKey := func(name, key string, optional *bool) *v1.EnvVarSource {
		return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}
	}
	secKey := func(name, key string, optional *bool) *v1.EnvVarSource {
		return &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}
	}
	tests := []struct {
		name    string
		c       v1.Container
		want    string
		wantErr string
	}{
		{name: "plain values in order", c: v1.Container{Env: []v1.EnvVar{{Name: "Z", Value: "1"}, {Name: "A", Value: "2"}}}, want: "Z=1 A=2"},
		{name: "envFrom configmap keys sorted, dotted keys kept", c: v1.Container{EnvFrom: []v1.EnvFromSource{cmRef("cfg", "", nil)}}, want: "A=cm-a B=cm-b SHARED=from-cm log.level=debug"},
		{name: "envFrom prefix", c: v1.Container{EnvFrom: []v1.EnvFromSource{cmRef("cfg", "CFG_", nil)}}, want: "CFG_A=cm-a CFG_B=cm-b CFG_SHARED=from-cm CFG_log.level=debug"},
		{
			name: "later envFrom wins, env wins over envFrom",
			c: v1.Container{EnvFrom: []v1.EnvFromSource{cmRef("cfg", "", nil), secRef("db")},
				Env: []v1.EnvVar{{Name: "A", Value: "env"}}},
			want: "A=env B=cm-b SHARED=from-secret log.level=debug password=s3cret",
		},
		{name: "later env entry wins", c: v1.Container{Env: []v1.EnvVar{{Name: "X", Value: "1"}, {Name: "X", Value: "2"}}}, want: "X=2"},
		{
			name: "expansion sees envFrom and earlier env only",
			c: v1.Container{EnvFrom: []v1.EnvFromSource{cmRef("cfg", "", nil)},
				Env: []v1.EnvVar{{Name: "URL", Value: "http://$(A):$(PORT)/$(LATER)"}, {Name: "PORT", Value: "80"}, {Name: "AGAIN", Value: "$(PORT)$$(PORT)"}, {Name: "LATER", Value: "x"}}},
			want: "A=cm-a B=cm-b SHARED=from-cm log.level=debug URL=http://cm-a:$(PORT)/$(LATER) PORT=80 AGAIN=80$(PORT) LATER=x",
		},
		{name: "valueFrom values are not expanded", c: v1.Container{Env: []v1.EnvVar{{Name: "P", Value: "1"}, {Name: "K", ValueFrom: cmKey("cfg", "A", nil)}}}, want: "P=1 K=cm-a"},
		{name: "configMapKeyRef and secretKeyRef", c: v1.Container{Env: []v1.EnvVar{{Name: "L", ValueFrom: cmKey("cfg", "log.level", nil)}, {Name: "PW", ValueFrom: secKey("db", "password", nil)}}}, want: "L=debug PW=s3cret"},
		{name: "missing configmap", c: v1.Container{Env: []v1.EnvVar{{Name: "K", ValueFrom: cmKey("nope", "A", nil)}}}, wantErr: `configmap "nope" not found`},
		{name: "missing secret", c: v1.Container{EnvFrom: []v1.EnvFromSource{secRef("nope")}}, wantErr: `secret "nope" not found`},
		{name: "missing envFrom configmap", c: v1.Container{EnvFrom: []v1.EnvFromSource{cmRef("nope", "", nil)}}, wantErr: `configmap "nope" not found`},
		{name: "missing configmap key", c: v1.Container{Env: []v1.EnvVar{{Name: "K", ValueFrom: cmKey("cfg", "zzz", nil)}}}, wantErr: "couldn't find key zzz in ConfigMap ns/cfg"},
		{name: "missing secret key", c: v1.Container{Env: []v1.EnvVar{{Name: "K", ValueFrom: secKey("db", "user", nil)}}}, wantErr: "couldn't find key user in Secret ns/db"},
		{
			name: "optional missing objects and keys are skipped",
			c: v1.Container{EnvFrom: []v1.EnvFromSource{cmRef("nope", "", ptrTrue())},
				Env: []v1.EnvVar{{Name: "K1", ValueFrom: cmKey("nope", "A", ptrTrue())}, {Name: "K2", ValueFrom: cmKey("cfg", "zzz", ptrTrue())},
					{Name: "K3", ValueFrom: secKey("db", "user", ptrTrue())}, {Name: "K4", ValueFrom: secKey("nope", "x", ptrTrue())}, {Name: "OK", Value: "1"}}},
			want: "OK=1",
		},
		{name: "objects of the pod's namespace only", c: v1.Container{Env: []v1.EnvVar{{Name: "K", ValueFrom: cmKey("cfg", "A", nil)}}}, want: "K=cm-a"},
	}
	store := envStore()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := envPod(tc.c)
			env, err := containerEnv(envInput{Pod: pod, Container: &pod.Spec.Containers[0], Objects: store})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("containerEnv() error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("containerEnv() error = %v", err)
			}
			if got := envString(env); got != tc.want {
				t.Errorf("env = %s\nwant  %s", got, tc.want)
			}
		})
	}
	// Without a store every object is missing.
	pod := envPod(v1.Container{Env: []v1.EnvVar{{Name: "K", ValueFrom: cmKey("cfg", "A", nil)}}})
	if _, err := containerEnv(envInput{Pod: pod, Container: &pod.Spec.Containers[0]}); err == nil || err.Error() != `configmap "cfg" not found` {
		t.Errorf("nil Objects: error = %v", err)
	}
}

// TestFieldRefEnv_G6: every env fieldRef path.
func TestFieldRefEnv_G6(t *testing.T) {
	paths := map[string]string{
		"metadata.name": "web", "metadata.namespace": "ns", "metadata.uid": "u-1",
		"metadata.labels['app']": "web", "metadata.labels['missing']": "",
		"metadata.annotations['example.com/tier']": "front",
		"spec.nodeName": "node-a", "spec.serviceAccountName": "default",
		"status.hostIP": "192.0.2.1", "status.hostIPs": "192.0.2.1,2001:db8::1",
		"status.podIP": "10.0.0.5", "status.podIPs": "10.0.0.5,fd00::5",
	}
	for path, want := range paths {
		pod := envPod(v1.Container{Env: []v1.EnvVar{{Name: "V", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}}})
		env, err := containerEnv(envInput{Pod: pod, Container: &pod.Spec.Containers[0],
			PodIPs: []string{"10.0.0.5", "fd00::5"}, HostIPs: []string{"192.0.2.1", "2001:db8::1"}})
		if err != nil || len(env) != 1 || env[0].Value != want {
			t.Errorf("%s: env = %v, %v; want %q", path, env, err, want)
		}
	}
}

// TestEnvForPodIPs: a host-network pod's podIP is the node's; otherwise
// the sandbox's IPs, primary first.
func TestEnvForPodIPs(t *testing.T) {
	d := &podEnv{hostIPs: []string{"192.0.2.1"}}
	ref := func(p string) v1.EnvVar {
		return v1.EnvVar{Name: p, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: p}}}
	}
	pod := envPod(v1.Container{Env: []v1.EnvVar{ref("status.podIP"), ref("status.podIPs")}})
	sb := &runtime.SandboxStatus{IP: "10.0.0.5", AdditionalIPs: []string{"fd00::5"}}
	env, err := d.envFor(pod, &pod.Spec.Containers[0], sb, nil)
	if got := envString(env); err != nil || got != "status.podIP=10.0.0.5 status.podIPs=10.0.0.5,fd00::5" {
		t.Errorf("pod network: %s (%v)", got, err)
	}
	pod.Spec.HostNetwork = true
	env, err = d.envFor(pod, &pod.Spec.Containers[0], sb, nil)
	if got := envString(env); err != nil || got != "status.podIP=192.0.2.1 status.podIPs=192.0.2.1" {
		t.Errorf("host network: %s (%v)", got, err)
	}
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "K", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "x"}, Key: "k"}}}}
	_, err = d.envFor(pod, &pod.Spec.Containers[0], sb, nil)
	if startFailureReason(err) != "CreateContainerConfigError" || err.Error() != `secret "x" not found` {
		t.Errorf("missing secret: reason %q, error %v", startFailureReason(err), err)
	}
}

// TestResourceFieldRef_G8_G9: divisors, rounding up, containerName and the
// node-allocatable fallback for unset limits.
func TestResourceFieldRef_G8_G9(t *testing.T) {
	q := resource.MustParse
	app := v1.Container{Name: "app", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: q("250m"), v1.ResourceMemory: q("100Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: q("1500m"), v1.ResourceMemory: q("129M")},
	}}
	bare := v1.Container{Name: "bare", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("0")}}}
	initC := v1.Container{Name: "init"}
	pod := envPod(app)
	pod.Spec.Containers = append(pod.Spec.Containers, bare)
	pod.Spec.InitContainers = []v1.Container{initC}
	alloc := v1.ResourceList{v1.ResourceCPU: q("3"), v1.ResourceMemory: q("8Gi"), v1.ResourceEphemeralStorage: q("10G")}
	tests := []struct {
		container, resource, divisor, containerName string
		want                                        string
	}{
		{container: "app", resource: "limits.cpu", want: "2"}, // 1.5 rounded up
		{container: "app", resource: "limits.cpu", divisor: "1m", want: "1500"},
		{container: "app", resource: "requests.cpu", want: "1"},
		{container: "app", resource: "requests.cpu", divisor: "1m", want: "250"},
		{container: "app", resource: "limits.memory", want: "129000000"},
		{container: "app", resource: "limits.memory", divisor: "1Mi", want: "124"}, // 123.02 rounded up
		{container: "app", resource: "requests.memory", divisor: "1Ki", want: "102400"},
		{container: "app", resource: "requests.memory", divisor: "1M", want: "105"},
		{container: "app", resource: "limits.ephemeral-storage", divisor: "1G", want: "10"}, // allocatable
		{container: "app", resource: "requests.ephemeral-storage", want: "0"},
		{container: "bare", resource: "limits.cpu", want: "3"}, // zero limit: allocatable
		{container: "bare", resource: "limits.memory", divisor: "1Gi", want: "8"},
		{container: "bare", resource: "requests.memory", want: "0"},
		{container: "app", resource: "limits.cpu", containerName: "bare", divisor: "1m", want: "3000"},
		{container: "bare", resource: "limits.memory", containerName: "app", want: "129000000"},
		{container: "app", resource: "limits.cpu", containerName: "init", want: "0"}, // no fallback for init containers named
		{container: "app", resource: "limits.hugepages-2Mi", want: "0"},
	}
	for _, tc := range tests {
		c := findContainerForTest(pod, tc.container)
		fs := &v1.ResourceFieldSelector{Resource: tc.resource, ContainerName: tc.containerName}
		if tc.divisor != "" {
			fs.Divisor = q(tc.divisor)
		}
		got, err := resourceValue(fs, pod, c, alloc)
		if err != nil || got != tc.want {
			t.Errorf("%s %s/%s divisor %q = %q, %v; want %q", tc.container, tc.containerName, tc.resource, tc.divisor, got, err, tc.want)
		}
	}
	if _, err := resourceValue(&v1.ResourceFieldSelector{Resource: "limits.cpu", ContainerName: "nope"}, pod, &pod.Spec.Containers[0], alloc); err == nil || err.Error() != "container nope not found" {
		t.Errorf("unknown containerName: error = %v", err)
	}
	if len(pod.Spec.Containers[1].Resources.Limits) != 1 {
		t.Errorf("resourceValue modified the pod: %v", pod.Spec.Containers[1].Resources.Limits)
	}
}

func findContainerForTest(pod *v1.Pod, name string) *v1.Container {
	c, _ := downward.FindContainer(pod, name)
	return c
}

// TestExpandCommandAndArgs_G3: command and args expand with the final
// environment; $$ escapes; unknown references stay.
func TestExpandCommandAndArgs_G3(t *testing.T) {
	c := &v1.Container{Command: []string{"/bin/$(SHELL)", "-c"}, Args: []string{"echo $(MSG) $$(MSG) $(NOPE)"}}
	cmd, args := expandCommandAndArgs(c, []runtime.KeyValue{{Key: "SHELL", Value: "sh"}, {Key: "MSG", Value: "hi"}})
	if strings.Join(cmd, " ") != "/bin/sh -c" || len(args) != 1 || args[0] != "echo hi $(MSG) $(NOPE)" {
		t.Errorf("command %q args %q", cmd, args)
	}
	if cmd, args := expandCommandAndArgs(&v1.Container{}, nil); cmd != nil || args != nil {
		t.Errorf("empty command/args = %q %q, want nil", cmd, args)
	}
}

// TestConfigErrorWaitsAndRecovers_G3: a container whose Secret is missing
// waits with CreateContainerConfigError and the kubelet's message; writing
// the Secret starts it at once (the store's change wakes the worker, well
// before the 5 s retry).
func TestConfigErrorWaitsAndRecovers_G3(t *testing.T) {
	rt := newFakeRuntime()
	store := objects.NewStore()
	cfg := testConfig(t, rt)
	cfg.Objects, cfg.ObjectChanges = store, store.Subscribe()
	h := runTestAgent(t, cfg)
	pod := testPod("Always", nil, "app")
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "PW", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: "db"}, Key: "password"}}}}
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("CreateContainerConfigError", func() bool {
		p := h.pod("uid1")
		if p == nil || len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError" && w.Message == `secret "db" not found`
	})
	// Let the relist see the new sandbox (its wake-up retries at once)
	// so that only the store's wake-up can beat the 5 s retry.
	mark := h.agent.relist.listings.Load()
	h.eventually("relists", func() bool { return h.agent.relist.listings.Load() >= mark+5 })
	sec := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"}, Data: map[string][]byte{"password": []byte("pw")}}
	start := time.Now()
	store.Replace(nil, []*v1.Secret{sec})
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("container started %v after the Secret appeared, want a wake-up, not the retry", d)
	}
	cs, ok := rt.ContainerByName("uid1", "app")
	if !ok {
		t.Fatal("no container")
	}
	spec, _ := rt.ContainerSpecOf(cs.ID)
	if envString(spec.Env) != "PW=pw" {
		t.Errorf("env = %s, want PW=pw", envString(spec.Env))
	}
}

// fakeServiceEnv answers ServiceEnv with one variable per call's namespace
// and links, or err.
type fakeServiceEnv struct{ err error }

func (f fakeServiceEnv) ServiceEnv(namespace string, links bool) ([]v1.EnvVar, error) {
	if f.err != nil {
		return nil, f.err
	}
	out := []v1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "10.96.0.1"}}
	if links {
		out = append(out, v1.EnvVar{Name: "DB_SERVICE_HOST", Value: "10.96.0.3"}, v1.EnvVar{Name: "MINE", Value: "svc"})
	}
	return out, nil
}

// TestServiceEnv_G4: service variables follow the container's own (which
// win a name both define), $(VAR) may reference them, enableServiceLinks
// false leaves only the master service's; while the services were never
// read, an API pod waits (CreateContainerConfigError) and a static pod
// starts without them.
func TestServiceEnv_G4(t *testing.T) {
	c := v1.Container{Name: "app", Env: []v1.EnvVar{{Name: "MINE", Value: "own"}, {Name: "URL", Value: "https://$(DB_SERVICE_HOST)"}}}
	pod := envPod(c)
	pod.Annotations[configSourceAnnotation] = "api"
	d := &podEnv{services: fakeServiceEnv{}}
	env, err := d.envFor(pod, &pod.Spec.Containers[0], nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := envString(env), "MINE=own URL=https://10.96.0.3 KUBERNETES_SERVICE_HOST=10.96.0.1 DB_SERVICE_HOST=10.96.0.3"; got != want {
		t.Errorf("env %s\nwant %s", got, want)
	}
	no := false
	pod.Spec.EnableServiceLinks = &no
	env, _ = d.envFor(pod, &pod.Spec.Containers[0], nil, nil)
	if got, want := envString(env), "MINE=own URL=https://$(DB_SERVICE_HOST) KUBERNETES_SERVICE_HOST=10.96.0.1"; got != want {
		t.Errorf("without links: env %s\nwant %s", got, want)
	}
	d.services = fakeServiceEnv{err: errors.New("services have not yet been read at least once, cannot construct envvars")}
	if _, err := d.envFor(pod, &pod.Spec.Containers[0], nil, nil); startFailureReason(err) != reasonCreateContainerConfigError {
		t.Errorf("API pod before the services were read: err %v, want a config error", err)
	}
	pod.Annotations[configSourceAnnotation] = "file"
	if env, err := d.envFor(pod, &pod.Spec.Containers[0], nil, nil); err != nil || envString(env) != "MINE=own URL=https://$(DB_SERVICE_HOST)" {
		t.Errorf("static pod before the services were read: env %s err %v", envString(env), err)
	}
}
