package main

import (
	"github.com/spf13/pflag"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/images"
	"github.com/skiffnode/skiff/runtime"
)

// pullOptions are the kubelet's image pull flags.
type pullOptions struct {
	serialize   bool
	maxParallel int
}

func addPullFlags(f *pflag.FlagSet, o *pullOptions) {
	f.BoolVar(&o.serialize, "serialize-image-pulls", true, "Pull images one at a time.")
	f.IntVar(&o.maxParallel, "max-parallel-image-pulls", 0, "maximum number of image pulls in parallel (0: no limit); cannot be larger than 1 unless --serialize-image-pulls is set to false")
}

func (o *pullOptions) config() images.PullerConfig {
	return images.PullerConfig{SerializePulls: o.serialize, MaxParallelPulls: o.maxParallel}
}

// puller is the node's image puller on rt, shared by the pods' pulls.
func (o *pullOptions) puller(rt runtime.Images) (*images.Puller, error) {
	return images.NewPuller(rt, clock.RealClock{}, o.config())
}
