// Package podlogs owns the on-disk layout and format of container logs:
// /var/log/pods/<namespace>_<name>_<uid>/<container>/<restartCount>.log in the
// CRI log format ("<RFC3339Nano time> <stdout|stderr> <F|P> <content>").
package podlogs

import (
	"path/filepath"
	"strconv"
)

// DefaultRoot is the kubelet's default pod logs directory.
const DefaultRoot = "/var/log/pods"

// PodDir returns the log directory of a pod under root.
func PodDir(root, namespace, name, uid string) string {
	return filepath.Join(root, namespace+"_"+name+"_"+uid)
}

// ContainerLogRel returns a container log path relative to its pod's log
// directory, as CRI's ContainerConfig.LogPath expects.
func ContainerLogRel(container string, restartCount int) string {
	return filepath.Join(container, strconv.Itoa(restartCount)+".log")
}

// ContainerLogPath returns the absolute log path of one run of a container.
func ContainerLogPath(podDir, container string, restartCount int) string {
	return filepath.Join(podDir, ContainerLogRel(container, restartCount))
}
