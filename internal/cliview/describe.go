package cliview

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Indentation levels of `kubectl describe`: two spaces per level.
const (
	level0 = iota
	level1
	level2
	level3
)

// maxAnnotationLen is where kubectl describe wraps and cuts annotations.
const maxAnnotationLen = 140

// terminalEscaper neutralizes the characters kubectl's describe output
// escapes so that object content cannot drive the terminal
// (k8s.io/cli-runtime/pkg/printers.EscapeTerminal).
var terminalEscaper = strings.NewReplacer("\x1b", "^[", "\r", "\\r")

// describer writes `kubectl describe` output: indented lines through a
// tabwriter with kubectl's settings, where the first write error sticks and
// later writes are dropped.
type describer struct {
	tw  *tabwriter.Writer
	now time.Time
	err error
}

func newDescriber(w io.Writer, now time.Time) *describer {
	// kubectl's tabbedString: minwidth 0, tabwidth 8, padding 2, spaces.
	return &describer{tw: tabwriter.NewWriter(w, 0, 8, 2, ' ', 0), now: now}
}

// write formats a line fragment at the given indentation level.
func (d *describer) write(level int, format string, a ...any) {
	if d.err != nil {
		return
	}
	out := strings.Repeat("  ", level) + fmt.Sprintf(format, a...)
	_, d.err = io.WriteString(d.tw, terminalEscaper.Replace(out))
}

// line ends the current line with s.
func (d *describer) line(s string) { d.write(level0, "%s\n", s) }

// flush aligns and writes out what was buffered so far, so that the next
// lines form a table of their own.
func (d *describer) flush() {
	if d.err == nil {
		d.err = d.tw.Flush()
	}
}

// DescribePod writes pod as `kubectl describe pod` does (k8s.io/kubectl
// pkg/describe, describePod): Name, Namespace, Priority, Node, Start Time,
// Labels, Annotations, Status (with Reason and Message when set), IP and
// IPs, the Init Containers and Containers sections (IDs, image, ports,
// command, state and last state, readiness, restarts, resources, probes,
// environment, mounts), Conditions, Volumes, QoS Class, Node-Selectors,
// Tolerations and the Events table. events are the pod's events in any
// order: they are shown sorted by last timestamp, "<none>" when there are
// none. Ages are measured against now; absolute times are printed in their
// own location, as RFC 1123 with a numeric zone. Neither pod nor events are
// modified. Pure apart from writing to w; safe for concurrent use.
func DescribePod(w io.Writer, pod *v1.Pod, events []v1.Event, now time.Time) error {
	d := newDescriber(w, now)
	d.podHeader(pod)
	if len(pod.Spec.InitContainers) > 0 {
		d.containers("Init Containers", pod.Spec.InitContainers, pod.Status.InitContainerStatuses, pod)
	}
	d.containers("Containers", pod.Spec.Containers, pod.Status.ContainerStatuses, pod)
	d.conditions(pod)
	d.volumes(pod.Spec.Volumes)
	d.write(level0, "QoS Class:\t%s\n", podQOS(pod))
	d.labels("Node-Selectors", pod.Spec.NodeSelector)
	d.tolerations(pod.Spec.Tolerations)
	d.events(events)
	d.flush()
	if d.err != nil {
		return fmt.Errorf("describe pod %s/%s: %w", pod.Namespace, pod.Name, d.err)
	}
	return nil
}

// podHeader writes the pod's fields up to its IPs.
func (d *describer) podHeader(pod *v1.Pod) {
	d.write(level0, "Name:\t%s\n", pod.Name)
	d.write(level0, "Namespace:\t%s\n", pod.Namespace)
	if pod.Spec.Priority != nil {
		d.write(level0, "Priority:\t%d\n", *pod.Spec.Priority)
	}
	if pod.Spec.PriorityClassName != "" {
		d.write(level0, "Priority Class Name:\t%s\n", pod.Spec.PriorityClassName)
	}
	if pod.Spec.RuntimeClassName != nil && *pod.Spec.RuntimeClassName != "" {
		d.write(level0, "Runtime Class Name:\t%s\n", *pod.Spec.RuntimeClassName)
	}
	if pod.Spec.ServiceAccountName != "" {
		d.write(level0, "Service Account:\t%s\n", pod.Spec.ServiceAccountName)
	}
	if pod.Spec.NodeName == "" {
		d.write(level0, "Node:\t<none>\n")
	} else {
		d.write(level0, "Node:\t%s\n", pod.Spec.NodeName+"/"+pod.Status.HostIP)
	}
	if pod.Status.StartTime != nil {
		d.write(level0, "Start Time:\t%s\n", pod.Status.StartTime.Format(time.RFC1123Z))
	}
	d.labels("Labels", pod.Labels)
	d.annotations(pod.Annotations)
	if pod.DeletionTimestamp != nil && pod.Status.Phase != v1.PodFailed && pod.Status.Phase != v1.PodSucceeded {
		d.write(level0, "Status:\tTerminating (lasts %s)\n", since(pod.DeletionTimestamp.Time, d.now))
		if pod.DeletionGracePeriodSeconds != nil {
			d.write(level0, "Termination Grace Period:\t%ds\n", *pod.DeletionGracePeriodSeconds)
		}
	} else {
		d.write(level0, "Status:\t%s\n", pod.Status.Phase)
	}
	if pod.Status.Reason != "" {
		d.write(level0, "Reason:\t%s\n", pod.Status.Reason)
	}
	if pod.Status.Message != "" {
		d.write(level0, "Message:\t%s\n", pod.Status.Message)
	}
	d.write(level0, "IP:\t%s\n", pod.Status.PodIP)
	if len(pod.Status.PodIPs) == 0 {
		d.write(level0, "IPs:\t<none>\n")
	} else {
		d.write(level0, "IPs:\n")
		for _, ip := range pod.Status.PodIPs {
			d.write(level1, "IP:\t%s\n", ip.IP)
		}
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		d.write(level0, "Controlled By:\t%s/%s\n", ref.Kind, ref.Name)
	}
}

// labels writes a sorted key=value map, one pair a line (kubectl's
// printLabelsMultiline).
func (d *describer) labels(title string, m map[string]string) {
	d.write(level0, "%s:\t", title)
	if len(m) == 0 {
		d.line("<none>")
		return
	}
	for i, k := range sortedKeys(m) {
		if i != 0 {
			d.write(level0, "\t")
		}
		d.write(level0, "%s=%s\n", k, m[k])
	}
}

// annotations writes sorted annotations as kubectl's
// printAnnotationsMultiline does: long or multi-line values go on their own
// indented lines, each cut at maxAnnotationLen; kubectl's
// last-applied-configuration is left out.
func (d *describer) annotations(m map[string]string) {
	d.write(level0, "Annotations:\t")
	var keys []string
	for _, k := range sortedKeys(m) {
		if k != v1.LastAppliedConfigAnnotation {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		d.line("<none>")
		return
	}
	for i, k := range keys {
		if i != 0 {
			d.write(level0, "\t")
		}
		value := strings.TrimSuffix(m[k], "\n")
		if len(value)+len(k)+2 > maxAnnotationLen || strings.Contains(value, "\n") {
			d.write(level0, "%s:\n", k)
			for _, s := range strings.Split(value, "\n") {
				d.write(level0, "\t  %s\n", shorten(s, maxAnnotationLen-2))
			}
		} else {
			d.write(level0, "%s: %s\n", k, value)
		}
	}
}

// conditions writes the pod's readiness gates and conditions tables.
func (d *describer) conditions(pod *v1.Pod) {
	if len(pod.Spec.ReadinessGates) > 0 {
		d.write(level0, "Readiness Gates:\n  Type\tStatus\n")
		for _, g := range pod.Spec.ReadinessGates {
			status := "<none>"
			if i := slices.IndexFunc(pod.Status.Conditions, func(c v1.PodCondition) bool { return c.Type == g.ConditionType }); i >= 0 {
				status = string(pod.Status.Conditions[i].Status)
			}
			d.write(level1, "%v \t%v \n", g.ConditionType, status)
		}
	}
	if len(pod.Status.Conditions) > 0 {
		d.write(level0, "Conditions:\n  Type\tStatus\n")
		for _, c := range pod.Status.Conditions {
			d.write(level1, "%v \t%v \n", c.Type, c.Status)
		}
	}
}

// tolerations writes the pod's tolerations sorted by key (kubectl's
// printPodTolerationsMultiline).
func (d *describer) tolerations(tols []v1.Toleration) {
	d.write(level0, "Tolerations:\t")
	if len(tols) == 0 {
		d.line("<none>")
		return
	}
	tols = slices.Clone(tols)
	slices.SortStableFunc(tols, func(a, b v1.Toleration) int { return strings.Compare(a.Key, b.Key) })
	for i, t := range tols {
		if i != 0 {
			d.write(level0, "\t")
		}
		var b strings.Builder
		b.WriteString(t.Key)
		if t.Value != "" {
			b.WriteString("=" + t.Value)
		}
		if t.Effect != "" {
			b.WriteString(":" + string(t.Effect))
		}
		if t.Operator == v1.TolerationOpExists && t.Value == "" {
			if t.Key != "" || t.Effect != "" {
				b.WriteString(" ")
			}
			b.WriteString("op=Exists")
		}
		if t.TolerationSeconds != nil {
			fmt.Fprintf(&b, " for %ds", *t.TolerationSeconds)
		}
		d.line(b.String())
	}
}

// events writes the Events table (kubectl's DescribeEvents).
func (d *describer) events(events []v1.Event) {
	if len(events) == 0 {
		d.write(level0, "Events:\t<none>\n")
		return
	}
	d.flush()
	d.write(level0, "Events:\n  Type\tReason\tAge\tFrom\tMessage\n")
	d.write(level1, "----\t------\t----\t----\t-------\n")
	for _, e := range sortedEvents(events) {
		d.write(level1, "%v\t%v\t%s\t%v\t%v\n", e.Type, e.Reason, eventAge(&e, d.now), eventSource(&e), strings.TrimSpace(e.Message))
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func shorten(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func printBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
