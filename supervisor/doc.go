// Package supervisor runs child processes that skiff keeps alive: the
// managed containerd (runtime/containerd) and the control-plane shim
// (controlplane). It owns the mechanics they share: starting a child in its
// own process group with a parent-death signal, restarting it after a
// back-off when it exits, stopping it (SIGTERM, then SIGKILL), and finding
// and stopping one that an earlier skiff run left behind (pid files).
// What "ready" means and which flags a child gets stay with its owner.
package supervisor
