package agent

import (
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

// Metrics receives the agent's measurements, which package metrics
// exports as the kubelet's kubelet_* metrics. The pod workers and the
// relist call it on their own paths, so an implementation must be safe for
// concurrent use, never block, and cost no more than a few atomic updates
// (no locks, no allocations, no goroutines). Nothing in the pure plan and
// status functions calls it.
type Metrics interface {
	// PodWorkerDuration records one pass of a pod worker (the kubelet's
	// pod_worker_duration_seconds): a sync of the pod (op create, update
	// or sync) or an attempt at terminating it (op kill).
	PodWorkerDuration(op WorkerOperation, d time.Duration)
	// PodStartDuration records how long a pod took from the agent's first
	// sight of it until all of its containers ran, image pulls included
	// (pod_start_duration_seconds). Once per pod.
	PodStartDuration(d time.Duration)
	// PodStartSLIDuration records the same start less the time its images
	// were pulled, from the pod's creation (pod_start_sli_duration_seconds;
	// see podStart). Once per pod.
	PodStartSLIDuration(d time.Duration)
	// RelistDuration records one listing of the runtime by the relist
	// loop, failed ones included (pleg_relist_duration_seconds).
	RelistDuration(d time.Duration)
	// SandboxStarted records an attempt at starting a pod's sandbox and
	// whether it failed (started_pods_total, started_pods_errors_total).
	SandboxStarted(failed bool)
	// ContainerStarted records an attempt at starting a container of type
	// t; code is "" when it started, else the container's waiting reason,
	// e.g. ErrImagePull or CreateContainerError (started_containers_total,
	// started_containers_errors_total).
	ContainerStarted(t ContainerType, code string)
	// PodRestarted records a pod that terminated while a source still
	// wanted it under the same UID, so that it runs again
	// (restarted_pods_total); static: it is not an API pod.
	PodRestarted(static bool)
	// PodEvicted records an eviction by signal, e.g. emptydirfs.limit
	// (evictions).
	PodEvicted(signal string)
}

// WorkerOperation is what a pod worker's pass did, named as the kubelet's
// operation_type label of pod_worker_duration_seconds.
type WorkerOperation string

// The pod worker operations.
const (
	// OperationCreate is the first sync of a pod.
	OperationCreate WorkerOperation = "create"
	// OperationUpdate is a sync that took a newer object of the pod.
	OperationUpdate WorkerOperation = "update"
	// OperationSync is any other sync (a wake, a timer or a resync).
	OperationSync WorkerOperation = "sync"
	// OperationKill is an attempt at terminating the pod.
	OperationKill WorkerOperation = "kill"
)

// ContainerType is the kind of a container, named as the kubelet's
// container_type label.
type ContainerType string

// The container types.
const (
	TypeContainer          ContainerType = "container"
	TypeInitContainer      ContainerType = "init_container"
	TypeEphemeralContainer ContainerType = "ephemeral_container"
)

// EvictionSignalEmptyDirFsLimit is the kubelet's eviction signal of a pod
// whose emptyDir outgrew its sizeLimit, the only eviction skiff makes.
const EvictionSignalEmptyDirFsLimit = "emptydirfs.limit"

// noMetrics records nothing: the default of Config.Metrics.
type noMetrics struct{}

func (noMetrics) PodWorkerDuration(WorkerOperation, time.Duration) {}
func (noMetrics) PodStartDuration(time.Duration)                   {}
func (noMetrics) PodStartSLIDuration(time.Duration)                {}
func (noMetrics) RelistDuration(time.Duration)                     {}
func (noMetrics) SandboxStarted(bool)                              {}
func (noMetrics) ContainerStarted(ContainerType, string)           {}
func (noMetrics) PodRestarted(bool)                                {}
func (noMetrics) PodEvicted(string)                                {}

// metrics returns the workers' Metrics; workerDeps built without one (in
// tests) record nothing.
func (d *workerDeps) metrics() Metrics {
	if d.metricsPort == nil {
		return noMetrics{}
	}
	return d.metricsPort
}

// RuntimeCounts are the pods and containers the relist found in the
// runtime at its latest listing (skiff's own only), as the kubelet's
// running_pods and running_containers gauges count them.
type RuntimeCounts struct {
	// RunningPods counts the pods with a ready sandbox.
	RunningPods int
	// Containers counts the containers by state, exited ones included.
	Created, Running, Exited, Unknown int
}

// runtimeCounters hold the RuntimeCounts of the latest listing: the relist
// loop stores them, anybody loads them. Atomic each; a load may mix two
// listings, which a gauge read once a scrape can afford.
type runtimeCounters struct {
	runningPods atomic.Int64
	// containers are indexed by runtime.ContainerState.
	containers [runtime.ContainerExited + 1]atomic.Int64
}

// store records the counts of one listing: ready is the number of pods
// with a ready sandbox, containers the containers by state.
func (c *runtimeCounters) store(ready int, containers *[runtime.ContainerExited + 1]int) {
	c.runningPods.Store(int64(ready))
	for i := range containers {
		c.containers[i].Store(int64(containers[i]))
	}
}

// RuntimeCounts returns the pods and containers found by the latest
// successful relist (zero before the first). Safe for concurrent use;
// non-blocking: it reads what the relist loop, which owns the listing,
// stored, and makes no runtime call.
func (a *Agent) RuntimeCounts() RuntimeCounts {
	c := &a.relist.counts
	return RuntimeCounts{
		RunningPods: int(c.runningPods.Load()),
		Created:     int(c.containers[runtime.ContainerCreated].Load()),
		Running:     int(c.containers[runtime.ContainerRunning].Load()),
		Exited:      int(c.containers[runtime.ContainerExited].Load()),
		Unknown:     int(c.containers[runtime.ContainerUnknown].Load()),
	}
}

// containerType is the ContainerType of pod's container name (init: one of
// its init containers).
func containerType(pod *v1.Pod, name string, init bool) ContainerType {
	if init {
		return TypeInitContainer
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return TypeEphemeralContainer
		}
	}
	return TypeContainer
}

// isStaticPod reports whether pod is not an API pod, as the kubelet's
// IsStaticPod: its kubernetes.io/config.source names another source.
func isStaticPod(pod *v1.Pod) bool {
	src, ok := pod.Annotations[configSourceAnnotation]
	return ok && src != "api"
}

// syncOperation is the WorkerOperation of a sync about to run: the pod's
// first is a create, one that took a newer object of the pod (updated) an
// update, any other a sync. Worker goroutine only.
func (w *podWorker) syncOperation(updated bool) WorkerOperation {
	switch {
	case !w.synced:
		w.synced = true
		return OperationCreate
	case updated:
		return OperationUpdate
	}
	return OperationSync
}

// observePass records a pass of the worker that began at start (deferred
// by sync and terminate).
func (w *podWorker) observePass(op WorkerOperation, start time.Time) {
	w.d.metrics().PodWorkerDuration(op, w.d.clock.Since(start))
}
