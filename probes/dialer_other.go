//go:build !unix

package probes

// setLinger is a no-op where SO_LINGER is not set through syscall.
func setLinger(uintptr) {}
