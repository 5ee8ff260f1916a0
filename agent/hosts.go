package agent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/skiffnode/skiff/runtime"
)

// The pod's host name and /etc/hosts, as the kubelet makes them (checklist
// G.2; GeneratePodHostNameAndDomain, GetNodenameForKernel, makeHostsMount).

const (
	etcHostsPath = "/etc/hosts"
	// etcHostsFile is the managed hosts file in the pod's directory
	// (<root-dir>/pods/<uid>/etc-hosts, the kubelet's name).
	etcHostsFile = "etc-hosts"
	// DefaultClusterDomain is Config.ClusterDomain's default.
	DefaultClusterDomain = "cluster.local"

	managedHostsHeader                = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderWithHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// podHostnameAndDomain returns the pod's host name (spec.hostnameOverride,
// a DNS subdomain, and then no domain; else spec.hostname, else the pod
// name; cut to 63 characters without a trailing "-" or ".") and, with
// spec.subdomain, its domain "<subdomain>.<namespace>.svc.<clusterDomain>".
func podHostnameAndDomain(pod *v1.Pod, clusterDomain string) (hostname, domain string, err error) {
	if o := pod.Spec.HostnameOverride; o != nil {
		if msgs := validation.IsDNS1123Subdomain(*o); len(msgs) > 0 {
			return "", "", fmt.Errorf("pod HostnameOverride %q is not a valid DNS subdomain: %s", *o, strings.Join(msgs, ";"))
		}
		hostname, err = truncateHostname(pod.Name, *o)
		return hostname, "", err
	}
	hostname = pod.Name
	if pod.Spec.Hostname != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Hostname); len(msgs) > 0 {
			return "", "", fmt.Errorf("pod Hostname %q is not a valid DNS label: %s", pod.Spec.Hostname, strings.Join(msgs, ";"))
		}
		hostname = pod.Spec.Hostname
	}
	if hostname, err = truncateHostname(pod.Name, hostname); err != nil {
		return "", "", err
	}
	if sub := pod.Spec.Subdomain; sub != "" {
		if msgs := validation.IsDNS1123Label(sub); len(msgs) > 0 {
			return "", "", fmt.Errorf("pod Subdomain %q is not a valid DNS label: %s", sub, strings.Join(msgs, ";"))
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", sub, pod.Namespace, clusterDomain)
	}
	return hostname, domain, nil
}

// truncateHostname cuts hostname to 63 characters without a trailing "-"
// or "." (the kubelet's truncatePodHostnameIfNeeded).
func truncateHostname(podName, hostname string) (string, error) {
	if len(hostname) <= 63 {
		return hostname, nil
	}
	truncated := strings.TrimRight(hostname[:63], "-.")
	if truncated == "" {
		return "", fmt.Errorf("hostname for pod %q was invalid: %q", podName, hostname)
	}
	return truncated, nil
}

// kernelHostname is the UTS host name of the pod: its host name, or with
// setHostnameAsFQDN and a domain its FQDN, which must fit the kernel's 64
// characters (the kubelet's error otherwise).
func kernelHostname(hostname, domain string, asFQDN *bool) (string, error) {
	const fqdnMaxLen = 64
	if domain == "" || asFQDN == nil || !*asFQDN {
		return hostname, nil
	}
	fqdn := hostname + "." + domain
	if len(fqdn) > fqdnMaxLen {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)", fqdn, fqdnMaxLen, len(fqdn))
	}
	return fqdn, nil
}

// sandboxHostname is the host name the sandbox gets (ignored by the
// runtime for host-network pods, which keep the node's).
func (d *podEnv) sandboxHostname(pod *v1.Pod) (string, error) {
	hostname, domain, err := podHostnameAndDomain(pod, d.clusterDomainOrDefault())
	if err != nil {
		return "", err
	}
	return kernelHostname(hostname, domain, pod.Spec.SetHostnameAsFQDN)
}

func (d *podEnv) clusterDomainOrDefault() string {
	if d.clusterDomain == "" {
		return DefaultClusterDomain
	}
	return d.clusterDomain
}

// managedHostsContent is the kubelet's /etc/hosts for a pod with its own
// network: localhost entries, each pod IP with the host name (and FQDN
// first when there is a domain), then the host aliases.
func managedHostsContent(podIPs []string, hostname, domain string, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	b.Write(hostAliasEntries(aliases))
	return b.Bytes()
}

// hostNetworkHostsContent is the kubelet's /etc/hosts for a host-network
// pod: the node's file under a header, then the host aliases.
func hostNetworkHostsContent(nodeHosts []byte, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeaderWithHostNetwork)
	b.Write(nodeHosts)
	b.Write(hostAliasEntries(aliases))
	return b.Bytes()
}

// hostAliasEntries is one line per alias, its host names tab-separated.
func hostAliasEntries(aliases []v1.HostAlias) []byte {
	if len(aliases) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}

// addEtcHostsMount writes the pod's managed hosts file and mounts it at
// /etc/hosts of spec's container, as the kubelet does for every container
// of a pod that has IPs or uses the host network, unless the container
// mounts a volume there. The file is rewritten at each container start
// (the kubelet's behaviour) and goes with the pod's directory. Nothing is
// mounted without Config.PodsDir.
func (w *podWorker) addEtcHostsMount(c *v1.Container, spec *runtime.ContainerSpec, sb *runtime.SandboxStatus) error {
	pod := w.pod
	hasIPs := sb != nil && sb.IP != ""
	if w.d.podsDir == "" || (!hasIPs && !pod.Spec.HostNetwork) {
		return nil
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == etcHostsPath {
			return nil
		}
	}
	var content []byte
	if pod.Spec.HostNetwork {
		nodeHosts, err := os.ReadFile(w.d.env.nodeHostsFileOrDefault())
		if err != nil {
			return fmt.Errorf("reading the node's hosts file: %w", err)
		}
		content = hostNetworkHostsContent(nodeHosts, pod.Spec.HostAliases)
	} else {
		hostname, domain, err := podHostnameAndDomain(pod, w.d.env.clusterDomainOrDefault())
		if err != nil {
			return err
		}
		content = managedHostsContent(append([]string{sb.IP}, sb.AdditionalIPs...), hostname, domain, pod.Spec.HostAliases)
	}
	dir := filepath.Join(w.d.podsDir, string(pod.UID))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("pod directory: %w", err)
	}
	path := filepath.Join(dir, etcHostsFile)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // whatever the umask
		return fmt.Errorf("writing %s: %w", path, err)
	}
	spec.Mounts = append(spec.Mounts, runtime.Mount{HostPath: path, ContainerPath: etcHostsPath})
	return nil
}

func (d *podEnv) nodeHostsFileOrDefault() string {
	if d.nodeHostsFile == "" {
		return etcHostsPath
	}
	return d.nodeHostsFile
}
