// Package metrics exports skiff's measurements on /metrics in the
// Prometheus text format, under the kubelet's names (subsystem kubelet;
// names, types, labels and buckets as in the kubelet v1.34's
// pkg/kubelet/metrics), on a registry its caller creates: there is no
// default registry, no init-time registration and no package-level metric.
//
// Kubelet holds the metrics. It implements agent.Metrics (the agent's
// port: pod workers, starts, relist); InstrumentRuntime decorates the
// runtime port with the runtime operation metrics; RunningCollector counts
// the runtime's pods and containers at scrape time from what the agent's
// relist found; Handler serves a registry. cmd/skiff wires them.
package metrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/agent"
)

// subsystem prefixes every metric name, as the kubelet's.
const subsystem = "kubelet"

// podStartBuckets are the kubelet's podStartupDurationBuckets (seconds).
func podStartBuckets() []float64 {
	return []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
}

// runtimeOpBuckets are the kubelet's runtime_operations_duration_seconds
// buckets.
func runtimeOpBuckets() []float64 { return prometheus.ExponentialBuckets(.005, 2.5, 14) }

// Options configure a Kubelet.
type Options struct {
	// NodeName is the node's name, the label of kubelet_node_name.
	NodeName string
	// Clock times runtime operations (the real clock when nil).
	Clock clock.PassiveClock
	// NoProcessCollectors leaves out the Go runtime's and the process's
	// collectors (go_*, process_*), for tests that compare whole
	// expositions.
	NoProcessCollectors bool
}

// Kubelet holds the kubelet_* metrics skiff exports. Its methods are safe
// for concurrent use and non-blocking: each is a few atomic updates of
// metrics created in New, except for the first error of a new code or
// signal (a label lookup).
type Kubelet struct {
	clock clock.PassiveClock

	podWorkerDuration *prometheus.HistogramVec
	// workerOps are podWorkerDuration's children by operation.
	workerOps map[agent.WorkerOperation]prometheus.Observer
	// podStart, podStartSLI and relist are the unlabelled histograms.
	podStart, podStartSLI, relist prometheus.Histogram

	startedPods, startedPodsErrors prometheus.Counter
	startedContainers              *prometheus.CounterVec
	// containerTypes are startedContainers' children by container type.
	containerTypes          map[agent.ContainerType]prometheus.Counter
	startedContainersErrors *prometheus.CounterVec
	restartedPods           *prometheus.CounterVec
	restartedStatic         prometheus.Counter
	restartedAPI            prometheus.Counter
	evictions               *prometheus.CounterVec

	runtimeOps *runtimeMetrics
}

var _ agent.Metrics = (*Kubelet)(nil)

// New creates the kubelet's metrics and registers them on reg, with
// kubelet_node_name for opts.NodeName and, unless opts say otherwise, the
// Go runtime's and the process's collectors. A registration error
// (another collector with the same names) is returned.
func New(reg prometheus.Registerer, opts Options) (*Kubelet, error) {
	k := &Kubelet{clock: opts.Clock}
	if k.clock == nil {
		k.clock = clock.RealClock{}
	}
	nodeName := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: subsystem, Name: "node_name",
		Help: "The node's name. The count is always 1.",
	}, []string{"node"})
	nodeName.WithLabelValues(opts.NodeName).Set(1)
	cs := append([]prometheus.Collector{nodeName}, k.podMetrics()...)
	cs = append(cs, k.startMetrics()...)
	k.runtimeOps = newRuntimeMetrics()
	cs = append(cs, k.runtimeOps.collectors()...)
	if !opts.NoProcessCollectors {
		cs = append(cs, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	var errs []error
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("register kubelet metrics: %w", err)
	}
	return k, nil
}

// podMetrics creates the pod worker, pod start and relist histograms.
func (k *Kubelet) podMetrics() []prometheus.Collector {
	k.podWorkerDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: subsystem, Name: "pod_worker_duration_seconds",
		Help:    "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
		Buckets: prometheus.DefBuckets,
	}, []string{"operation_type"})
	k.workerOps = map[agent.WorkerOperation]prometheus.Observer{}
	for _, op := range []agent.WorkerOperation{agent.OperationCreate, agent.OperationUpdate, agent.OperationSync, agent.OperationKill} {
		k.workerOps[op] = k.podWorkerDuration.WithLabelValues(string(op))
	}
	k.podStart = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: subsystem, Name: "pod_start_duration_seconds",
		Help:    "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
		Buckets: podStartBuckets(),
	})
	k.podStartSLI = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: subsystem, Name: "pod_start_sli_duration_seconds",
		Help:    "Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
		Buckets: podStartBuckets(),
	})
	k.relist = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: subsystem, Name: "pleg_relist_duration_seconds",
		Help:    "Duration in seconds for relisting pods in PLEG.",
		Buckets: prometheus.DefBuckets,
	})
	return []prometheus.Collector{k.podWorkerDuration, k.podStart, k.podStartSLI, k.relist}
}

// startMetrics creates the counters of started pods and containers,
// restarted pods and evictions.
func (k *Kubelet) startMetrics() []prometheus.Collector {
	k.startedPods = prometheus.NewCounter(prometheus.CounterOpts{
		Subsystem: subsystem, Name: "started_pods_total", Help: "Cumulative number of pods started",
	})
	k.startedPodsErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Subsystem: subsystem, Name: "started_pods_errors_total", Help: "Cumulative number of errors when starting pods",
	})
	k.startedContainers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: subsystem, Name: "started_containers_total", Help: "Cumulative number of containers started",
	}, []string{"container_type"})
	k.containerTypes = map[agent.ContainerType]prometheus.Counter{}
	for _, t := range []agent.ContainerType{agent.TypeContainer, agent.TypeInitContainer, agent.TypeEphemeralContainer} {
		k.containerTypes[t] = k.startedContainers.WithLabelValues(string(t))
	}
	k.startedContainersErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: subsystem, Name: "started_containers_errors_total", Help: "Cumulative number of errors when starting containers",
	}, []string{"container_type", "code"})
	k.restartedPods = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: subsystem, Name: "restarted_pods_total",
		Help: "Number of pods that have been restarted because they were deleted and recreated with the same UID while the kubelet was watching them (common for static pods, extremely uncommon for API pods)",
	}, []string{"static"})
	// The kubelet's values: "true" for static pods, "" for API pods.
	k.restartedStatic, k.restartedAPI = k.restartedPods.WithLabelValues("true"), k.restartedPods.WithLabelValues("")
	k.evictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: subsystem, Name: "evictions", Help: "Cumulative number of pod evictions by eviction signal",
	}, []string{"eviction_signal"})
	return []prometheus.Collector{
		k.startedPods, k.startedPodsErrors, k.startedContainers, k.startedContainersErrors, k.restartedPods, k.evictions,
	}
}
