package printers

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// templateColumns are the wide columns of the workload kinds: CONTAINERS
// IMAGES SELECTOR.
func templateColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		column("Containers", "string", 1, "Names of each container in the template."),
		column("Images", "string", 1, "Images referenced by each container in the template."),
		column("Selector", "string", 1, "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment."),
	}
}

// templateCells are the wide cells: container names, images, selector.
func templateCells(spec corev1.PodSpec, selector *metav1.LabelSelector) []any {
	names := make([]string, 0, len(spec.Containers))
	images := make([]string, 0, len(spec.Containers))
	for _, c := range spec.Containers {
		names, images = append(names, c.Name), append(images, c.Image)
	}
	sel := "<invalid>" // validation keeps this from happening
	if s, err := metav1.LabelSelectorAsSelector(selector); err == nil {
		sel = s.String()
	}
	return []any{strings.Join(names, ","), strings.Join(images, ","), sel}
}

// Deployments: NAME READY UP-TO-DATE AVAILABLE AGE, wide CONTAINERS IMAGES
// SELECTOR (printers.go deploymentColumnDefinitions).
func Deployments() *Table {
	doc := appsv1.DeploymentStatus{}.SwaggerDoc()
	return &Table{
		Columns: append([]metav1.TableColumnDefinition{nameColumn,
			column("Ready", "string", 0, "Number of the pod with ready state"),
			column("Up-to-date", "integer", 0, doc["updatedReplicas"]),
			column("Available", "integer", 0, doc["availableReplicas"]),
			ageColumn,
		}, templateColumns()...),
		Row: rowOf(func(d *appsv1.Deployment, now time.Time) []any {
			desired := int32(1)
			if d.Spec.Replicas != nil {
				desired = *d.Spec.Replicas
			}
			row := []any{d.Name, readyOf(d.Status.ReadyReplicas, desired), int64(d.Status.UpdatedReplicas),
				int64(d.Status.AvailableReplicas), age(d.CreationTimestamp, now)}
			return append(row, templateCells(d.Spec.Template.Spec, d.Spec.Selector)...)
		}),
	}
}

// ReplicaSets: NAME DESIRED CURRENT READY AGE, wide CONTAINERS IMAGES
// SELECTOR (printers.go replicaSetColumnDefinitions).
func ReplicaSets() *Table {
	doc := appsv1.ReplicaSetStatus{}.SwaggerDoc()
	return &Table{
		Columns: append([]metav1.TableColumnDefinition{nameColumn,
			column("Desired", "integer", 0, appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
			column("Current", "integer", 0, doc["replicas"]),
			column("Ready", "integer", 0, doc["readyReplicas"]),
			ageColumn,
		}, templateColumns()...),
		Row: rowOf(func(rs *appsv1.ReplicaSet, now time.Time) []any {
			desired := int32(1)
			if rs.Spec.Replicas != nil {
				desired = *rs.Spec.Replicas
			}
			row := []any{rs.Name, int64(desired), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas), age(rs.CreationTimestamp, now)}
			return append(row, templateCells(rs.Spec.Template.Spec, rs.Spec.Selector)...)
		}),
	}
}

func readyOf(ready, desired int32) string { return fmt.Sprintf("%d/%d", ready, desired) }
