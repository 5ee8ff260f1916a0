package main

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/skiffnode/skiff/node"
)

// TestKubeletAPIFlagDefaults (issue 29): the kubelet API is shut by
// default. Anonymous requests are refused everywhere; with an API server
// (joins) tokens go through TokenReview and requests through Webhook
// authorization, the kubelet's configuration-file defaults; with one on
// this machine (local, --control-plane) it listens on loopback only;
// without one it is served only when --port is given. Flags given win.
func TestKubeletAPIFlagDefaults(t *testing.T) {
	tests := []struct {
		name         string
		args         []string
		joins, local bool
		want         node.KubeletAPIConfig
	}{
		{name: "static only", want: node.KubeletAPIConfig{AuthorizationMode: node.AuthzAlwaysAllow}},
		{name: "static only with --port", args: []string{"--port=10250", "--client-ca-file=/ca.crt"},
			want: node.KubeletAPIConfig{Port: 10250, ClientCAFile: "/ca.crt", AuthorizationMode: node.AuthzAlwaysAllow}},
		{name: "--kubeconfig", joins: true,
			want: node.KubeletAPIConfig{Port: 10250, TokenWebhook: true, AuthorizationMode: node.AuthzWebhook}},
		{name: "--control-plane", joins: true, local: true,
			want: node.KubeletAPIConfig{Port: 10250, BindAddress: "127.0.0.1", TokenWebhook: true, AuthorizationMode: node.AuthzWebhook}},
		{name: "reopened", joins: true, local: true,
			args: []string{"--anonymous-auth", "--authorization-mode=AlwaysAllow", "--authentication-token-webhook=false", "--bind-address=0.0.0.0"},
			want: node.KubeletAPIConfig{Port: 10250, BindAddress: "0.0.0.0", AnonymousAuth: true, AuthorizationMode: node.AuthzAlwaysAllow}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &node.KubeletAPIConfig{}
			f := pflag.NewFlagSet("agent", pflag.ContinueOnError)
			addKubeletAPIFlags(f, o)
			if err := f.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			resolveKubeletAPI(o, f, tt.joins, tt.local)
			if *o != tt.want {
				t.Errorf("resolved = %+v, want %+v", *o, tt.want)
			}
		})
	}
}
