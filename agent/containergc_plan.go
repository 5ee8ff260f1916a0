package agent

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/runtime"
)

// ContainerGCPolicy is the kubelet's container GC policy (checklist
// F.5-F.9), with its flags' names.
type ContainerGCPolicy struct {
	// MinAge: a dead container created more recently is kept
	// (--minimum-container-ttl-duration; 0: no minimum).
	MinAge time.Duration
	// MaxPerPodContainer: dead instances kept per container of a pod
	// (--maximum-dead-containers-per-container; < 0: no limit). The newest
	// dead instance of a container of a pod that still exists is always
	// kept (F.10: an init container's completion and `logs --previous`).
	MaxPerPodContainer int
	// MaxContainers: dead containers kept on the node in all
	// (--maximum-dead-containers; < 0: no limit).
	MaxContainers int
}

// DefaultContainerGCPolicy is the kubelet's default (F.9).
func DefaultContainerGCPolicy() ContainerGCPolicy {
	return ContainerGCPolicy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}
}

// DefaultContainerGCPeriod is the kubelet's container GC period (F.1).
const DefaultContainerGCPeriod = time.Minute

// gcInput is what one container GC pass sees: skiff's sandboxes and
// containers (A.4: only objects with the managed label are listed), the
// pods that have a worker, and whether every source has delivered its
// pods (until then no pod counts as deleted).
type gcInput struct {
	Sandboxes    []*runtime.Sandbox
	Containers   []*runtime.Container
	Live         map[types.UID]bool
	SourcesReady bool
	// Known are the log directories, by pod UID, of pods seen in earlier
	// listings (see gcPlan.Remember).
	Known map[types.UID]string
	// PodLogsDir is the root of the pods' log directories.
	PodLogsDir string
}

// gcContainer is a container the GC removes, with its pod and log file.
type gcContainer struct {
	ID, LogPath string
	UID         types.UID
}

// gcSandbox is a sandbox the GC removes.
type gcSandbox struct {
	ID  string
	UID types.UID
}

// gcLogDir is a pod log directory the GC removes.
type gcLogDir struct {
	Dir string
	UID types.UID
}

// gcPlan is what one pass removes: containers (oldest first), then
// sandboxes, then log directories. Remember are the log directories of
// the pods that still have objects after the plan, for the next pass.
type gcPlan struct {
	Containers []gcContainer
	Sandboxes  []gcSandbox
	LogDirs    []gcLogDir
	Remember   map[types.UID]string
}

// evictUnit is one container of one pod: the kubelet's (UID, name) pair.
type evictUnit struct {
	uid  types.UID
	name string
}

// planContainerGC decides what the container GC removes (the kubelet's
// evictContainers, evictSandboxes and evictPodLogsDirectories, F.5-F.10),
// as a safety net beside the pod workers, which prune their own old
// instances and tear down deleted pods:
//   - running containers are never removed, nor containers younger than
//     MinAge;
//   - a deleted pod (no worker, every source ready) loses every dead
//     container, its not-ready sandboxes without containers, and then its
//     log directory;
//   - a pod that has a worker loses only exited instances beyond
//     MaxPerPodContainer per container, never the newest one (F.10), and
//     its not-ready sandboxes without containers other than the newest;
//   - over MaxContainers, each container keeps max(1, MaxContainers/units)
//     instances (F.7): at worst its newest.
//
// Pure.
func planContainerGC(in gcInput, p ContainerGCPolicy, now time.Time) gcPlan {
	plan := gcPlan{Remember: map[types.UID]string{}}
	deleted := func(uid types.UID) bool { return in.SourcesReady && !in.Live[uid] }
	units := map[evictUnit][]*runtime.Container{}
	for _, c := range in.Containers {
		uid := types.UID(c.Labels[labelPodUID])
		if c.State == runtime.ContainerRunning || (p.MinAge > 0 && now.Sub(c.CreatedAt) < p.MinAge) {
			continue
		}
		if deleted(uid) {
			plan.Containers = append(plan.Containers, in.gcContainer(c))
			continue
		}
		// A live pod's created or unknown container may be one its worker
		// is starting: only exited ones are the GC's.
		if c.State == runtime.ContainerExited {
			k := evictUnit{uid, c.Name}
			units[k] = append(units[k], c)
		}
	}
	for _, cs := range units {
		sortNewestFirst(cs)
	}
	if p.MaxPerPodContainer >= 0 {
		plan.Containers = append(plan.Containers, in.trimUnits(units, max(1, p.MaxPerPodContainer))...)
	}
	if p.MaxContainers >= 0 && countUnits(units) > p.MaxContainers {
		// The kubelet then evicts the oldest of what is left; here that
		// is only each container's newest instance, which stays (F.10).
		plan.Containers = append(plan.Containers, in.trimUnits(units, max(1, p.MaxContainers/len(units)))...)
	}
	sortOldestFirst(plan.Containers, in.Containers)
	in.planSandboxes(&plan, deleted)
	in.planLogDirs(&plan, deleted)
	return plan
}

// gcContainer is c with its log file (from its labels, as the worker
// named it).
func (in *gcInput) gcContainer(c *runtime.Container) gcContainer {
	uid := c.Labels[labelPodUID]
	dir := podlogs.PodDir(in.PodLogsDir, c.Labels[labelPodNamespace], c.Labels[labelPodName], uid)
	return gcContainer{ID: c.ID, UID: types.UID(uid), LogPath: podlogs.ContainerLogPath(dir, c.Name, int(c.Attempt))}
}

// trimUnits cuts every unit (newest first) to keep instances and returns
// the instances cut.
func (in *gcInput) trimUnits(units map[evictUnit][]*runtime.Container, keep int) []gcContainer {
	var out []gcContainer
	for k, cs := range units {
		if len(cs) > keep {
			for _, c := range cs[keep:] {
				out = append(out, in.gcContainer(c))
			}
			units[k] = cs[:keep]
		}
	}
	return out
}

// planSandboxes adds the sandboxes that are not ready and keep no
// container after the plan: all of a deleted pod's, and all but the
// newest of a live pod's.
func (in *gcInput) planSandboxes(plan *gcPlan, deleted func(types.UID) bool) {
	removed := make(map[string]bool, len(plan.Containers))
	for _, c := range plan.Containers {
		removed[c.ID] = true
	}
	inUse := map[string]bool{}
	for _, c := range in.Containers {
		if !removed[c.ID] {
			inUse[c.SandboxID] = true
		}
	}
	byPod := map[types.UID][]*runtime.Sandbox{}
	for _, sb := range in.Sandboxes {
		uid := types.UID(sb.Labels[labelPodUID])
		byPod[uid] = append(byPod[uid], sb)
	}
	for uid, sbs := range byPod {
		sort.Slice(sbs, func(i, j int) bool {
			if sbs[i].Attempt != sbs[j].Attempt {
				return sbs[i].Attempt > sbs[j].Attempt
			}
			return sbs[i].CreatedAt.After(sbs[j].CreatedAt)
		})
		if !deleted(uid) {
			sbs = sbs[1:]
		}
		for _, sb := range sbs {
			if sb.State != runtime.SandboxReady && !inUse[sb.ID] {
				plan.Sandboxes = append(plan.Sandboxes, gcSandbox{ID: sb.ID, UID: uid})
			}
		}
	}
	sort.Slice(plan.Sandboxes, func(i, j int) bool { return plan.Sandboxes[i].ID < plan.Sandboxes[j].ID })
}

// planLogDirs adds the log directories of deleted pods with nothing left
// after the plan, among the pods of this listing and those remembered
// from earlier ones, and remembers the pods that keep objects. A log
// directory of a pod skiff never listed is never touched (A.4: it may be
// another agent's).
func (in *gcInput) planLogDirs(plan *gcPlan, deleted func(types.UID) bool) {
	left := map[types.UID]string{}
	removedC := map[string]bool{}
	for _, c := range plan.Containers {
		removedC[c.ID] = true
	}
	removedS := map[string]bool{}
	for _, sb := range plan.Sandboxes {
		removedS[sb.ID] = true
	}
	candidates := map[types.UID]string{}
	for uid, dir := range in.Known {
		candidates[uid] = dir
	}
	for _, c := range in.Containers {
		uid := types.UID(c.Labels[labelPodUID])
		dir := podlogs.PodDir(in.PodLogsDir, c.Labels[labelPodNamespace], c.Labels[labelPodName], string(uid))
		candidates[uid] = dir
		if !removedC[c.ID] {
			left[uid] = dir
		}
	}
	for _, sb := range in.Sandboxes {
		uid := types.UID(sb.Labels[labelPodUID])
		dir := podlogs.PodDir(in.PodLogsDir, sb.Labels[labelPodNamespace], sb.Labels[labelPodName], string(uid))
		candidates[uid] = dir
		if !removedS[sb.ID] {
			left[uid] = dir
		}
	}
	for uid, dir := range candidates {
		switch {
		case uid == "":
		case left[uid] != "" || !deleted(uid):
			plan.Remember[uid] = dir
		default:
			plan.LogDirs = append(plan.LogDirs, gcLogDir{Dir: dir, UID: uid})
		}
	}
	sort.Slice(plan.LogDirs, func(i, j int) bool { return plan.LogDirs[i].Dir < plan.LogDirs[j].Dir })
}

func countUnits(units map[evictUnit][]*runtime.Container) int {
	n := 0
	for _, cs := range units {
		n += len(cs)
	}
	return n
}

// sortNewestFirst orders one container's instances newest first, by
// attempt, then creation (the kubelet's byAttempt).
func sortNewestFirst(cs []*runtime.Container) {
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].Attempt != cs[j].Attempt {
			return cs[i].Attempt > cs[j].Attempt
		}
		return cs[i].CreatedAt.After(cs[j].CreatedAt)
	})
}

// createdBefore orders containers oldest first (ID breaks ties).
func createdBefore(a, b *runtime.Container) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.ID < b.ID
}

// sortOldestFirst orders the plan's containers by their listing's
// creation times, oldest first.
func sortOldestFirst(out []gcContainer, listed []*runtime.Container) {
	byID := make(map[string]*runtime.Container, len(listed))
	for _, c := range listed {
		byID[c.ID] = c
	}
	sort.Slice(out, func(i, j int) bool { return createdBefore(byID[out[i].ID], byID[out[j].ID]) })
}
