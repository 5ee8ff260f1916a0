package nodeshutdown

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Group is one step of a shutdown: its pods are stopped together, and the
// next group starts once all of them stopped or Budget ran out.
type Group struct {
	// Priority is the group's configured lower bound.
	Priority int32
	// Budget is the group's shutdownGracePeriodSeconds.
	Budget time.Duration
	Kills  []Kill
}

// Kill is one pod of a group and the grace period it gets: the group's
// budget, or the pod's terminationGracePeriodSeconds where that is not
// longer.
type Kill struct {
	Pod                *v1.Pod
	GracePeriodSeconds int64
}

// Plan groups pods for a shutdown, as the kubelet's groupByPriority and
// killPods do. periods is Config.Periods (sorted, lowest priority first).
// A pod goes to the group of the highest configured priority not above
// its own (spec.priority; none: 0); a pod below the lowest goes to the
// lowest, one above the highest to the highest (H.20). Groups without pods
// are left out: the kubelet does not wait for them. Groups come lowest
// priority first, pods in the order given. Pure.
func Plan(periods []PriorityGracePeriod, pods []*v1.Pod) []Group {
	if len(periods) == 0 {
		return nil
	}
	groups := make([]Group, len(periods))
	for i, p := range periods {
		groups[i] = Group{Priority: p.Priority, Budget: time.Duration(p.ShutdownGracePeriodSeconds) * time.Second}
	}
	for _, pod := range pods {
		var prio int32
		if pod.Spec.Priority != nil {
			prio = *pod.Spec.Priority
		}
		i := sort.Search(len(groups), func(i int) bool { return groups[i].Priority > prio }) - 1
		i = max(i, 0)
		grace := periods[i].ShutdownGracePeriodSeconds
		if tg := pod.Spec.TerminationGracePeriodSeconds; tg != nil && *tg <= grace {
			grace = *tg
		}
		groups[i].Kills = append(groups[i].Kills, Kill{Pod: pod, GracePeriodSeconds: grace})
	}
	out := groups[:0]
	for _, g := range groups {
		if len(g.Kills) > 0 {
			out = append(out, g)
		}
	}
	return out
}
