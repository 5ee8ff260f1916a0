package cliview

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// containers writes one Containers (or Init Containers) section with each
// container's spec merged with its status, as kubectl's describeContainers.
func (d *describer) containers(label string, cs []v1.Container, statuses []v1.ContainerStatus, pod *v1.Pod) {
	none := ""
	if len(cs) == 0 {
		none = " <none>"
	}
	d.write(level0, "%s:%s\n", label, none)
	byName := make(map[string]v1.ContainerStatus, len(statuses))
	for _, s := range statuses {
		byName[s.Name] = s
	}
	for i := range cs {
		c := &cs[i]
		status, ok := byName[c.Name]
		d.containerBasics(c, status, ok)
		d.command(c)
		if ok {
			d.containerState("State", status.State)
			if status.LastTerminationState.Terminated != nil {
				d.containerState("Last State", status.LastTerminationState)
			}
			d.write(level2, "Ready:\t%v\n", printBool(status.Ready))
			d.write(level2, "Restart Count:\t%d\n", status.RestartCount)
		}
		d.resources(&c.Resources)
		d.probes(c)
		if len(c.EnvFrom) > 0 {
			d.envFrom(c.EnvFrom)
		}
		d.env(c, pod)
		d.mounts(c)
	}
}

// containerBasics writes the name, IDs, image and ports of a container.
func (d *describer) containerBasics(c *v1.Container, status v1.ContainerStatus, ok bool) {
	d.write(level1, "%v:\n", c.Name)
	if ok {
		d.write(level2, "Container ID:\t%s\n", status.ContainerID)
	}
	d.write(level2, "Image:\t%s\n", c.Image)
	if ok {
		d.write(level2, "Image ID:\t%s\n", status.ImageID)
	}
	ports := portList(c.Ports, func(p v1.ContainerPort) int32 { return p.ContainerPort })
	if strings.Contains(ports, ",") {
		d.write(level2, "Ports:\t%s\n", ports)
	} else {
		d.write(level2, "Port:\t%s\n", orNone(ports))
	}
	hostPorts := portList(c.Ports, func(p v1.ContainerPort) int32 { return p.HostPort })
	if strings.Contains(hostPorts, ",") {
		d.write(level2, "Host Ports:\t%s\n", hostPorts)
	} else {
		d.write(level2, "Host Port:\t%s\n", orNone(hostPorts))
	}
	if c.RestartPolicy != nil {
		d.write(level2, "Restart Policy:\t%s\n", *c.RestartPolicy)
	}
}

// portList formats ports as "8080/TCP (http), 53/UDP" with the number
// number() picks.
func portList(ports []v1.ContainerPort, number func(v1.ContainerPort) int32) string {
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		s := fmt.Sprintf("%d/%s", number(p), p.Protocol)
		if p.Name != "" {
			s += " (" + p.Name + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// command writes the Command and Args lists, one item (or line of an
// item) a line.
func (d *describer) command(c *v1.Container) {
	for _, list := range []struct {
		title string
		items []string
	}{{"Command", c.Command}, {"Args", c.Args}} {
		if len(list.items) == 0 {
			continue
		}
		d.write(level2, "%s:\n", list.title)
		for _, item := range list.items {
			for _, s := range strings.Split(item, "\n") {
				d.write(level3, "%s\n", s)
			}
		}
	}
}

// containerState writes a State or Last State block (kubectl's
// describeStatus).
func (d *describer) containerState(title string, st v1.ContainerState) {
	switch {
	case st.Running != nil:
		d.write(level2, "%s:\tRunning\n", title)
		d.write(level3, "Started:\t%v\n", st.Running.StartedAt.Format(time.RFC1123Z))
	case st.Waiting != nil:
		d.write(level2, "%s:\tWaiting\n", title)
		if st.Waiting.Reason != "" {
			d.write(level3, "Reason:\t%s\n", st.Waiting.Reason)
		}
	case st.Terminated != nil:
		t := st.Terminated
		d.write(level2, "%s:\tTerminated\n", title)
		if t.Reason != "" {
			d.write(level3, "Reason:\t%s\n", t.Reason)
		}
		if t.Message != "" {
			d.write(level3, "Message:\t%s\n", t.Message)
		}
		d.write(level3, "Exit Code:\t%d\n", t.ExitCode)
		if t.Signal > 0 {
			d.write(level3, "Signal:\t%d\n", t.Signal)
		}
		d.write(level3, "Started:\t%s\n", t.StartedAt.Format(time.RFC1123Z))
		d.write(level3, "Finished:\t%s\n", t.FinishedAt.Format(time.RFC1123Z))
	default:
		d.write(level2, "%s:\tWaiting\n", title)
	}
}

// resources writes the Limits and Requests lists, sorted by name.
func (d *describer) resources(r *v1.ResourceRequirements) {
	for _, list := range []struct {
		title string
		rl    v1.ResourceList
	}{{"Limits", r.Limits}, {"Requests", r.Requests}} {
		if len(list.rl) == 0 {
			continue
		}
		d.write(level2, "%s:\n", list.title)
		names := make([]string, 0, len(list.rl))
		for n := range list.rl {
			names = append(names, string(n))
		}
		slices.Sort(names)
		for _, n := range names {
			q := list.rl[v1.ResourceName(n)]
			d.write(level3, "%s:\t%s\n", n, q.String())
		}
	}
}

// probes writes the Liveness, Readiness and Startup lines.
func (d *describer) probes(c *v1.Container) {
	for _, p := range []struct {
		title string
		probe *v1.Probe
	}{{"Liveness", c.LivenessProbe}, {"Readiness", c.ReadinessProbe}, {"Startup", c.StartupProbe}} {
		if p.probe != nil {
			d.write(level2, "%s:\t%s\n", p.title, DescribeProbe(p.probe))
		}
	}
}

// DescribeProbe formats a probe as kubectl describe does, e.g.
// "http-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1
// #failure=3", "exec [cat /tmp/healthy] ...", "tcp-socket :8081 ..." or
// "grpc <pod>:8082 svc ...". Pure.
func DescribeProbe(p *v1.Probe) string {
	attrs := fmt.Sprintf("delay=%ds timeout=%ds period=%ds #success=%d #failure=%d",
		p.InitialDelaySeconds, p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold)
	switch {
	case p.Exec != nil:
		return fmt.Sprintf("exec %v %s", p.Exec.Command, attrs)
	case p.HTTPGet != nil:
		u := &url.URL{Scheme: strings.ToLower(string(p.HTTPGet.Scheme)), Host: p.HTTPGet.Host, Path: p.HTTPGet.Path}
		if port := p.HTTPGet.Port.String(); port != "" {
			u.Host = net.JoinHostPort(p.HTTPGet.Host, port)
		}
		return fmt.Sprintf("http-get %s %s", u, attrs)
	case p.TCPSocket != nil:
		return fmt.Sprintf("tcp-socket %s:%s %s", p.TCPSocket.Host, p.TCPSocket.Port.String(), attrs)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return fmt.Sprintf("grpc <pod>:%d %s %s", p.GRPC.Port, service, attrs)
	}
	return "unknown " + attrs
}

// envFrom writes the "Environment Variables from" list.
func (d *describer) envFrom(sources []v1.EnvFromSource) {
	d.write(level2, "Environment Variables from:\n")
	for _, e := range sources {
		from, name, optional := "", "", false
		switch {
		case e.ConfigMapRef != nil:
			from, name = "ConfigMap", e.ConfigMapRef.Name
			optional = e.ConfigMapRef.Optional != nil && *e.ConfigMapRef.Optional
		case e.SecretRef != nil:
			from, name = "Secret", e.SecretRef.Name
			optional = e.SecretRef.Optional != nil && *e.SecretRef.Optional
		}
		if e.Prefix == "" {
			d.write(level3, "%s\t%s\tOptional: %t\n", name, from, optional)
		} else {
			d.write(level3, "%s\t%s with prefix '%s'\tOptional: %t\n", name, from, e.Prefix, optional)
		}
	}
}

// env writes the Environment list; values from the downward API are
// resolved as kubectl resolves them (metadata fields and resources only).
func (d *describer) env(c *v1.Container, pod *v1.Pod) {
	if len(c.Env) == 0 {
		d.write(level2, "Environment:\t<none>\n")
		return
	}
	d.write(level2, "Environment:\n")
	for _, e := range c.Env {
		from := e.ValueFrom
		switch {
		case from == nil:
			for i, s := range strings.Split(e.Value, "\n") {
				if i == 0 {
					d.write(level3, "%s:\t%s\n", e.Name, s)
				} else {
					d.write(level3, "\t%s\n", s)
				}
			}
		case from.FieldRef != nil:
			d.write(level3, "%s:\t%s (%s:%s)\n", e.Name, podFieldValue(pod, from.FieldRef.FieldPath), from.FieldRef.APIVersion, from.FieldRef.FieldPath)
		case from.ResourceFieldRef != nil:
			res := from.ResourceFieldRef.Resource
			value := containerResourceValue(from.ResourceFieldRef, c)
			if value == "0" && (res == "limits.cpu" || res == "limits.memory") {
				value = "node allocatable"
			}
			d.write(level3, "%s:\t%s (%s)\n", e.Name, value, res)
		case from.SecretKeyRef != nil:
			ref := from.SecretKeyRef
			d.write(level3, "%s:\t<set to the key '%s' in secret '%s'>\tOptional: %t\n", e.Name, ref.Key, ref.Name, ref.Optional != nil && *ref.Optional)
		case from.ConfigMapKeyRef != nil:
			ref := from.ConfigMapKeyRef
			d.write(level3, "%s:\t<set to the key '%s' of config map '%s'>\tOptional: %t\n", e.Name, ref.Key, ref.Name, ref.Optional != nil && *ref.Optional)
		}
	}
}

// podFieldValue resolves the downward-API field paths kubectl resolves
// (k8s.io/kubectl/pkg/util/fieldpath): the pod's name, namespace, UID,
// labels and annotations. Other paths resolve to "".
func podFieldValue(pod *v1.Pod, path string) string {
	if p, key, ok := subscripted(path); ok {
		switch p {
		case "metadata.labels":
			return pod.Labels[key]
		case "metadata.annotations":
			return pod.Annotations[key]
		}
		return ""
	}
	switch path {
	case "metadata.name":
		return pod.Name
	case "metadata.namespace":
		return pod.Namespace
	case "metadata.uid":
		return string(pod.UID)
	case "metadata.labels":
		return formatMap(pod.Labels)
	case "metadata.annotations":
		return formatMap(pod.Annotations)
	}
	return ""
}

// subscripted splits "metadata.labels['key']" into its path and key.
func subscripted(path string) (string, string, bool) {
	s, ok := strings.CutSuffix(path, "']")
	if !ok {
		return path, "", false
	}
	p, key, ok := strings.Cut(s, "['")
	if !ok || p == "" {
		return path, "", false
	}
	return p, key, true
}

// formatMap formats a map as sorted key="value" lines.
func formatMap(m map[string]string) string {
	lines := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		lines = append(lines, fmt.Sprintf("%v=%q", k, m[k]))
	}
	return strings.Join(lines, "\n")
}

// containerResourceValue is the value of a resourceFieldRef, rounded up to
// whole divisors (cpu in cores by default, memory and storage in bytes);
// "" for a resource kubectl does not resolve.
func containerResourceValue(ref *v1.ResourceFieldSelector, c *v1.Container) string {
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return ""
	}
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q := list[v1.ResourceName(name)]
	switch v1.ResourceName(name) {
	case v1.ResourceCPU:
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10)
	case v1.ResourceMemory, v1.ResourceEphemeralStorage:
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10)
	}
	return ""
}

// mounts writes the container's volume mounts sorted by path, and its
// volume devices.
func (d *describer) mounts(c *v1.Container) {
	if len(c.VolumeMounts) == 0 {
		d.write(level2, "Mounts:\t<none>\n")
	} else {
		d.write(level2, "Mounts:\n")
	}
	mounts := slices.Clone(c.VolumeMounts)
	slices.SortStableFunc(mounts, func(a, b v1.VolumeMount) int { return strings.Compare(a.MountPath, b.MountPath) })
	for _, m := range mounts {
		flags := []string{"rw"}
		if m.ReadOnly {
			flags[0] = "ro"
		}
		if m.SubPath != "" {
			flags = append(flags, fmt.Sprintf("path=%q", m.SubPath))
		}
		d.write(level3, "%s from %s (%s)\n", m.MountPath, m.Name, strings.Join(flags, ","))
	}
	if len(c.VolumeDevices) > 0 {
		d.write(level2, "Devices:\n")
		devices := slices.Clone(c.VolumeDevices)
		slices.SortStableFunc(devices, func(a, b v1.VolumeDevice) int { return strings.Compare(a.DevicePath, b.DevicePath) })
		for _, dev := range devices {
			d.write(level3, "%s from %s\n", dev.DevicePath, dev.Name)
		}
	}
}
