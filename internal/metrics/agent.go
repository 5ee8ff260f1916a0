package metrics

import (
	"time"

	"github.com/skiffnode/skiff/agent"
)

// PodWorkerDuration implements agent.Metrics:
// kubelet_pod_worker_duration_seconds{operation_type}.
func (k *Kubelet) PodWorkerDuration(op agent.WorkerOperation, d time.Duration) {
	o, ok := k.workerOps[op]
	if !ok {
		o = k.podWorkerDuration.WithLabelValues(string(op))
	}
	o.Observe(d.Seconds())
}

// PodStartDuration implements agent.Metrics:
// kubelet_pod_start_duration_seconds.
func (k *Kubelet) PodStartDuration(d time.Duration) { k.podStart.Observe(d.Seconds()) }

// PodStartSLIDuration implements agent.Metrics:
// kubelet_pod_start_sli_duration_seconds. skiff knows when each pod's
// image pulls began and ended, so every started pod is observed, with
// the window of its pulls taken out as the kubelet takes it out.
func (k *Kubelet) PodStartSLIDuration(d time.Duration) { k.podStartSLI.Observe(d.Seconds()) }

// RelistDuration implements agent.Metrics:
// kubelet_pleg_relist_duration_seconds.
func (k *Kubelet) RelistDuration(d time.Duration) { k.relist.Observe(d.Seconds()) }

// SandboxStarted implements agent.Metrics: kubelet_started_pods_total
// and, when failed, kubelet_started_pods_errors_total.
func (k *Kubelet) SandboxStarted(failed bool) {
	k.startedPods.Inc()
	if failed {
		k.startedPodsErrors.Inc()
	}
}

// ContainerStarted implements agent.Metrics:
// kubelet_started_containers_total{container_type} and, with a code,
// kubelet_started_containers_errors_total{container_type,code}.
func (k *Kubelet) ContainerStarted(t agent.ContainerType, code string) {
	c, ok := k.containerTypes[t]
	if !ok {
		c = k.startedContainers.WithLabelValues(string(t))
	}
	c.Inc()
	if code != "" {
		k.startedContainersErrors.WithLabelValues(string(t), code).Inc()
	}
}

// PodRestarted implements agent.Metrics:
// kubelet_restarted_pods_total{static}, "true" for a static pod and ""
// for an API pod, as the kubelet labels them.
func (k *Kubelet) PodRestarted(static bool) {
	if static {
		k.restartedStatic.Inc()
		return
	}
	k.restartedAPI.Inc()
}

// PodEvicted implements agent.Metrics: kubelet_evictions{eviction_signal}.
func (k *Kubelet) PodEvicted(signal string) { k.evictions.WithLabelValues(signal).Inc() }
