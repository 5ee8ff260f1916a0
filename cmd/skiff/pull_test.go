package main

import (
	"strings"
	"testing"
)

// The kubelet's pull flags with its defaults (serialized) and its refusal
// of a parallel bound above 1 with serialized pulls, before anything
// starts (E.19).
func TestAgentPullFlags_E19(t *testing.T) {
	cmd := newAgentCmd()
	for flag, want := range map[string]string{"serialize-image-pulls": "true", "max-parallel-image-pulls": "0"} {
		if f := cmd.Flags().Lookup(flag); f == nil || f.DefValue != want {
			t.Errorf("--%s default %v, want %s", flag, f, want)
		}
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--max-parallel-image-pulls=2"}, "--max-parallel-image-pulls cannot be larger than 1 unless --serialize-image-pulls is set to false"},
		{[]string{"--serialize-image-pulls=false", "--max-parallel-image-pulls=-1"}, "--max-parallel-image-pulls -1 must not be negative"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := newAgentCmd()
			cmd.SetArgs(append(tt.args, "--root-dir", t.TempDir()+"/never-created"))
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.ExecuteContext(t.Context())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
}
