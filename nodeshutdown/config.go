// Package nodeshutdown is skiff's graceful node shutdown (H.17-H.21), as
// the kubelet's nodeshutdown manager: it holds a systemd-logind delay
// inhibitor lock, and when logind announces a shutdown (PrepareForShutdown
// true) it stops the node's pods in priority groups, lowest first, each
// group within its grace period, then releases the lock so that the
// shutdown goes on. A cancelled shutdown (PrepareForShutdown false) takes
// the lock again and admits pods again.
//
// The plan (Plan: groups, budgets, per-pod grace periods) is a pure
// function of the configuration and the pods; the Manager executes it
// through two ports: Logind (the D-Bus side, DBusLogind in production) and
// Pods (the agent). The kubelet's code is re-implemented here, never
// imported.
package nodeshutdown

import (
	"fmt"
	"sort"
	"time"
)

// The kubelet's priorities for the two-phase configuration (migrateConfig):
// regular pods are those below SystemCriticalPriority (the priority of
// system-cluster-critical; system-node-critical is higher).
const (
	// DefaultPriority is the priority of a pod without one
	// (scheduling.DefaultPriorityWhenNoDefaultClassExists).
	DefaultPriority int32 = 0
	// SystemCriticalPriority is scheduling.SystemCriticalPriority.
	SystemCriticalPriority int32 = 2000000000
)

// PriorityGracePeriod is one entry of shutdownGracePeriodByPodPriority
// (KubeletConfiguration's ShutdownGracePeriodByPodPriority): pods whose
// priority is at least Priority, and below the next entry's, get
// ShutdownGracePeriodSeconds in total.
type PriorityGracePeriod struct {
	Priority                   int32 `json:"priority"`
	ShutdownGracePeriodSeconds int64 `json:"shutdownGracePeriodSeconds"`
}

// Config is the graceful shutdown configuration: either GracePeriod and
// GracePeriodCriticalPods (--shutdown-grace-period,
// --shutdown-grace-period-critical-pods) or ByPodPriority
// (shutdownGracePeriodByPodPriority), never both, as the kubelet's
// validation demands. The zero Config turns the feature off.
type Config struct {
	GracePeriod             time.Duration
	GracePeriodCriticalPods time.Duration
	ByPodPriority           []PriorityGracePeriod
}

// Validate checks c with the kubelet's rules (ValidateKubeletConfiguration);
// errors name the setting.
func (c Config) Validate() error {
	if c.GracePeriod < 0 {
		return fmt.Errorf("shutdownGracePeriod %v must be >= 0", c.GracePeriod)
	}
	if c.GracePeriodCriticalPods < 0 {
		return fmt.Errorf("shutdownGracePeriodCriticalPods %v must be >= 0", c.GracePeriodCriticalPods)
	}
	if c.GracePeriodCriticalPods > c.GracePeriod {
		return fmt.Errorf("shutdownGracePeriodCriticalPods %v must be <= shutdownGracePeriod %v", c.GracePeriodCriticalPods, c.GracePeriod)
	}
	if len(c.ByPodPriority) > 0 && (c.GracePeriod != 0 || c.GracePeriodCriticalPods != 0) {
		return fmt.Errorf("cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time")
	}
	seen := map[int32]bool{}
	for i, p := range c.ByPodPriority {
		if p.ShutdownGracePeriodSeconds < 0 {
			return fmt.Errorf("shutdownGracePeriodByPodPriority[%d].shutdownGracePeriodSeconds %d must be >= 0", i, p.ShutdownGracePeriodSeconds)
		}
		if seen[p.Priority] {
			return fmt.Errorf("shutdownGracePeriodByPodPriority[%d].priority %d is given twice", i, p.Priority)
		}
		seen[p.Priority] = true
	}
	return nil
}

// Periods returns the priority groups of c, lowest priority first: the
// by-priority list as given, or the two-phase form turned into one (the
// kubelet's migrateConfig): priority 0 gets GracePeriod -
// GracePeriodCriticalPods, SystemCriticalPriority gets
// GracePeriodCriticalPods (whole seconds, truncated as the kubelet does).
// nil: the feature is off. Pure.
func (c Config) Periods() []PriorityGracePeriod {
	out := append([]PriorityGracePeriod(nil), c.ByPodPriority...)
	if len(out) == 0 {
		if c.GracePeriod <= 0 || c.GracePeriodCriticalPods > c.GracePeriod {
			return nil
		}
		out = []PriorityGracePeriod{
			{Priority: DefaultPriority, ShutdownGracePeriodSeconds: int64((c.GracePeriod - c.GracePeriodCriticalPods) / time.Second)},
			{Priority: SystemCriticalPriority, ShutdownGracePeriodSeconds: int64(c.GracePeriodCriticalPods / time.Second)},
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Priority < out[j].Priority })
	return out
}

// Enabled reports whether c asks for graceful shutdown at all.
func (c Config) Enabled() bool { return len(c.Periods()) > 0 }

// Total is the whole shutdown delay c asks logind for: the sum of the
// groups' grace periods (the kubelet's periodRequested).
func (c Config) Total() time.Duration {
	var sum int64
	for _, p := range c.Periods() {
		sum += p.ShutdownGracePeriodSeconds
	}
	return time.Duration(sum) * time.Second
}
