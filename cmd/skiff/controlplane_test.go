package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestControlPlaneFlags: --control-plane is off by default; with it, the
// flags that name another API server or another way to get the node's
// certificate are refused, naming them, as is a port out of range.
func TestControlPlaneFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" : valid
	}{
		{nil, ""},
		{[]string{"--kubeconfig=/k"}, ""},
		{[]string{"--control-plane"}, ""},
		{[]string{"--control-plane", "--kubeconfig=/k"}, "--kubeconfig"},
		{[]string{"--control-plane", "--bootstrap-kubeconfig=/b"}, "--bootstrap-kubeconfig"},
		{[]string{"--control-plane", "--rotate-certificates"}, "--rotate-certificates"},
		{[]string{"--control-plane", "--control-plane-port=70000"}, "--control-plane-port"},
	} {
		var api apiOptions
		var cp controlPlaneOptions
		f := pflag.NewFlagSet("agent", pflag.ContinueOnError)
		addAPIFlags(f, &api)
		addControlPlaneFlags(f, &cp)
		if err := f.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if cp.port != 6443 && tc.want == "" {
			t.Errorf("%v: port %d, want 6443 by default", tc.args, cp.port)
		}
		err := cp.validate(&api)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: err %v, want one naming %s", tc.args, err, tc.want)
		}
	}
}
