package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// envObjectsManifest is one file with a ConfigMap, a Secret and the static
// pod that uses them.
func envObjectsManifest() string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
data:
  GREETING: hello
  log.level: debug
---
apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password: s3cret
---
apiVersion: v1
kind: Pod
metadata:
  name: envobj
spec:
  terminationGracePeriodSeconds: 5
  subdomain: web
  hostAliases:
  - ip: 10.1.2.3
    hostnames: [db.example, db]
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo started $(CFG_GREETING) '$$(NOT_EXPANDED)'; trap 'exit 0' TERM; while true; do sleep 1; done"]
    envFrom:
    - configMapRef: {name: app-config}
      prefix: CFG_
    env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: MSG
      value: "$(CFG_GREETING) from $(POD_NAME)"
    - name: PW
      valueFrom: {secretKeyRef: {name: db, key: password}}
    - name: MEM_MI
      valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}
    - name: CPU_LIMIT
      valueFrom: {resourceFieldRef: {resource: limits.cpu}}
    - name: POD_IPS
      valueFrom: {fieldRef: {fieldPath: status.podIPs}}
    resources:
      limits: {memory: 64Mi}
`, busyboxImage)
}

// TestStaticObjectsEnvAndHosts_G2_G3_G6_G8_G9: a static pod takes env from
// a ConfigMap and a Secret of its own manifest file, a resourceFieldRef
// (with divisor, and the node-allocatable fallback for the unset cpu
// limit) and fieldRefs, with $(VAR) expanded in env and command; its
// /etc/hosts is the kubelet's managed file with the FQDN and hostAliases.
func TestStaticObjectsEnvAndHosts_G2_G3_G6_G8_G9(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "envobj.yaml", envObjectsManifest())
	pod := PodName("envobj")
	p := e.WaitForPod(t, pod, runningAndReady, podStartTimeout)
	ctr := e.PodContainer(t, pod, "app")

	env := map[string]string{}
	for _, line := range strings.Split(e.Exec(t, ctr.ID, "env"), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	want := map[string]string{
		"CFG_GREETING": "hello", "CFG_log.level": "debug", "POD_NAME": pod,
		"MSG": "hello from " + pod, "PW": "s3cret", "MEM_MI": "64", "POD_IPS": p.Status.PodIP,
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	if n, err := strconv.Atoi(env["CPU_LIMIT"]); err != nil || n < 1 {
		t.Errorf("env CPU_LIMIT = %q, want the node's allocatable cpus (G.9)", env["CPU_LIMIT"])
	}

	hosts := e.Exec(t, ctr.ID, "cat", "/etc/hosts")
	for _, line := range []string{
		"# Kubernetes-managed hosts file.",
		p.Status.PodIP + "\t" + pod + ".web.default.svc.cluster.local\t" + pod,
		"# Entries added by HostAliases.",
		"10.1.2.3\tdb.example\tdb",
	} {
		if !strings.Contains(hosts, line+"\n") {
			t.Errorf("/etc/hosts lacks %q:\n%s", line, hosts)
		}
	}
	if got := strings.TrimSpace(e.Exec(t, ctr.ID, "hostname")); got != pod {
		t.Errorf("hostname = %q, want %q", got, pod)
	}
	eventually(t, 30*time.Second, func() (bool, string) {
		out, err := e.Skiff(t, "logs", pod, "-c", "app")
		return err == nil && strings.Contains(out, "started hello $(NOT_EXPANDED)"), fmt.Sprintf("logs: %v %q", err, out)
	})
}

// TestMissingSecretThenWritten_G3: a container whose Secret does not exist
// waits with CreateContainerConfigError and the kubelet's message; writing
// the Secret's manifest starts it.
func TestMissingSecretThenWritten_G3(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "needsecret.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: needsecret
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    env:
    - name: TOKEN
      valueFrom: {secretKeyRef: {name: api-token, key: token}}
`, busyboxImage))
	pod := PodName("needsecret")
	e.WaitForPod(t, pod, func(p *v1.Pod) bool {
		cs := containerStatus(p, "app")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CreateContainerConfigError" &&
			cs.State.Waiting.Message == `secret "api-token" not found`
	}, podStartTimeout)
	e.WriteManifest(t, "token.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-token\ndata:\n  token: dG9rZW4=\n")
	e.WaitForPod(t, pod, runningAndReady, 30*time.Second)
	if got := e.Exec(t, e.PodContainer(t, pod, "app").ID, "sh", "-c", "echo -n $TOKEN"); got != "token" {
		t.Errorf("TOKEN = %q, want token", got)
	}
}

// TestConfigEnvExampleRuns: examples/manifests/config-env.yaml (the example
// of docs/static-pod-objects.md) runs and prints what its objects give it.
func TestConfigEnvExampleRuns(t *testing.T) {
	e := NewEnv(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "manifests", "config-env.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "config-env.yaml", string(data))
	pod := PodName("config-env")
	e.WaitForPod(t, pod, runningAndReady, podStartTimeout)
	const want = "hello, world! token=13 chars, 32Mi, api.internal is 10.1.2.3"
	eventually(t, 30*time.Second, func() (bool, string) {
		out, err := e.Skiff(t, "logs", pod, "-c", "app")
		return err == nil && strings.Contains(out, want), fmt.Sprintf("skiff logs: %v %q, want %q", err, out, want)
	})
}

// TestHostnameOverride: spec.hostnameOverride (GA in 1.37) is the pod's
// host name and its /etc/hosts entry, with no domain even with a
// subdomain, as the kubelet's GeneratePodHostNameAndDomain.
func TestHostnameOverride(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "override.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: override
spec:
  terminationGracePeriodSeconds: 1
  hostnameOverride: db-0.example.com
  subdomain: web
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "100000"]
`, busyboxImage))
	pod := PodName("override")
	p := e.WaitForPod(t, pod, runningAndReady, podStartTimeout)
	ctr := e.PodContainer(t, pod, "app")
	if got := strings.TrimSpace(e.Exec(t, ctr.ID, "hostname")); got != "db-0.example.com" {
		t.Errorf("hostname = %q, want db-0.example.com", got)
	}
	if hosts := e.Exec(t, ctr.ID, "cat", "/etc/hosts"); !strings.Contains(hosts, p.Status.PodIP+"\tdb-0.example.com\n") {
		t.Errorf("/etc/hosts lacks %q:\n%s", p.Status.PodIP+"\tdb-0.example.com", hosts)
	}
}

// TestEnvFromFile: env[].valueFrom.fileKeyRef (EnvFiles, beta and on since
// 1.35) reads a variable from a KEY='value' file an init container wrote
// into an emptyDir; a missing key, not optional, makes the container wait
// with CreateContainerConfigError and the kubelet's message.
func TestEnvFromFile(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "envfile.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: envfile
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: cfg
    emptyDir: {}
  initContainers:
  - name: write
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "printf \"# generated\\nDB_HOST='db.example'\\nMOTD='two\\nlines'\\n\" > /cfg/app.env"]
    volumeMounts:
    - {name: cfg, mountPath: /cfg}
  containers:
  - name: app
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "100000"]
    env:
    - name: DB_HOST
      valueFrom: {fileKeyRef: {volumeName: cfg, path: app.env, key: DB_HOST}}
    - name: MOTD
      valueFrom: {fileKeyRef: {volumeName: cfg, path: app.env, key: MOTD}}
    - name: OPTIONAL
      valueFrom: {fileKeyRef: {volumeName: cfg, path: app.env, key: NOPE, optional: true}}
  - name: strict
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "100000"]
    env:
    - name: NOPE
      valueFrom: {fileKeyRef: {volumeName: cfg, path: app.env, key: NOPE}}
`, busyboxImage))
	pod := PodName("envfile")
	p := e.WaitForPod(t, pod, func(p *v1.Pod) bool {
		a, s := containerStatus(p, "app"), containerStatus(p, "strict")
		return a != nil && a.State.Running != nil && s != nil && s.State.Waiting != nil && s.State.Waiting.Reason == "CreateContainerConfigError"
	}, podStartTimeout)
	if w := containerStatus(p, "strict").State.Waiting; !strings.HasPrefix(w.Message, `environment variable key "NOPE" not found in file "`) {
		t.Errorf("strict: waiting message %q", w.Message)
	}
	ctr := e.PodContainer(t, pod, "app")
	if got := e.Exec(t, ctr.ID, "sh", "-c", `echo "$DB_HOST|$MOTD|${OPTIONAL-unset}"`); strings.TrimSpace(got) != "db.example|two\nlines|unset" {
		t.Errorf("env = %q, want db.example|two\\nlines|unset", got)
	}
}
