package agent

import (
	"context"
	"strings"
	"sync"
	"time"

	libcg "github.com/opencontainers/cgroups"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/skiffnode/skiff/cgroups"
)

// Cpu usage is sampled only when the summary is read: nothing reads a
// cgroup while nobody asks (see docs/decisions/0039-stats-demand.md). The
// rate (usageNanoCores) of a read is measured from the previous read, if
// that was at most statsBaseMaxAge ago; else (the first read, or the first
// after a pause) the read takes a base sample, waits statsWarmup and
// samples again.
const (
	// statsBaseMaxAge is how old a previous read may be to serve as the
	// base of the next read's rates: scrapers (metrics-server every 15 s
	// by default, up to a minute or two) never wait for a warm-up.
	statsBaseMaxAge = 2 * time.Minute
	// statsWarmup is the interval a rate is measured over when there is
	// no base: also the shortest interval rate accepts for a new base.
	statsWarmup = time.Second
)

// cpuSample is one reading of a cgroup's cumulative cpu time.
type cpuSample struct {
	at    time.Time
	usage uint64
}

// cpuSamples keeps the last sample per cgroup key (pod UID or container
// ID), and when the last read ended. Safe for concurrent use.
type cpuSamples struct {
	mu   sync.Mutex
	last map[string]cpuSample
	// readAt is when the last read ended (zero: never).
	readAt time.Time
}

// rate records s for key and returns the usage in nanocores since the
// previous sample (nil without one, or if it is too recent to be exact).
func (c *cpuSamples) rate(key string, s cpuSample) *uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[string]cpuSample{}
	}
	prev, ok := c.last[key]
	dt := s.at.Sub(prev.at)
	if ok && dt < statsWarmup {
		// Too close: keep the older sample as the base.
		return nanoCores(prev, s)
	}
	c.last[key] = s
	if !ok {
		return nil
	}
	return nanoCores(prev, s)
}

// stale reports whether the samples are too old (or missing) to be the
// base of a read at now.
func (c *cpuSamples) stale(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readAt.IsZero() || now.Sub(c.readAt) > statsBaseMaxAge
}

// nanoCores is the cpu rate between two samples (pure).
func nanoCores(prev, cur cpuSample) *uint64 {
	dt := cur.at.Sub(prev.at)
	if dt <= 0 || cur.usage < prev.usage {
		return nil
	}
	v := uint64(float64(cur.usage-prev.usage) / dt.Seconds())
	return &v
}

// readDone drops the samples of keys not in keep and records that a read
// ended at now.
func (c *cpuSamples) readDone(now time.Time, keep map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.last {
		if !keep[k] {
			delete(c.last, k)
		}
	}
	c.readAt = now
}

// StatsSummary reads cpu and memory usage of every running pod and its
// running containers from their cgroups, in the shape of the kubelet's
// summary API (/stats/summary). Pods whose cgroups cannot be read are
// left out. Without pod cgroups (Config.Cgroups nil) only the node name
// is set. cpu rates (usageNanoCores) are measured since the previous read;
// when that is missing or older than statsBaseMaxAge, the call first takes
// a base sample and waits statsWarmup (or until ctx is done, then the
// rates may be missing). A container that is new since the previous read
// has no rate yet, as with the kubelet before cAdvisor's second sample.
// Safe for concurrent use; reads files, does not block on pods.
func (a *Agent) StatsSummary(ctx context.Context) *statsapi.Summary {
	if (a.cfg.Cgroups != nil || a.cfg.NodeUsage != nil) && a.samples.stale(a.clock.Now()) {
		a.readStats(a.clock.Now())
		select {
		case <-ctx.Done():
		case <-a.clock.After(statsWarmup):
		}
	}
	return a.readStats(a.clock.Now())
}

// nodeStatsKey keys the node's cpu samples (the others are pod UIDs and
// container IDs).
const nodeStatsKey = "node"

// readStats samples the node and every running pod's cgroups at now (see
// StatsSummary).
func (a *Agent) readStats(now time.Time) *statsapi.Summary {
	sum := &statsapi.Summary{Node: statsapi.NodeStats{NodeName: a.cfg.NodeName}, Pods: []statsapi.PodStats{}}
	keep := map[string]bool{}
	if a.cfg.NodeUsage != nil {
		if u, err := a.cfg.NodeUsage(); err == nil {
			keep[nodeStatsKey] = true
			sum.Node.CPU, sum.Node.Memory, sum.Node.IO = a.cpuStats(nodeStatsKey, u, now), memoryStats(u, now), ioStats(u, now)
		} else {
			a.log.Debug("reading the node's usage", "err", err)
		}
	}
	cg := a.cfg.Cgroups
	if cg == nil {
		a.samples.readDone(now, keep)
		return sum
	}
	for _, pod := range a.Pods() {
		u, err := cg.PodUsage(pod)
		if err != nil || pod.Status.Phase != v1.PodRunning {
			continue
		}
		keep[string(pod.UID)] = true
		ps := statsapi.PodStats{
			PodRef: statsapi.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)},
			CPU:    a.cpuStats(string(pod.UID), u, now),
			Memory: memoryStats(u, now),
			IO:     ioStats(u, now),
		}
		if pod.Status.StartTime != nil {
			ps.StartTime = *pod.Status.StartTime
		}
		ps.Containers = a.containerStats(cg, pod, now, keep)
		sum.Pods = append(sum.Pods, ps)
	}
	a.samples.readDone(now, keep)
	return sum
}

func (a *Agent) containerStats(cg PodCgroups, pod *v1.Pod, now time.Time, keep map[string]bool) []statsapi.ContainerStats {
	out := []statsapi.ContainerStats{}
	all := append(append([]v1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, cs := range all {
		if cs.State.Running == nil || cs.ContainerID == "" {
			continue
		}
		id := cs.ContainerID[strings.Index(cs.ContainerID, "://")+3:]
		u, err := cg.ContainerUsage(pod, id)
		if err != nil {
			continue
		}
		keep[id] = true
		out = append(out, statsapi.ContainerStats{
			Name: cs.Name, StartTime: cs.State.Running.StartedAt,
			CPU: a.cpuStats(id, u, now), Memory: memoryStats(u, now), IO: ioStats(u, now),
		})
	}
	return out
}

func (a *Agent) cpuStats(key string, u *cgroups.Usage, now time.Time) *statsapi.CPUStats {
	total := u.CPUUsageNanoSeconds
	return &statsapi.CPUStats{
		Time:                 metav1.NewTime(now),
		UsageCoreNanoSeconds: &total,
		UsageNanoCores:       a.samples.rate(key, cpuSample{at: now, usage: total}),
		PSI:                  psiStats(u.Pressure.CPU),
	}
}

func memoryStats(u *cgroups.Usage, now time.Time) *statsapi.MemoryStats {
	usage, ws, rss := u.MemoryUsageBytes, u.WorkingSetBytes, u.RSSBytes
	return &statsapi.MemoryStats{Time: metav1.NewTime(now), UsageBytes: &usage, WorkingSetBytes: &ws, RSSBytes: &rss,
		PSI: psiStats(u.Pressure.Memory)}
}

// ioStats is the summary's io section: only its PSI (KubeletPSI), nil
// without one.
func ioStats(u *cgroups.Usage, now time.Time) *statsapi.IOStats {
	if u.Pressure.IO == nil {
		return nil
	}
	return &statsapi.IOStats{Time: metav1.NewTime(now), PSI: psiStats(u.Pressure.IO)}
}

// psiStats converts the kernel's PSI as the kubelet does (totals kept in
// the kernel's microseconds); nil stays nil (cgroup v1, or no PSI).
func psiStats(p *libcg.PSIStats) *statsapi.PSIStats {
	if p == nil {
		return nil
	}
	data := func(d libcg.PSIData) statsapi.PSIData {
		return statsapi.PSIData{Total: d.Total, Avg10: d.Avg10, Avg60: d.Avg60, Avg300: d.Avg300}
	}
	return &statsapi.PSIStats{Full: data(p.Full), Some: data(p.Some)}
}
