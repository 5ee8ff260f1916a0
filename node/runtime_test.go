package node

import (
	"strings"
	"testing"
)

func TestPodsPerShim(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string
		flag     int
		want     int
	}{
		{"managed, default", "", 0, DefaultPodsPerShim},
		{"managed, one per pod", "", 1, 1},
		{"managed, set", "", 32, 32},
		{"external, default: containerd's own", "unix:///run/containerd/containerd.sock", 0, 1},
		{"external, asked for", "unix:///run/containerd/containerd.sock", 8, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podsPerShim(&Config{RuntimeEndpoint: tt.endpoint, PodsPerShim: tt.flag}); got != tt.want {
				t.Errorf("podsPerShim = %d, want %d", got, tt.want)
			}
		})
	}
	c := &Config{PodsPerShim: -1}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--pods-per-shim -1") {
		t.Errorf("Validate with --pods-per-shim -1: %v, want an error naming the flag", err)
	}
}
