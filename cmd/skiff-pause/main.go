// Command skiff-pause is the sandbox ("infra") process of skiff's pods: the
// pause image is built from it (see `skiff agent --pause-binary`). It
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
