// Package supervisor runs child processes that skiff keeps alive: the
// managed containerd (runtime/containerd) and the control-plane shim
// (controlplane). A Daemon owns the mechanics they share: replacing a child
// that an earlier skiff run left behind (pid files), starting a child in
// its own process group with a parent-death signal, waiting until it is
// ready (rolling the start back when it is not), restarting it after a
// back-off when it exits, and stopping it (SIGTERM, then SIGKILL).
// What "ready" means and which flags a child gets stay with its owner.
package supervisor
