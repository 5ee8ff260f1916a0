// Command skiff-pause is a sandbox ("infra") process for skiff's pods: the
// pause image is built from it with `skiff agent --pause-binary`, or by
// default on architectures without skiff's built-in pause (amd64 and arm64
// have one, internal/pause.Executable, ~10 kB of RSS per pod). It
// imports only internal/pause, so it starts in about a millisecond with
// under a megabyte of memory; skiff's own executable can serve as pause as
// well, but pays for the initialisation of every package skiff links in
// (~80 ms of CPU and ~20 MB of RSS per pod, issue 5 density).
package main

import (
	"os"

	"github.com/skiffnode/skiff/internal/pause"
)

func main() { os.Exit(pause.Run()) }
