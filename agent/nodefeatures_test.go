package agent

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/skiffnode/skiff/internal/nodefeatures"
	"github.com/skiffnode/skiff/runtime"
)

// TestUpdateNeedsUndeclaredFeature: an update that resizes a running
// non-sidecar init container gets the kubelet's
// FailedNodeDeclaredFeaturesCheck warning on a node that does not declare
// InPlacePodVerticalScalingInitContainers, and none on skiff's node, which
// declares it.
func TestUpdateNeedsUndeclaredFeature(t *testing.T) {
	for _, tt := range []struct {
		name        string
		implemented []string
		want        string
	}{
		{"declared", nodefeatures.Implemented(), ""},
		{"not declared", nil, "Pod requires node features that are not available: InPlacePodVerticalScalingInitContainers"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rt := newFakeRuntime()
			cfg := testConfig(t, rt)
			declared, err := nodefeatures.New("v1.37.2", tt.implemented)
			if err != nil {
				t.Fatal(err)
			}
			cfg.DeclaredFeatures = declared
			h := runTestAgent(t, cfg)
			pod := testPod("Always", []string{"init"}, "app")
			h.src.ch <- []*v1.Pod{pod}
			h.eventually("init container running", func() bool {
				c, ok := rt.ContainerByName("uid1", "init")
				return ok && c.State == runtime.ContainerRunning
			})
			resized := pod.DeepCopy()
			resized.Generation++
			resized.Spec.InitContainers[0].Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m")}
			h.src.ch <- []*v1.Pod{resized}
			h.settle(3)
			var got string
			for _, ev := range h.agent.events.List() {
				if ev.Reason == EventFailedNodeDeclaredFeaturesCheck {
					if ev.Type != v1.EventTypeWarning || got != "" {
						t.Errorf("event %+v: want one Warning", ev)
					}
					got = ev.Message
				}
			}
			if got != tt.want {
				t.Errorf("FailedNodeDeclaredFeaturesCheck %q, want %q", got, tt.want)
			}
		})
	}
}
