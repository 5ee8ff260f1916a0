// Package printers gives the shim's kinds the Table columns kubectl
// prints for them (`kubectl get`), as kube-apiserver's
// pkg/printers/internalversion/printers.go defines them; the pod columns
// are skiff's cliview, shared with `skiff get pods`.
package printers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
)

// Table is one kind's columns and how to fill a row. Row returns one cell
// per column, in order. A Table is immutable and safe for concurrent use.
type Table struct {
	Columns []metav1.TableColumnDefinition
	Row     func(obj runtime.Object, now time.Time) ([]any, error)
	clock   clock.PassiveClock
}

var _ rest.TableConvertor = (*Table)(nil)

// objectMeta documents the metadata columns.
var objectMeta = metav1.ObjectMeta{}.SwaggerDoc()

// nameColumn and ageColumn are every kind's first and age columns.
var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: objectMeta["name"]}
	ageColumn  = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: objectMeta["creationTimestamp"]}
)

// ConvertToTable implements rest.TableConvertor: one row per object (a
// list's items), the object itself in the row for kubectl's
// includeObject handling, the list's resourceVersion and continue token.
func (t *Table) ConvertToTable(_ context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	now := t.now()
	table := &metav1.Table{}
	add := func(obj runtime.Object) error {
		cells, err := t.Row(obj, now)
		if err != nil {
			return err
		}
		if len(cells) != len(t.Columns) {
			return fmt.Errorf("table row of %T: %d cells for %d columns", obj, len(cells), len(t.Columns))
		}
		table.Rows = append(table.Rows, metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: obj}})
		return nil
	}
	var err error
	if meta.IsListType(object) {
		err = meta.EachListItem(object, add)
	} else {
		err = add(object)
	}
	if err != nil {
		return nil, err
	}
	if m, err := meta.ListAccessor(object); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(object); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	if opt, ok := tableOptions.(*metav1.TableOptions); !ok || !opt.NoHeaders {
		table.ColumnDefinitions = t.Columns
	}
	return table, nil
}

func (t *Table) now() time.Time {
	if t.clock == nil {
		return time.Now()
	}
	return t.clock.Now()
}

// age is the AGE cell of a creation timestamp.
func age(ts metav1.Time, now time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return humanDuration(now.Sub(ts.Time))
}

// orNone is kubectl's "<none>" for an empty cell.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
