package node

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/volumes"
)

// agentVolumes adapts a volumes.Manager to the agent's volume port,
// translating its results into the agent's types.
type agentVolumes struct {
	*volumes.Manager
}

var _ agent.VolumeManager = agentVolumes{}

// SetUp is the manager's, with its volumes as the agent's and a
// *volumes.SetUpError as an *agent.VolumeSetUpError. The returned map is
// the agent's own copy.
func (v agentVolumes) SetUp(ctx context.Context, pod *v1.Pod) (map[string]agent.PodVolume, error) {
	vols, err := v.Manager.SetUp(ctx, pod)
	if err != nil {
		return nil, setUpErrorForAgent(err)
	}
	out := make(map[string]agent.PodVolume, len(vols))
	for name, vol := range vols {
		out[name] = agent.PodVolume{HostPath: vol.HostPath, ReadOnly: vol.ReadOnly}
	}
	return out, nil
}

// setUpErrorForAgent is err with a volume's set-up error as the agent's;
// any other error as it is.
func setUpErrorForAgent(err error) error {
	var se *volumes.SetUpError
	if !errors.As(err, &se) {
		return err
	}
	return &agent.VolumeSetUpError{Volume: se.Volume, Err: se.Err}
}

// SubPath is the manager's SubPathMount: the subPath checked and pinned
// by a bind mount under the pod's directory.
func (v agentVolumes) SubPath(pod *v1.Pod, container string, index int, volume string, vol agent.PodVolume, sub string) (string, error) {
	return v.SubPathMount(pod.UID, volume, container, index, vol.HostPath, sub)
}

// CheckSizeLimits is the manager's, with its violation as the agent's.
func (v agentVolumes) CheckSizeLimits(pod *v1.Pod) (*agent.SizeLimitExceeded, error) {
	sv, err := v.Manager.CheckSizeLimits(pod)
	if err != nil || sv == nil {
		return nil, err
	}
	return &agent.SizeLimitExceeded{Volume: sv.Volume, Limit: sv.Limit, Used: sv.Used}, nil
}
