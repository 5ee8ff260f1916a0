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

// TestControlPlaneTrustsShimClients (issue 17, logs/exec through the
// shim): with --control-plane and no --client-ca-file, the kubelet API
// trusts the shim's CA (<root-dir>/apiserver/pki/ca.crt) for client
// certificates; a given --client-ca-file wins; without --control-plane
// nothing changes; the other kubelet API flags keep their defaults, and
// --anonymous-auth=false is then valid.
func TestControlPlaneTrustsShimClients(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		wantCA string
	}{
		{"control plane", []string{"--control-plane"}, "/r/apiserver/pki/ca.crt"},
		{"control plane, no anonymous", []string{"--control-plane", "--anonymous-auth=false"}, "/r/apiserver/pki/ca.crt"},
		{"control plane, own client CA", []string{"--control-plane", "--client-ca-file=/ca.pem"}, "/ca.pem"},
		{"no control plane", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cp controlPlaneOptions
			var k kubeletAPIOptions
			f := pflag.NewFlagSet("agent", pflag.ContinueOnError)
			addControlPlaneFlags(f, &cp)
			addKubeletAPIFlags(f, &k)
			if err := f.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cp.trustShimClients("/r", &k)
			if k.clientCAFile != tc.wantCA {
				t.Errorf("--client-ca-file %q, want %q", k.clientCAFile, tc.wantCA)
			}
			if k.port != defaultKubeletPort || k.authorizationMode != authzAlwaysAllow || k.tokenWebhook {
				t.Errorf("other kubelet API flags changed: %+v", k)
			}
			if err := k.validate(cp.enabled); err != nil {
				t.Errorf("validate: %v", err)
			}
		})
	}
}
