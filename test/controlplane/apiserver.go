package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

// apiserverMain is cmd/kube-apiserver/apiserver.go's main.
func apiserverMain() int {
	command := app.NewAPIServerCommand()
	return cli.Run(command)
}
