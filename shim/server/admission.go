package server

import (
	"fmt"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffnode/skiff/shim/admission/noderestriction"
)

// admissionChain builds the shim's admission plugins, in the order they
// run, each given its dependencies explicitly (no plugin registry, no
// initializers). client and factory talk to the shim itself through its
// loopback connection; the factory is started once the server serves
// (genericapiserver's start-informers hook), so a plugin must wait for
// its informers' sync before it trusts them (ValidateInitialization
// checks the wiring, not the sync).
func admissionChain(client kubernetes.Interface, factory informers.SharedInformerFactory) (admission.Interface, error) {
	_, _ = client, factory
	plugins := []admission.Interface{noderestriction.New(noderestriction.ClientLookup(client))}
	for _, p := range plugins {
		if v, ok := p.(admission.InitializationValidator); ok {
			if err := v.ValidateInitialization(); err != nil {
				return nil, fmt.Errorf("admission: %w", err)
			}
		}
	}
	return admission.NewChainHandler(plugins...), nil
}
