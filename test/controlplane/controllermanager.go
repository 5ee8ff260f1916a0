package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

// controllerManagerMain is cmd/kube-controller-manager/controller-manager.go's
// main.
func controllerManagerMain() int {
	command := app.NewControllerManagerCommand()
	return cli.Run(command)
}
