// Command pause is a minimal pause executable for the integration test: the
// pause image is built from it as skiff builds its own from skiff's binary.
package main

import (
	"os"

	"github.com/skiffnode/skiff/internal/pause"
)

func main() { os.Exit(pause.Run()) }
