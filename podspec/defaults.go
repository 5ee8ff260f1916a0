package podspec

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetDefaults fills the fields the API server defaults for a v1 Pod
// (k8s.io/kubernetes pkg/apis/core/v1/defaults.go, SetDefaults_Pod,
// SetDefaults_PodSpec, SetDefaults_Container, SetDefaults_ContainerPort,
// SetDefaults_Probe, SetDefaults_HTTPGetAction,
// SetDefaults_ObjectFieldSelector, SetDefaults_ResourceList) plus the
// namespace "default" the kubelet gives manifest pods (checklist A.55, B.15).
// Only unset fields are filled, so SetDefaults is idempotent. It only
// touches fields skiff may support (volumes: see setVolumeDefaults);
// ephemeral containers (API pods only: Validate rejects them) get a
// container's defaults, as upstream's. A nil pod is ignored.
func SetDefaults(pod *v1.Pod) {
	if pod == nil {
		return
	}
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	setPodSpecDefaults(&pod.Spec)
	if pod.Spec.EnableServiceLinks == nil {
		enable := v1.DefaultEnableServiceLinks
		pod.Spec.EnableServiceLinks = &enable
	}
	for i := range pod.Spec.Volumes {
		setVolumeDefaults(&pod.Spec.Volumes[i])
	}
	for i := range pod.Spec.InitContainers {
		setContainerDefaults(&pod.Spec.InitContainers[i], pod.Spec.HostNetwork)
	}
	for i := range pod.Spec.Containers {
		setContainerDefaults(&pod.Spec.Containers[i], pod.Spec.HostNetwork)
	}
	for i := range pod.Spec.EphemeralContainers {
		setContainerDefaults((*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon), pod.Spec.HostNetwork)
	}
}

// setPodSpecDefaults mirrors upstream SetDefaults_PodSpec.
func setPodSpecDefaults(spec *v1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &v1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		grace := int64(v1.DefaultTerminationGracePeriodSeconds)
		spec.TerminationGracePeriodSeconds = &grace
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = v1.DefaultSchedulerName
	}
}

// setContainerDefaults defaults one init or app container.
func setContainerDefaults(c *v1.Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for j := range c.Ports {
		p := &c.Ports[j]
		if p.Protocol == "" {
			p.Protocol = v1.ProtocolTCP
		}
		// With host networking every container port is a host port.
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
	for j := range c.Env {
		if vf := c.Env[j].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
	setResourceDefaults(&c.Resources)
	for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		setProbeDefaults(p)
	}
	if c.Lifecycle != nil {
		for _, h := range []*v1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil {
				setHTTPGetDefaults(h.HTTPGet)
			}
		}
	}
}

// setResourceDefaults rounds quantities up to milli precision and defaults
// missing requests to the limits (upstream SetDefaults_ResourceList and the
// requests-from-limits rule of SetDefaults_Pod).
func setResourceDefaults(r *v1.ResourceRequirements) {
	for _, list := range []v1.ResourceList{r.Limits, r.Requests} {
		for name, q := range list {
			q.RoundUp(-3)
			list[name] = q
		}
	}
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = make(v1.ResourceList, len(r.Limits))
	}
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = q.DeepCopy()
		}
	}
}

// setProbeDefaults mirrors upstream SetDefaults_Probe (B.15); nil is ignored.
func setProbeDefaults(p *v1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	setHTTPGetDefaults(p.HTTPGet)
}

// setHTTPGetDefaults mirrors upstream SetDefaults_HTTPGetAction; nil is ignored.
func setHTTPGetDefaults(h *v1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = v1.URISchemeHTTP
	}
}

// defaultPullPolicy is upstream's tag rule: an image whose tag is "latest",
// or that has neither tag nor digest, is pulled Always; any other image
// (another tag, or a digest without tag) IfNotPresent.
func defaultPullPolicy(image string) v1.PullPolicy {
	tag, hasDigest := imageTag(image)
	if tag == "latest" || (tag == "" && !hasDigest) {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// imageTag returns the tag of an image reference ("" if none) and whether it
// names a digest ("name:tag@sha256:..."). A colon before the last slash
// belongs to a registry host:port, not a tag.
func imageTag(image string) (tag string, hasDigest bool) {
	name := image
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name, hasDigest = name[:i], true
	}
	colon := strings.LastIndexByte(name, ':')
	if colon > strings.LastIndexByte(name, '/') {
		tag = name[colon+1:]
	}
	return tag, hasDigest
}
