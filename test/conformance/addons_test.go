package main

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestAddonManifests: the add-ons render as kubeadm's objects, in an order
// kubectl applies (service accounts before their users), with the values
// filled in where kubeadm's templates have them.
func TestAddonManifests(t *testing.T) {
	v := addonValues{
		Server: "https://192.0.2.2:6443", ClusterCIDR: "10.88.0.0/16", DNSIP: "10.96.0.10", DNSDomain: "cluster.local",
		KubeProxyImage: "registry.k8s.io/kube-proxy:v1.37.2", CoreDNSImage: "registry.k8s.io/coredns/coredns:v1.14.6",
	}
	out, err := addonManifests(v)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	docs := map[string]string{}
	for _, doc := range strings.Split(out, "\n---\n") {
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.UnmarshalStrict([]byte(doc), &meta); err != nil && !strings.Contains(err.Error(), "unknown field") {
			t.Fatalf("%v in\n%s", err, doc)
		}
		id := meta.Kind + "/" + meta.Metadata.Name
		kinds = append(kinds, id)
		docs[id] = doc
	}
	want := "ServiceAccount/kube-proxy ClusterRoleBinding/kubeadm:node-proxier ConfigMap/kube-proxy DaemonSet/kube-proxy " +
		"ServiceAccount/coredns ClusterRole/system:coredns ClusterRoleBinding/system:coredns ConfigMap/coredns Deployment/coredns Service/kube-dns"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("objects %s\nwant    %s", got, want)
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict([]byte(docs["DaemonSet/kube-proxy"]), &ds); err != nil {
		t.Fatal(err)
	}
	if c := ds.Spec.Template.Spec.Containers[0]; c.Image != v.KubeProxyImage || !ds.Spec.Template.Spec.HostNetwork {
		t.Errorf("kube-proxy: image %q, hostNetwork %v", c.Image, ds.Spec.Template.Spec.HostNetwork)
	}
	var cm v1.ConfigMap
	if err := yaml.UnmarshalStrict([]byte(docs["ConfigMap/kube-proxy"]), &cm); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"server: " + v.Server, "mode: nftables", "clusterCIDR: " + v.ClusterCIDR} {
		if !strings.Contains(cm.Data["kubeconfig.conf"]+cm.Data["config.conf"], w) {
			t.Errorf("kube-proxy ConfigMap lacks %q: %v", w, cm.Data)
		}
	}
	var svc v1.Service
	if err := yaml.UnmarshalStrict([]byte(docs["Service/kube-dns"]), &svc); err != nil || svc.Spec.ClusterIP != v.DNSIP {
		t.Errorf("kube-dns: clusterIP %q (%v), want %s", svc.Spec.ClusterIP, err, v.DNSIP)
	}
	var dep appsv1.Deployment
	if err := yaml.UnmarshalStrict([]byte(docs["Deployment/coredns"]), &dep); err != nil || dep.Spec.Template.Spec.Containers[0].Image != v.CoreDNSImage {
		t.Errorf("coredns: %v, image %q", err, dep.Spec.Template.Spec.Containers[0].Image)
	}
	if cf := docs["ConfigMap/coredns"]; !strings.Contains(cf, "kubernetes cluster.local in-addr.arpa ip6.arpa") || !strings.Contains(cf, "disable success cluster.local") {
		t.Errorf("Corefile without the cluster domain:\n%s", cf)
	}
}

func TestServerAt(t *testing.T) {
	got, err := serverAt("https://127.0.0.1:38211", "192.0.2.2")
	if err != nil || got != "https://192.0.2.2:38211" {
		t.Errorf("serverAt = %q, %v", got, err)
	}
}
