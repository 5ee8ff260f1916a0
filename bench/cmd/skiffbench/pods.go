package main

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/skiffnode/skiff/bench/internal/criops"
)

// Images built by `make images`.
const (
	busyboxImage    = "skiff.test/busybox:1.36"
	testserverImage = "skiff.test/testserver:1"
	// floorNamespace keeps the floor's pods apart from the agents'.
	floorNamespace = "bench-floor"
	// graceSeconds is every pod's terminationGracePeriodSeconds; the
	// containers exit on SIGTERM, so it never runs out.
	graceSeconds = 5
)

// sleeper is a busybox app that exits at once on SIGTERM (a shell as PID 1
// ignores signals it has no handler for).
var sleeper = []string{"sh", "-c", `trap "exit 0" TERM; sleep 86400 & wait`}

// healthySleeper also creates the file its liveness probe checks.
var healthySleeper = []string{"sh", "-c", `touch /tmp/healthy; trap "exit 0" TERM; sleep 86400 & wait`}

// testserverArgs runs the test server with no listeners; it logs
// "received SIGTERM" on SIGTERM and exits.
var testserverArgs = []string{"--http-port=0", "--tcp-port=0", "--grpc-port=0"}

// podKind is the shape of a benchmark pod.
type podKind int

const (
	kindStartup  podKind = iota // init (true) + app (sleeper), busybox
	kindDensity                 // app with requests and an exec readiness probe
	kindSigterm                 // testserver app
	kindLiveness                // app with an exec liveness probe every second
	// kindStartupVolumes is kindStartup whose app also mounts an emptyDir,
	// a configMap (from a ConfigMap in the same manifest file) and a
	// downwardAPI volume (startupvolumes.go).
	kindStartupVolumes
)

// livenessPeriod is the liveness probe period of kindLiveness.
const livenessPeriod = 1

// manifest renders the pod of kind named name as YAML; rev is put into an
// annotation so that an edit changes the static pod's UID. The file of
// kindStartupVolumes holds its ConfigMap first, then the pod.
func manifest(name string, kind podKind, rev int) ([]byte, error) {
	pod, err := marshalPod(podOf(name, kind, rev))
	if err != nil || kind != kindStartupVolumes {
		return pod, err
	}
	cm, err := yaml.Marshal(configMapOf(name))
	if err != nil {
		return nil, fmt.Errorf("manifest %s: config map: %w", name, err)
	}
	return slices.Concat(cm, []byte("---\n"), pod), nil
}

// densityManifest is the density pod with a cpu request of cpuMilli.
func densityManifest(name string, cpuMilli int64) ([]byte, error) {
	pod := podOf(name, kindDensity, 1)
	pod.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI)
	return marshalPod(pod)
}

// densityCPUMilli is the density pods' cpu request when n of them run on
// cores CPUs: 10m, less where n*10m exceeds the node's capacity (250 pods
// on 2 cores), which an agent would refuse with OutOfcpu as the kubelet does.
func densityCPUMilli(n, cores int) int64 {
	if n <= 0 || cores <= 0 {
		return 10
	}
	return max(1, min(10, int64(cores)*1000/int64(n)))
}

func marshalPod(pod *v1.Pod) ([]byte, error) {
	data, err := yaml.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", pod.Name, err)
	}
	return data, nil
}

// podOf is the pod of kind named name; rev is put into an annotation so
// that an edit changes the static pod's UID.
func podOf(name string, kind podKind, rev int) *v1.Pod {
	grace := int64(graceSeconds)
	pod := v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: agentNamespace, Annotations: map[string]string{"bench.skiff.dev/rev": fmt.Sprint(rev)}},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []v1.Container{appContainer(kind)},
		},
	}
	if kind == kindStartupVolumes {
		pod.Labels = startupLabels()
		pod.Spec.Volumes = startupVolumes(name)
	}
	if kind == kindStartup || kind == kindStartupVolumes {
		pod.Spec.InitContainers = []v1.Container{{Name: "init", Image: busyboxImage, ImagePullPolicy: v1.PullIfNotPresent, Command: []string{"true"}}}
	}
	return &pod
}

func appContainer(kind podKind) v1.Container {
	c := v1.Container{Name: "app", Image: busyboxImage, ImagePullPolicy: v1.PullIfNotPresent, Command: sleeper}
	switch kind {
	case kindDensity:
		c.Resources.Requests = v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse("10m"),
			v1.ResourceMemory: resource.MustParse("16Mi"),
		}
		c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 10}
	case kindSigterm:
		c.Image, c.Command, c.Args = testserverImage, nil, testserverArgs
	case kindStartupVolumes:
		c.VolumeMounts = startupVolumeMounts()
	case kindLiveness:
		c.Command = healthySleeper
		c.LivenessProbe = &v1.Probe{
			ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}},
			PeriodSeconds: livenessPeriod, FailureThreshold: 1,
		}
	}
	return c
}

// densityFloorProbe is the density pod's readiness probe as the
// probe-making floor makes it: the same command and period, from
// appContainer so that the two cannot drift apart.
func densityFloorProbe() *criops.ExecProbe {
	rp := appContainer(kindDensity).ReadinessProbe
	return &criops.ExecProbe{Command: rp.Exec.Command, Period: time.Duration(rp.PeriodSeconds) * time.Second,
		Timeout: time.Duration(max(1, rp.TimeoutSeconds)) * time.Second}
}

// floorPod is the floor's equivalent of kind: the same containers, without
// probes.
func floorPod(name string, kind podKind, rev int) criops.Pod {
	p := criops.Pod{Name: name, Namespace: floorNamespace, UID: fmt.Sprintf("%s-uid-%d", name, rev),
		App: criops.Container{Name: "app", Image: busyboxImage, Command: sleeper}}
	switch kind {
	case kindStartup:
		p.Init = &criops.Container{Name: "init", Image: busyboxImage, Command: []string{"true"}}
	case kindStartupVolumes:
		p.Init = &criops.Container{Name: "init", Image: busyboxImage, Command: []string{"true"}}
		p.Volumes, p.App.Mounts = floorVolumes(podOf(name, kind, rev), configMapOf(name))
	case kindDensity:
		p.App.CPUShares = 10 * 1024 / 1000 // 10m, as the kubelet maps it
	case kindSigterm:
		p.App.Image, p.App.Command = testserverImage, append([]string{"/testserver"}, testserverArgs...)
	case kindLiveness:
		p.App.Command = healthySleeper
	}
	return p
}
