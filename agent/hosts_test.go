package agent

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/runtime"
)

// TestPodHostname_G2: host name, domain and the kernel host name with
// setHostnameAsFQDN, as the kubelet computes them.
func TestPodHostname_G2(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	yes, no := true, false
	tests := []struct {
		name                 string
		podName, host, sub   string
		override             *string
		fqdn                 *bool
		wantHost, wantDomain string
		wantKernel, wantErr  string
	}{
		{name: "pod name", podName: "web-node1", wantHost: "web-node1", wantKernel: "web-node1"},
		{name: "spec.hostname", podName: "web-node1", host: "db-0", wantHost: "db-0", wantKernel: "db-0"},
		{name: "long name cut to 63 without a trailing dash", podName: long + "x", wantHost: strings.Repeat("a", 62), wantKernel: strings.Repeat("a", 62)},
		{name: "subdomain", podName: "p", host: "db-0", sub: "db", wantHost: "db-0", wantDomain: "db.ns.svc.cluster.local", wantKernel: "db-0"},
		{name: "setHostnameAsFQDN", podName: "p", host: "db-0", sub: "db", fqdn: &yes, wantHost: "db-0", wantDomain: "db.ns.svc.cluster.local", wantKernel: "db-0.db.ns.svc.cluster.local"},
		{name: "setHostnameAsFQDN false", podName: "p", host: "db-0", sub: "db", fqdn: &no, wantHost: "db-0", wantDomain: "db.ns.svc.cluster.local", wantKernel: "db-0"},
		{name: "setHostnameAsFQDN without subdomain", podName: "p", fqdn: &yes, wantHost: "p", wantKernel: "p"},
		{name: "hostnameOverride, a subdomain, wins over hostname and subdomain", podName: "p", host: "db-0", sub: "db",
			override: ptr.To("db-0.example.com"), wantHost: "db-0.example.com", wantKernel: "db-0.example.com"},
		{name: "hostnameOverride cut to 63", podName: "p", override: ptr.To(strings.Repeat("o", 62) + ".b"), wantHost: strings.Repeat("o", 62), wantKernel: strings.Repeat("o", 62)},
		{
			name: "FQDN over 64 characters", podName: "p", host: strings.Repeat("h", 41), sub: "db", fqdn: &yes,
			wantHost: strings.Repeat("h", 41), wantDomain: "db.ns.svc.cluster.local",
			wantErr: "failed to construct FQDN from pod hostname and cluster domain, FQDN " + strings.Repeat("h", 41) + ".db.ns.svc.cluster.local is too long (64 characters is the max, 65 characters requested)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.podName, Namespace: "ns"},
				Spec: v1.PodSpec{Hostname: tc.host, Subdomain: tc.sub, SetHostnameAsFQDN: tc.fqdn, HostnameOverride: tc.override}}
			host, domain, err := podHostnameAndDomain(pod, DefaultClusterDomain)
			if err != nil || host != tc.wantHost || domain != tc.wantDomain {
				t.Fatalf("podHostnameAndDomain() = %q, %q, %v; want %q, %q", host, domain, err, tc.wantHost, tc.wantDomain)
			}
			d := &podEnv{}
			kernel, err := d.sandboxHostname(pod)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("sandboxHostname() error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || kernel != tc.wantKernel {
				t.Fatalf("sandboxHostname() = %q, %v; want %q", kernel, err, tc.wantKernel)
			}
		})
	}
	bad := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{HostnameOverride: ptr.To("Bad_Name")}}
	if _, _, err := podHostnameAndDomain(bad, DefaultClusterDomain); err == nil || !strings.Contains(err.Error(), `pod HostnameOverride "Bad_Name" is not a valid DNS subdomain`) {
		t.Errorf("invalid hostnameOverride: %v", err)
	}
	// 64 characters exactly is allowed.
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: v1.PodSpec{Hostname: strings.Repeat("h", 40), Subdomain: "db", SetHostnameAsFQDN: &yes}}
	if k, err := (&podEnv{}).sandboxHostname(pod); err != nil || len(k) != 64 {
		t.Errorf("64-character FQDN: %q, %v", k, err)
	}
}

// TestEtcHostsContent_G2: the kubelet's exact managed hosts files.
func TestEtcHostsContent_G2(t *testing.T) {
	aliases := []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"db", "db.example.com"}}, {IP: "fd00::9", Hostnames: []string{"v6"}}}
	const localhost = "# Kubernetes-managed hosts file.\n" +
		"127.0.0.1\tlocalhost\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\n" +
		"fe00::0\tip6-mcastprefix\n" +
		"fe00::1\tip6-allnodes\n" +
		"fe00::2\tip6-allrouters\n"
	tests := []struct {
		name   string
		got    []byte
		expect string
	}{
		{"pod IP and hostname", managedHostsContent([]string{"10.88.0.5"}, "web", "", nil), localhost + "10.88.0.5\tweb\n"},
		{"dual stack with FQDN", managedHostsContent([]string{"10.88.0.5", "fd00::5"}, "db-0", "db.ns.svc.cluster.local", nil),
			localhost + "10.88.0.5\tdb-0.db.ns.svc.cluster.local\tdb-0\n" + "fd00::5\tdb-0.db.ns.svc.cluster.local\tdb-0\n"},
		{"host aliases", managedHostsContent([]string{"10.88.0.5"}, "web", "", aliases),
			localhost + "10.88.0.5\tweb\n" + "\n# Entries added by HostAliases.\n" + "10.1.2.3\tdb\tdb.example.com\n" + "fd00::9\tv6\n"},
		{"host network", hostNetworkHostsContent([]byte("127.0.0.1 localhost\n192.0.2.1 node\n"), aliases[:1]),
			"# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n192.0.2.1 node\n" + "\n# Entries added by HostAliases.\n" + "10.1.2.3\tdb\tdb.example.com\n"},
		{"host network without aliases", hostNetworkHostsContent([]byte("x\n"), nil), "# Kubernetes-managed hosts file (host network).\nx\n"},
	}
	for _, tc := range tests {
		if string(tc.got) != tc.expect {
			t.Errorf("%s:\ngot  %q\nwant %q", tc.name, tc.got, tc.expect)
		}
	}
}

// TestEtcHostsMount_G2: which containers get the pod's hosts file, where
// it lives, and that its content is current at each start.
func TestEtcHostsMount_G2(t *testing.T) {
	nodeHosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(nodeHosts, []byte("192.0.2.1 node\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := &runtime.SandboxStatus{IP: "10.88.0.5"}
	tests := []struct {
		name        string
		hostNetwork bool
		sb          *runtime.SandboxStatus
		podsDir     bool
		mounts      []v1.VolumeMount
		wantContent string // "" : no mount
	}{
		{name: "pod network", sb: sb, podsDir: true, wantContent: "10.88.0.5\tweb\n\n# Entries added by HostAliases.\n10.1.2.3\tdb\n"},
		{name: "host network", hostNetwork: true, sb: &runtime.SandboxStatus{}, podsDir: true, wantContent: "# Kubernetes-managed hosts file (host network).\n192.0.2.1 node\n"},
		{name: "no pod IP", sb: &runtime.SandboxStatus{}, podsDir: true},
		{name: "no pods dir", sb: sb},
		{name: "a volume at /etc/hosts", sb: sb, podsDir: true, mounts: []v1.VolumeMount{{Name: "h", MountPath: "/etc/hosts"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &workerDeps{env: podEnv{nodeHostsFile: nodeHosts}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if tc.podsDir {
				d.podsDir = t.TempDir()
			}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"},
				Spec: v1.PodSpec{HostNetwork: tc.hostNetwork, HostAliases: []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"db"}}},
					Containers: []v1.Container{{Name: "c", VolumeMounts: tc.mounts}}}}
			if tc.hostNetwork {
				pod.Spec.HostAliases = nil
			}
			w := newPodWorker(d, pod, nil)
			spec := &runtime.ContainerSpec{}
			if err := w.addEtcHostsMount(&pod.Spec.Containers[0], spec, tc.sb); err != nil {
				t.Fatalf("addEtcHostsMount() = %v", err)
			}
			if tc.wantContent == "" {
				if len(spec.Mounts) != 0 {
					t.Fatalf("mounts = %v, want none", spec.Mounts)
				}
				return
			}
			want := runtime.Mount{HostPath: filepath.Join(d.podsDir, "u1", "etc-hosts"), ContainerPath: "/etc/hosts"}
			if len(spec.Mounts) != 1 || spec.Mounts[0] != want {
				t.Fatalf("mounts = %v, want [%v]", spec.Mounts, want)
			}
			b, err := os.ReadFile(want.HostPath)
			if err != nil || !strings.HasSuffix(string(b), tc.wantContent) {
				t.Fatalf("etc-hosts = %q, %v; want it to end with %q", b, err, tc.wantContent)
			}
			if fi, _ := os.Stat(want.HostPath); fi.Mode().Perm() != 0o644 {
				t.Errorf("mode = %v, want 0644", fi.Mode().Perm())
			}
			// A restart with a new IP rewrites the file.
			if !tc.hostNetwork {
				if err := w.addEtcHostsMount(&pod.Spec.Containers[0], &runtime.ContainerSpec{}, &runtime.SandboxStatus{IP: "10.88.0.9"}); err != nil {
					t.Fatal(err)
				}
				if b, _ := os.ReadFile(want.HostPath); !strings.Contains(string(b), "10.88.0.9\tweb\n") {
					t.Errorf("after restart: %q", b)
				}
			}
		})
	}
}
