package agent

import v1 "k8s.io/api/core/v1"

// Event reasons, as the kubelet records them (pkg/kubelet/events).
const (
	EventPulling           = "Pulling"
	EventPulled            = "Pulled"
	EventFailed            = "Failed"
	EventErrImageNeverPull = "ErrImageNeverPull"
	EventInspectFailed     = "InspectFailed"
	// EventFailedToRetrieveImagePullSecret is a pod event: some of its
	// imagePullSecrets could not be read.
	EventFailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"
	EventCreated                         = "Created"
	EventStarted                         = "Started"
	EventKilling                         = "Killing"
	EventBackOff                         = "BackOff"
	EventUnhealthy                       = "Unhealthy"
	EventProbeWarning                    = "ProbeWarning"
	EventFailedPostStartHook             = "FailedPostStartHook"
	EventFailedPreStopHook               = "FailedPreStopHook"
	EventDeadlineExceeded                = "DeadlineExceeded"
	EventSandboxChanged                  = "SandboxChanged"
	EventFailedCreateSandbox             = "FailedCreatePodSandBox"
	EventContainerGCFailed               = "ContainerGCFailed"
	// EventMissingClusterDNS: a pod of a cluster-DNS policy got the
	// node's resolv.conf (no --cluster-dns); on the node and the pod.
	EventMissingClusterDNS = "MissingClusterDNS"
	// EventFailedNodeDeclaredFeaturesCheck: a pod update needs node
	// features the node does not declare.
	EventFailedNodeDeclaredFeaturesCheck = "FailedNodeDeclaredFeaturesCheck"
)

// EventRecorder records and keeps the events of the node and its pods
// (e.g. an *events.Recorder, shared with the prober). All methods are safe
// for concurrent use and never block for long.
type EventRecorder interface {
	// PodEvent records an event about pod itself.
	PodEvent(pod *v1.Pod, typ, reason, msg string)
	// ContainerEvent records an event about container of pod.
	ContainerEvent(pod *v1.Pod, container, typ, reason, msg string)
	// NodeEvent records an event about this node.
	NodeEvent(typ, reason, msg string)
	// List returns copies of the kept events, oldest first.
	List() []v1.Event
}

// reasonCrashLoopBackOff is the waiting reason of a container whose
// restart the back-off holds (A.15).
const reasonCrashLoopBackOff = "CrashLoopBackOff"
