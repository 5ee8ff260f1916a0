package node

import (
	"context"
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/internal/diskpressure"
	"github.com/skiffnode/skiff/internal/nodestatus"
	"github.com/skiffnode/skiff/nodeshutdown"
)

// diskPaths are the directories whose file systems decide DiskPressure:
// nodefs, the root dir and the pod logs; imagefs, the managed containerd's
// root (an external runtime's images are where that runtime keeps them,
// which skiff does not know).
func (n *Node) diskPaths() []diskpressure.Path {
	paths := []diskpressure.Path{{Signal: "nodefs", Dir: n.cfg.RootDir}}
	if n.cfg.PodLogsDir != "" {
		paths = append(paths, diskpressure.Path{Signal: "nodefs", Dir: n.cfg.PodLogsDir})
	}
	if n.cfg.RuntimeEndpoint == "" {
		paths = append(paths, diskpressure.Path{Signal: "imagefs", Dir: filepath.Join(n.cfg.RootDir, "containerd")})
	}
	return paths
}

// withDiskPressure sets the node's DiskPressure from m.
func withDiskPressure(facts func(context.Context) (nodestatus.Facts, nodestatus.Health), m *diskpressure.Monitor) func(context.Context) (nodestatus.Facts, nodestatus.Health) {
	return func(ctx context.Context) (nodestatus.Facts, nodestatus.Health) {
		f, h := facts(ctx)
		h.DiskPressure = m.Pressure() != ""
		return f, h
	}
}

// diskPressureAdmitter rejects a new pod while the node has DiskPressure,
// as the kubelet's eviction manager admits pods: reason Evicted, "The node
// had condition: [DiskPressure]. ", critical pods excepted (static pods
// and those of system-critical priority, the kubelet's IsCriticalPod).
func diskPressureAdmitter(m *diskpressure.Monitor) agent.PodAdmitter {
	return func(pod *v1.Pod) (bool, string, string) {
		if m.Pressure() == "" || criticalPod(pod) {
			return true, "", ""
		}
		return false, "Evicted", "The node had condition: [DiskPressure]. "
	}
}

// criticalPod is the kubelet's IsCriticalPod: a static pod (its
// kubernetes.io/config.source names another source than the API server)
// or one of at least system-cluster-critical's priority.
func criticalPod(pod *v1.Pod) bool {
	if src, ok := pod.Annotations["kubernetes.io/config.source"]; ok && src != "api" {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= nodeshutdown.SystemCriticalPriority
}
