package nodestatus

import (
	"cmp"
	"net"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Limits of the images list, as the kubelet's defaults
// (nodeStatusMaxImages, MaxNamesPerImageInNodeStatus).
const (
	MaxImages        = 50
	MaxNamesPerImage = 5
)

// DefaultReportFrequency is how often an unchanged status is sent anyway
// (H.10; the kubelet's nodeStatusReportFrequency).
const DefaultReportFrequency = 5 * time.Minute

// Registration is what a new Node object carries (H.1, H.9).
type Registration struct {
	// Name is the node's name (--hostname-override or the hostname,
	// lower-cased); Hostname the kubernetes.io/hostname label.
	Name, Hostname string
	// OS and Arch are GOOS and GOARCH.
	OS, Arch string
	// Labels are --node-labels.
	Labels map[string]string
	// Taints are --register-with-taints.
	Taints []v1.Taint
}

// Initial is the Node the agent registers, as the kubelet's initialNode:
// the default labels (kubernetes.io/hostname, kubernetes.io/os and /arch
// and their beta twins), then the user's labels, which may override them
// (the kubelet logs that and lets them), the user's taints, and the
// controller-managed attach/detach annotation. Pure.
func Initial(r Registration) *v1.Node {
	labels := map[string]string{
		v1.LabelHostname:          r.Hostname,
		v1.LabelOSStable:          r.OS,
		v1.LabelArchStable:        r.Arch,
		"beta.kubernetes.io/os":   r.OS,
		"beta.kubernetes.io/arch": r.Arch,
	}
	for k, v := range r.Labels {
		labels[k] = v
	}
	return &v1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{
			Name: r.Name, Labels: labels,
			Annotations: map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
		},
		Spec: v1.NodeSpec{Taints: slices.Clone(r.Taints)},
	}
}

// Facts are what a status reports besides the conditions.
type Facts struct {
	// Hostname is the Hostname address; InternalIPs the node's IPs
	// (--node-ip, or detected), first the primary one.
	Hostname    string
	InternalIPs []net.IP
	// Capacity and Allocatable (cpu, memory, pods, ephemeral-storage, ...).
	Capacity, Allocatable v1.ResourceList
	// Info is the nodeInfo (kernel, OS image, IDs, versions, OS, arch).
	Info v1.NodeSystemInfo
	// Images are the runtime's images; the status lists the largest
	// MaxImages, with at most MaxNamesPerImage names each (digests first).
	Images []Image
	// KubeletPort is the daemon endpoint's port (10250; 0: none).
	KubeletPort int32
	// RuntimeHandlers are the runtime's handlers with their features, as
	// the runtime reports them (none from containerd 1.x).
	RuntimeHandlers []v1.NodeRuntimeHandler
	// Features are the runtime-wide features; nil where the runtime
	// reports none.
	Features *v1.NodeFeatures
	// DeclaredFeatures are the node's declared features
	// (nodefeatures.Set.Declared), sorted.
	DeclaredFeatures []string
}

// Image is one runtime image as the status lists it.
type Image struct {
	RepoDigests, RepoTags []string
	Size                  int64
}

// SetStatus writes f into node's status (everything but the conditions):
// the addresses (InternalIPs, then Hostname, as the kubelet with
// --node-ip), capacity, allocatable (see mergeResources), nodeInfo,
// daemon endpoint, images, runtime handlers, features and declared
// features. Pure but for node.
func SetStatus(node *v1.Node, f Facts) {
	st := &node.Status
	st.Addresses = st.Addresses[:0]
	for _, ip := range f.InternalIPs {
		st.Addresses = append(st.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip.String()})
	}
	if f.Hostname != "" {
		st.Addresses = append(st.Addresses, v1.NodeAddress{Type: v1.NodeHostName, Address: f.Hostname})
	}
	st.Capacity, st.Allocatable = mergeResources(st.Capacity, f.Capacity, f.Allocatable)
	st.NodeInfo = f.Info
	st.DaemonEndpoints = v1.NodeDaemonEndpoints{}
	if f.KubeletPort > 0 {
		st.DaemonEndpoints.KubeletEndpoint.Port = f.KubeletPort
	}
	st.Images = statusImages(f.Images)
	st.RuntimeHandlers = slices.Clone(f.RuntimeHandlers)
	st.Features = f.Features.DeepCopy()
	st.DeclaredFeatures = slices.Clone(f.DeclaredFeatures)
}

// mergeResources is the kubelet's MachineInfo setter for the resources:
// the node's own capacity and allocatable, plus the extended resources
// others put in the Node's capacity (a device plugin's operator, the e2e
// framework's AddExtendedResource), which the kubelet keeps and makes
// allocatable in full. Pure.
func mergeResources(oldCap, capacity, allocatable v1.ResourceList) (v1.ResourceList, v1.ResourceList) {
	c, a := capacity.DeepCopy(), allocatable.DeepCopy()
	for name, q := range oldCap {
		if _, ours := capacity[name]; !ours && isExtendedResourceName(name) {
			if c == nil {
				c = v1.ResourceList{}
			}
			c[name] = q.DeepCopy()
		}
	}
	for name, q := range c {
		if _, ours := allocatable[name]; !ours && isExtendedResourceName(name) {
			if a == nil {
				a = v1.ResourceList{}
			}
			a[name] = q.DeepCopy()
		}
	}
	return c, a
}

// isExtendedResourceName is the kubelet's IsExtendedResourceName
// (pkg/apis/core/v1/helper): a name outside *kubernetes.io/, not
// "requests."-prefixed, that is a qualified name with that prefix.
func isExtendedResourceName(name v1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, v1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+s)) == 0
}

// statusImages is the kubelet's Images setter over an image list it
// sorts itself (largest first, as the kubelet's image manager sorts it).
func statusImages(imgs []Image) []v1.ContainerImage {
	sorted := slices.Clone(imgs)
	slices.SortStableFunc(sorted, func(a, b Image) int { return cmp.Compare(b.Size, a.Size) })
	if len(sorted) > MaxImages {
		sorted = sorted[:MaxImages]
	}
	var out []v1.ContainerImage
	for _, img := range sorted {
		names := append(slices.Clone(img.RepoDigests), img.RepoTags...)
		if len(names) > MaxNamesPerImage {
			names = names[:MaxNamesPerImage]
		}
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: img.Size})
	}
	return out
}

// HasChanged reports whether status differs from the last one sent in
// anything but the conditions' heartbeat times (the kubelet's
// nodeStatusHasChanged), nor in the fields newer than the oldest API
// server skiff joins (declaredFeatures, nodeInfo.runningInUserNamespace)
// where the sent status, as the API server returned it, has none: a 1.34
// API server drops them, and would otherwise get the status at every
// check. Pure.
func HasChanged(sent, status *v1.NodeStatus) bool {
	if sent == nil || status == nil {
		return sent != status
	}
	if conditionsChanged(sent.Conditions, status.Conditions) {
		return true
	}
	a, b := sent.DeepCopy(), status.DeepCopy()
	a.Conditions, b.Conditions = nil, nil
	if a.DeclaredFeatures == nil {
		b.DeclaredFeatures = nil
	}
	if a.NodeInfo.RunningInUserNamespace == nil {
		b.NodeInfo.RunningInUserNamespace = nil
	}
	return !apiequality.Semantic.DeepEqual(a, b)
}

func conditionsChanged(a, b []v1.NodeCondition) bool {
	if len(a) != len(b) {
		return true
	}
	key := func(x, y v1.NodeCondition) int { return cmp.Compare(x.Type, y.Type) }
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortStableFunc(a, key)
	slices.SortStableFunc(b, key)
	for i := range a {
		a[i].LastHeartbeatTime, b[i].LastHeartbeatTime = metav1.Time{}, metav1.Time{}
		if !apiequality.Semantic.DeepEqual(a[i], b[i]) {
			return true
		}
	}
	return false
}

// NeedsReport reports whether status must be sent now: it changed since
// the one sent at lastSent, or frequency (DefaultReportFrequency if <= 0)
// has passed since (H.10). Pure.
func NeedsReport(sent, status *v1.NodeStatus, lastSent, now time.Time, frequency time.Duration) bool {
	if frequency <= 0 {
		frequency = DefaultReportFrequency
	}
	return HasChanged(sent, status) || !now.Before(lastSent.Add(frequency))
}
