package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

// schedulerMain is cmd/kube-scheduler/scheduler.go's main.
func schedulerMain() int {
	command := app.NewSchedulerCommand()
	return cli.Run(command)
}
