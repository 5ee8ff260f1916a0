package server

import (
	"context"
	"fmt"

	policyv1 "k8s.io/api/policy/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/skiffnode/skiff/shim/registry/pod"
)

// addEviction adds pods/eviction to the core group's storage when the
// PodDisruptionBudgets are served (skiff-apiserver's build): evictions
// read and write the budgets through their own Stores, as kube-apiserver's
// through its loopback client.
func addEviction(byGroup map[string]map[string]rest.Storage) error {
	budgets, status := byGroup[policyv1.GroupName]["poddisruptionbudgets"], byGroup[policyv1.GroupName]["poddisruptionbudgets/status"]
	if budgets == nil {
		return nil
	}
	core := byGroup[""]
	pods, ok1 := core["pods/status"].(rest.Patcher)
	del, ok2 := core["pods"].(rest.GracefulDeleter)
	b, ok3 := budgets.(budgetReader)
	st, ok4 := status.(rest.Updater)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return fmt.Errorf("pods/eviction: pods %T, %T; budgets %T, %T", core["pods/status"], core["pods"], budgets, status)
	}
	core["pods/eviction"] = &pod.EvictionREST{Pods: pods, Delete: del, Budgets: storeBudgets{main: b, status: st}}
	return nil
}

// budgetReader is the PodDisruptionBudgets' main Store, as eviction reads
// it.
type budgetReader interface {
	rest.Lister
	rest.Getter
}

// storeBudgets is pod.Budgets on the PodDisruptionBudgets' Stores.
type storeBudgets struct {
	main   budgetReader
	status rest.Updater
}

func (b storeBudgets) List(ctx context.Context, namespace string) ([]policyv1.PodDisruptionBudget, error) {
	obj, err := b.main.List(genericapirequest.WithNamespace(ctx, namespace), &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*policyv1.PodDisruptionBudgetList).Items, nil
}

func (b storeBudgets) Get(ctx context.Context, namespace, name string) (*policyv1.PodDisruptionBudget, error) {
	obj, err := b.main.Get(genericapirequest.WithNamespace(ctx, namespace), name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*policyv1.PodDisruptionBudget), nil
}

func (b storeBudgets) UpdateStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error {
	_, _, err := b.status.Update(genericapirequest.WithNamespace(ctx, pdb.Namespace), pdb.Name, rest.DefaultUpdatedObjectInfo(pdb),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	return err
}
