// Package cgroups owns skiff's pod-level cgroups, the way the kubelet lays
// them out: a "kubepods" root, one parent per QoS class ("burstable",
// "besteffort"; Guaranteed pods sit directly under kubepods) and one cgroup
// per pod ("pod<uid>"), which the CRI runtime uses as the sandbox's
// CgroupParent and puts the containers' cgroups under.
//
// Two drivers name those cgroups: cgroupfs (/kubepods/burstable/pod<uid>)
// and systemd (kubepods.slice/kubepods-burstable.slice/
// kubepods-burstable-pod<uid>.slice, created as transient slices over
// D-Bus). Both work on cgroup v1 (hybrid/legacy: one hierarchy per
// controller) and v2 (the unified hierarchy); the writing of limits is left
// to github.com/opencontainers/cgroups, the library runc uses.
//
// The pure computations (effective pod requests and limits, cpu
// shares/weight/quota conversions) live in resources.go and need no cgroup
// filesystem; the QoS class comes from the neutral podspec/qos, which the
// API server uses too.
package cgroups
