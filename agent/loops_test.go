package agent

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestAgentLoops: the relist always runs; each other loop runs exactly
// when its Config asks for it.
func TestAgentLoops(t *testing.T) {
	policy := DefaultContainerGCPolicy()
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want []string
	}{
		{"bare", func(*Config) {}, []string{"relist"}},
		{"probe changes", func(c *Config) { c.ProbeChanges = make(chan types.UID) }, []string{"relist", "probe changes"}},
		{"volumes", func(c *Config) { c.Volumes = &tearDownRecorder{} }, []string{"relist", "emptyDir size limits"}},
		{"object changes", func(c *Config) { c.ObjectChanges = make(chan struct{}) }, []string{"relist", "volume refresh"}},
		{"container GC", func(c *Config) { c.ContainerGC = &policy }, []string{"relist", "container GC"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, newFakeRuntime())
			tc.set(&cfg)
			a, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range a.loops() {
				got = append(got, l.name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("loops %v, want %v", got, tc.want)
			}
		})
	}
}
