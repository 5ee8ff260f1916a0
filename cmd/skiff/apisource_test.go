package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestKubeAPIClientFlags: the API client's limits default to the
// kubelet's (50 QPS, burst 100), its content type to JSON; limits that are
// not positive and other content types are refused.
func TestKubeAPIClientFlags(t *testing.T) {
	var o apiOptions
	f := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	addAPIFlags(f, &o)
	if err := f.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.kubeAPIQPS != 50 || o.kubeAPIBurst != 100 || o.kubeAPIContentType != "application/json" {
		t.Errorf("defaults: qps %v burst %d content type %q, want the kubelet's 50 and 100, and JSON",
			o.kubeAPIQPS, o.kubeAPIBurst, o.kubeAPIContentType)
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kube-api-qps=0"}, "--kube-api-qps"},
		{[]string{"--kube-api-burst=-1"}, "--kube-api-qps"},
		{[]string{"--kube-api-content-type=application/yaml"}, "--kube-api-content-type"},
	} {
		var o apiOptions
		f := pflag.NewFlagSet("agent", pflag.ContinueOnError)
		addAPIFlags(f, &o)
		if err := f.Parse(append(tc.args, "--kubeconfig="+kc)); err != nil {
			t.Fatal(err)
		}
		_, err := o.newAPISource("n", nil, nil, nil, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want one naming %s", tc.args, err, tc.want)
		}
	}
}
