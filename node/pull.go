package node

import (
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/images"
	"github.com/skiffnode/skiff/runtime"
)

// pullOptions are the kubelet's image pull flags.
type PullConfig struct {
	Serialize   bool
	MaxParallel int
}

func (o *PullConfig) config() images.PullerConfig {
	return images.PullerConfig{SerializePulls: o.Serialize, MaxParallelPulls: o.MaxParallel}
}

// puller is the node's image puller on rt, shared by the pods' pulls.
func (o *PullConfig) puller(rt runtime.Images) (*images.Puller, error) {
	return images.NewPuller(rt, clock.RealClock{}, o.config())
}
