package main

import (
	"slices"
	"testing"
)

func TestSelectRuntimes(t *testing.T) {
	tests := []struct {
		list        string
		want        []string
		wantPartial bool
		wantErr     bool
	}{
		{"managed,external", []string{"managed", "external"}, false, false},
		{"external,managed", []string{"managed", "external"}, false, false}, // managed always first
		{"external", []string{"external"}, true, false},
		{"managed", []string{"managed"}, true, false},
		{"managed,docker", nil, false, true},
		{"", nil, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.list, func(t *testing.T) {
			cfg := modes["quick"]
			got, err := cfg.selectRuntimes(tt.list)
			if (err != nil) != tt.wantErr {
				t.Fatalf("selectRuntimes(%q) error %v, want error %v", tt.list, err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) || (err == nil && cfg.partial != tt.wantPartial) {
				t.Errorf("selectRuntimes(%q) = %v (partial %v), want %v (partial %v)", tt.list, got, cfg.partial, tt.want, tt.wantPartial)
			}
		})
	}
	if def := modes["quick"]; len(runtimeNames) != 2 || def.partial {
		t.Errorf("the default runs both runtimes, not partial: %v", runtimeNames)
	}
}
