package node

import (
	"context"
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/userns"
)

// runtimeFeatures asks the runtime what it supports and names it for
// messages ("containerd v2.4.2"). A runtime that cannot say supports
// none of the optional features.
func runtimeFeatures(ctx context.Context, rt runtime.Runtime) (runtime.Features, string) {
	name := "the runtime"
	if v, err := rt.Version(ctx); err == nil {
		name = v.Name + " " + v.Version
	}
	f, err := rt.Features(ctx)
	if err != nil {
		return runtime.Features{}, name
	}
	return f, name
}

// featureAdmitter refuses, at admission, the pods that need a feature the
// runtime lacks, naming the feature and the runtime: no pod is started
// without what it asked for.
func featureAdmitter(f runtime.Features, runtimeName string) agent.PodAdmitter {
	return func(pod *v1.Pod) (bool, string, string) {
		reason, msg := featureFailure(pod, f, runtimeName)
		return reason == "", reason, msg
	}
}

// featureFailure is the first feature pod needs that f lacks, as an
// admission reason and message; "" when it needs none. Pure.
func featureFailure(pod *v1.Pod, f runtime.Features, runtimeName string) (reason, message string) {
	if hu := pod.Spec.HostUsers; hu != nil && !*hu && !f.UserNamespaces {
		return "UserNamespacesNotSupported", fmt.Sprintf("can't set `spec.hostUsers: false`, runtime does not support user namespaces (%s)", runtimeName)
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SupplementalGroupsPolicy != nil &&
		*sc.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict && !f.SupplementalGroupsPolicy {
		return "SupplementalGroupsPolicyNotSupported", "SupplementalGroupsPolicy=Strict is not supported in this node"
	}
	for _, v := range pod.Spec.Volumes {
		if v.Image != nil && !f.ImageVolumes {
			return "ImageVolumesNotSupported", fmt.Sprintf("volume %q: image volumes are not supported by the runtime (%s)", v.Name, runtimeName)
		}
	}
	return "", ""
}

// newUserNamespaces is the allocator of the pods' user namespaces, holding
// the blocks of the pods on disk (<root-dir>/pods/<uid>/userns).
func newUserNamespaces(rootDir string, maxPods int64) (*userns.Manager, error) {
	return userns.New(userns.Config{PodsDir: filepath.Join(rootDir, "pods"), MaxPods: int(maxPods)})
}
