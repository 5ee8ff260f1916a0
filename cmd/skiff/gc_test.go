package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// The GC and log rotation flags have the kubelet's names and defaults,
// and bad values are refused before anything starts (F.3, F.9).
func TestAgentGCFlags_F3_F9(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{args: nil},
		{args: []string{"--image-gc-high-threshold=1", "--image-gc-low-threshold=0", "--image-minimum-gc-age=0s"}},
		{args: []string{"--image-gc-high-threshold=80", "--image-gc-low-threshold=80"}, wantErr: "(--image-gc-low-threshold) 80 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 80"},
		{args: []string{"--image-gc-high-threshold=101"}, wantErr: "must be between 0 and 100"},
		{args: []string{"--image-maximum-gc-age=1m"}, wantErr: "imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 2m0s"},
		{args: []string{"--container-log-max-files=1"}, wantErr: "(--container-log-max-files) 1 must be greater than 1"},
		{args: []string{"--container-log-max-size=lots"}, wantErr: "--container-log-max-size"},
		{args: []string{"--container-log-monitor-interval=1s"}, wantErr: "greater than or equal to 3s"},
		{args: []string{"--container-log-max-workers=0"}, wantErr: "(--container-log-max-workers) 0"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			err := gcOptionsOf(t, tc.args).validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("validate() = %v, want %q", err, tc.wantErr)
			}
		})
	}
	o := gcOptionsOf(t, nil)
	if o.image.HighThresholdPercent != 85 || o.image.LowThresholdPercent != 80 || o.image.MinAge.String() != "2m0s" || o.image.MaxAge != 0 ||
		o.container.MinAge != 0 || o.container.MaxPerPodContainer != 1 || o.container.MaxContainers != -1 ||
		o.logMaxSize != "10Mi" || o.logMaxFiles != 5 || o.logMaxWorkers != 1 || o.logMonitorInterval.String() != "10s" ||
		o.imageGCPeriod.String() != "5m0s" || o.containerGCPeriod.String() != "1m0s" {
		t.Errorf("defaults %+v are not the kubelet's", o)
	}
}

// gcOptionsOf parses args with the agent's GC flags.
func gcOptionsOf(t *testing.T, args []string) *gcOptions {
	t.Helper()
	o := &gcOptions{}
	f := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	addGCFlags(f, o)
	if err := f.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}
