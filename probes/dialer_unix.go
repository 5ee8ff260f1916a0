//go:build unix

package probes

import "syscall"

// setLinger sets SO_LINGER {on, 1s} on fd; errors are ignored, a probe works
// without it.
func setLinger(fd uintptr) {
	_ = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1})
}
