package printers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/skiffnode/skiff/internal/cliview"
)

var humanDuration = duration.HumanDuration

// column is a column definition; priority 1 shows only with -o wide.
func column(name, typ string, priority int32, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Priority: priority, Description: description}
}

// rowOf adapts a typed row function to Table.Row.
func rowOf[T runtime.Object](f func(T, time.Time) []any) func(runtime.Object, time.Time) ([]any, error) {
	return func(obj runtime.Object, now time.Time) ([]any, error) {
		o, ok := obj.(T)
		if !ok {
			return nil, fmt.Errorf("table: unexpected object %T", obj)
		}
		return f(o, now), nil
	}
}

// Pods: NAME READY STATUS RESTARTS AGE, wide IP NODE NOMINATED NODE
// READINESS GATES (printers.go podColumnDefinitions).
func Pods() *Table {
	return &Table{
		Columns: []metav1.TableColumnDefinition{
			nameColumn,
			column("Ready", "string", 0, "The aggregate readiness state of this pod for accepting traffic."),
			column("Status", "string", 0, "The aggregate status of the containers in this pod."),
			column("Restarts", "string", 0, "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
			ageColumn,
			column("IP", "string", 1, corev1.PodStatus{}.SwaggerDoc()["podIP"]),
			column("Node", "string", 1, corev1.PodSpec{}.SwaggerDoc()["nodeName"]),
			column("Nominated Node", "string", 1, corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]),
			column("Readiness Gates", "string", 1, corev1.PodSpec{}.SwaggerDoc()["readinessGates"]),
		},
		Row: rowOf(func(p *corev1.Pod, now time.Time) []any {
			cells := cliview.PodRow(p, true, now) // NAME READY STATUS RESTARTS AGE IP NODE
			row := make([]any, 0, 9)
			for _, c := range cells {
				row = append(row, c)
			}
			return append(row, orNone(p.Status.NominatedNodeName), readinessGates(p))
		}),
	}
}

// readinessGates is "<none>" or "<true gates>/<gates>".
func readinessGates(p *corev1.Pod) string {
	if len(p.Spec.ReadinessGates) == 0 {
		return "<none>"
	}
	ready := 0
	for _, g := range p.Spec.ReadinessGates {
		for _, c := range p.Status.Conditions {
			if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
				ready++
				break
			}
		}
	}
	return fmt.Sprintf("%d/%d", ready, len(p.Spec.ReadinessGates))
}

// Namespaces: NAME STATUS AGE.
func Namespaces() *Table {
	return &Table{
		Columns: []metav1.TableColumnDefinition{nameColumn,
			column("Status", "string", 0, "The status of the namespace"), ageColumn},
		Row: rowOf(func(ns *corev1.Namespace, now time.Time) []any {
			return []any{ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp, now)}
		}),
	}
}

// ConfigMaps: NAME DATA AGE.
func ConfigMaps() *Table {
	return &Table{
		Columns: []metav1.TableColumnDefinition{nameColumn,
			column("Data", "integer", 0, corev1.ConfigMap{}.SwaggerDoc()["data"]), ageColumn},
		Row: rowOf(func(cm *corev1.ConfigMap, now time.Time) []any {
			return []any{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), age(cm.CreationTimestamp, now)}
		}),
	}
}

// Secrets: NAME TYPE DATA AGE.
func Secrets() *Table {
	return &Table{
		Columns: []metav1.TableColumnDefinition{nameColumn,
			column("Type", "string", 0, corev1.Secret{}.SwaggerDoc()["type"]),
			column("Data", "integer", 0, corev1.Secret{}.SwaggerDoc()["data"]), ageColumn},
		Row: rowOf(func(s *corev1.Secret, now time.Time) []any {
			return []any{s.Name, string(s.Type), int64(len(s.Data)), age(s.CreationTimestamp, now)}
		}),
	}
}

// ServiceAccounts: NAME SECRETS AGE.
func ServiceAccounts() *Table {
	return &Table{
		Columns: []metav1.TableColumnDefinition{nameColumn,
			column("Secrets", "integer", 0, corev1.ServiceAccount{}.SwaggerDoc()["secrets"]), ageColumn},
		Row: rowOf(func(sa *corev1.ServiceAccount, now time.Time) []any {
			return []any{sa.Name, int64(len(sa.Secrets)), age(sa.CreationTimestamp, now)}
		}),
	}
}

// Leases: NAME HOLDER AGE.
func Leases() *Table {
	return &Table{
		Columns: []metav1.TableColumnDefinition{nameColumn,
			column("Holder", "string", 0, coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]), ageColumn},
		Row: rowOf(func(l *coordinationv1.Lease, now time.Time) []any {
			holder := ""
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			return []any{l.Name, holder, age(l.CreationTimestamp, now)}
		}),
	}
}

// Nodes: NAME STATUS ROLES AGE VERSION, wide INTERNAL-IP EXTERNAL-IP
// OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME.
func Nodes() *Table {
	info := corev1.NodeSystemInfo{}.SwaggerDoc()
	return &Table{
		Columns: []metav1.TableColumnDefinition{nameColumn,
			column("Status", "string", 0, "The status of the node"),
			column("Roles", "string", 0, "The roles of the node"),
			ageColumn,
			column("Version", "string", 0, info["kubeletVersion"]),
			column("Internal-IP", "string", 1, corev1.NodeStatus{}.SwaggerDoc()["addresses"]),
			column("External-IP", "string", 1, corev1.NodeStatus{}.SwaggerDoc()["addresses"]),
			column("OS-Image", "string", 1, info["osImage"]),
			column("Kernel-Version", "string", 1, info["kernelVersion"]),
			column("Container-Runtime", "string", 1, info["containerRuntimeVersion"]),
		},
		Row: rowOf(func(n *corev1.Node, now time.Time) []any {
			i := n.Status.NodeInfo
			return []any{n.Name, nodeStatus(n), nodeRoles(n), age(n.CreationTimestamp, now), i.KubeletVersion,
				nodeAddress(n, corev1.NodeInternalIP), nodeAddress(n, corev1.NodeExternalIP),
				orUnknown(i.OSImage), orUnknown(i.KernelVersion), orUnknown(i.ContainerRuntimeVersion)}
		}),
	}
}

// nodeStatus is Ready, NotReady or Unknown, with ",SchedulingDisabled".
func nodeStatus(n *corev1.Node) string {
	status := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			status = "NotReady"
			if c.Status == corev1.ConditionTrue {
				status = "Ready"
			}
		}
	}
	if n.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

// nodeRoles are the node-role.kubernetes.io/<role> labels and the
// kubernetes.io/role label's value, sorted.
func nodeRoles(n *corev1.Node) string {
	var roles []string
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			if r := strings.TrimPrefix(k, "node-role.kubernetes.io/"); r != "" {
				roles = append(roles, r)
			}
		case k == "kubernetes.io/role" && v != "":
			roles = append(roles, v)
		}
	}
	if len(roles) == 0 {
		return "<none>"
	}
	slices.Sort(roles)
	return strings.Join(slices.Compact(roles), ",")
}

func nodeAddress(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}
