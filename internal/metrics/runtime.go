package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/runtime"
)

// runtimeOp is one operation of the runtime port; it indexes
// runtimeMetrics.ops.
type runtimeOp int

// The runtime operations (see runtimeOp.name).
const (
	opVersion runtimeOp = iota
	opRunSandbox
	opStopSandbox
	opRemoveSandbox
	opSandboxStatus
	opListSandboxes
	opCreateContainer
	opStartContainer
	opStopContainer
	opRemoveContainer
	opListContainers
	opContainerStatus
	opExecSync
	opReopenContainerLog
	opUpdateContainerResources
	opImageStatus
	opPullImage
	opListImages
	opRemoveImage
	opImageFsInfo
	opExec
	opAttach
	opPortForward
	numRuntimeOps
)

// name is op's operation_type, the name the kubelet's instrumented CRI
// services (pkg/kubelet/kuberuntime/instrumented_services.go) give the CRI
// call behind it. The cheap ref listings (runtime.RefLister) are the same
// CRI calls as the full listings, and share their names.
func (op runtimeOp) name() string {
	switch op {
	case opVersion:
		return "version"
	case opRunSandbox:
		return "run_podsandbox"
	case opStopSandbox:
		return "stop_podsandbox"
	case opRemoveSandbox:
		return "remove_podsandbox"
	case opSandboxStatus:
		return "podsandbox_status"
	case opListSandboxes:
		return "list_podsandbox"
	case opCreateContainer:
		return "create_container"
	case opStartContainer:
		return "start_container"
	case opStopContainer:
		return "stop_container"
	case opRemoveContainer:
		return "remove_container"
	case opListContainers:
		return "list_containers"
	case opContainerStatus:
		return "container_status"
	case opExecSync:
		return "exec_sync"
	case opReopenContainerLog:
		return "reopen_container_log"
	case opUpdateContainerResources:
		return "update_container"
	case opImageStatus:
		return "image_status"
	case opPullImage:
		return "pull_image"
	case opListImages:
		return "list_images"
	case opRemoveImage:
		return "remove_image"
	case opImageFsInfo:
		return "image_fs_info"
	case opExec:
		return "exec"
	case opAttach:
		return "attach"
	case opPortForward:
		return "port_forward"
	}
	return "unknown"
}

// runtimeMetrics are kubelet_runtime_operations_total,
// kubelet_runtime_operations_duration_seconds and
// kubelet_runtime_operations_errors_total, with their children for every
// operation created up front, so that recording one is atomic updates
// only (no label lookup, no lock).
type runtimeMetrics struct {
	total, errors *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	ops           [numRuntimeOps]opMetrics
}

// opMetrics are one operation's children.
type opMetrics struct {
	total, errors prometheus.Counter
	duration      prometheus.Observer
}

func newRuntimeMetrics() *runtimeMetrics {
	m := &runtimeMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "runtime_operations_total",
			Help: "Cumulative number of runtime operations by operation type.",
		}, []string{"operation_type"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "runtime_operations_duration_seconds",
			Help:    "Duration in seconds of runtime operations. Broken down by operation type.",
			Buckets: runtimeOpBuckets(),
		}, []string{"operation_type"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "runtime_operations_errors_total",
			Help: "Cumulative number of runtime operation errors by operation type.",
		}, []string{"operation_type"}),
	}
	for op := range numRuntimeOps {
		name := op.name()
		m.ops[op] = opMetrics{
			total: m.total.WithLabelValues(name), errors: m.errors.WithLabelValues(name),
			duration: m.duration.WithLabelValues(name),
		}
	}
	return m
}

func (m *runtimeMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.total, m.duration, m.errors}
}

// InstrumentRuntime returns rt with each of its operations counted, timed
// and, when it fails, counted as an error under the kubelet's
// operation_type, as the kubelet instruments its CRI client. What rt
// implements besides runtime.Runtime is kept where skiff looks for it:
// runtime.RefLister (the relist's cheap listings; rt's own if it has
// them, else runtime.ListContainerRefs' fallback) and runtime.Streamer
// (only if rt is one). Safe for concurrent use if rt is; a call blocks as
// long as rt's does, and the recording adds a few atomic updates.
func (k *Kubelet) InstrumentRuntime(rt runtime.Runtime) runtime.Runtime {
	ir := &instrumentedRuntime{rt: rt, m: k.runtimeOps, clock: k.clock}
	if s, ok := rt.(runtime.Streamer); ok {
		return &instrumentedStreamer{instrumentedRuntime: ir, s: s}
	}
	return ir
}

// instrumentedRuntime is the decorator InstrumentRuntime returns.
type instrumentedRuntime struct {
	rt    runtime.Runtime
	m     *runtimeMetrics
	clock clock.PassiveClock
}

// instrumentedStreamer adds the instrumented runtime.Streamer of a
// runtime that has one.
type instrumentedStreamer struct {
	*instrumentedRuntime
	s runtime.Streamer
}

var (
	_ runtime.Runtime   = (*instrumentedRuntime)(nil)
	_ runtime.RefLister = (*instrumentedRuntime)(nil)
	_ runtime.Streamer  = (*instrumentedStreamer)(nil)
)

// record records one call of op that began at start and returned err.
func (r *instrumentedRuntime) record(op runtimeOp, start time.Time, err error) {
	m := &r.m.ops[op]
	m.total.Inc()
	m.duration.Observe(r.clock.Since(start).Seconds())
	if err != nil {
		m.errors.Inc()
	}
}
