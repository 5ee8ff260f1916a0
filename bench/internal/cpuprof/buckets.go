package cpuprof

import (
	"math"
	"slices"
	"strings"
)

// skiffPkg is the import path prefix of skiff's own packages.
const skiffPkg = "github.com/skiffnode/skiff/"

// Bucket is a group of the agent's work that a profile sample is charged
// to: the first bucket (in Buckets' order) with a frame of the sample's
// stack that Match accepts.
type Bucket struct {
	Name  string
	What  string
	Match func(fn string) bool
}

// Buckets returns the groups a steady-state profile of skiff is broken
// into, in the order they are tried: the Go runtime's GC first (an assist
// inside a probe is GC), then skiff's packages from the most to the least
// specific, then gRPC's connection goroutines, the scheduler, the rest.
// The last bucket matches everything, so the buckets add up to the whole.
// The agent's relist frames are matched under their names before issue 30
// too ((*Agent).relist..., (*Agent).watchExits), for older profiles.
func Buckets() []Bucket {
	return []Bucket{
		{"GC", "Go's garbage collector: mark workers, assists, sweeping, scavenging",
			oneOf("runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.bgsweep", "runtime.bgscavenge",
				"runtime.gcStart", "runtime.gcMarkDone", "runtime.gcMarkTermination", "runtime.forcegchelper")},
		{"probes", "the probe workers (skiff/probes) and the ExecSync calls they make, up to gRPC's write",
			prefix(skiffPkg + "probes.")},
		{"event stream", "containerd's event stream: exit events received, decoded and passed on (skiff/runtime/containerd exit watcher, the agent's exit queue)",
			oneOfPrefix(skiffPkg+"runtime/containerd.(*ExitWatcher)", skiffPkg+"agent.(*relistLoop).watchExits",
				skiffPkg+"agent.(*exitQueue)", skiffPkg+"agent.(*Agent).watchExits")},
		{"relist", "the relist loop: CRI listings and comparing them with the last",
			oneOfPrefix(skiffPkg+"agent.(*relistLoop)", skiffPkg+"agent.(*relister)", skiffPkg+"agent.(*Agent).relist")},
		{"stats", "cgroup statistics (/stats/summary, resource metrics)",
			oneOfPrefix(skiffPkg+"agent.(*Agent).StatsSummary", skiffPkg+"agent.(*Agent).readStats", skiffPkg+"cgroups")},
		{"status/API", "status publishing, the local API server, the API server client",
			oneOfPrefix(skiffPkg+"server.", skiffPkg+"apiclient", skiffPkg+"agent.(*podWorker).publishStatus", "net/http.(*conn).serve")},
		{"pod workers", "the pod workers' syncs (skiff/agent podWorker)",
			prefix(skiffPkg + "agent.(*podWorker)")},
		{"other skiff", "any other stack through skiff's own packages (GC loops, log rotation, the start gate...)",
			prefix(skiffPkg)},
		{"gRPC transport", "gRPC's connection goroutines (HTTP/2 reader and writer, shared by every CRI call and the event stream)",
			oneOfPrefix("google.golang.org/grpc", "golang.org/x/net/http2")},
		{"scheduler", "the Go scheduler looking for work (timers, epoll, idle threads) and sysmon: wake-ups, not work",
			oneOf("runtime.schedule", "runtime.findRunnable", "runtime.park_m", "runtime.goexit0", "runtime.sysmon",
				"runtime.mstart", "runtime.stopm", "runtime.netpoll", "runtime.goschedImpl")},
		{"other", "everything else (runtime, syscalls and libraries outside the stacks above)",
			func(string) bool { return true }},
	}
}

// bucketOf is the index in bs of the first bucket that matches a frame
// of frames; the last one when none does.
func bucketOf(bs []Bucket, frames []string) int {
	for i, b := range bs {
		for _, f := range frames {
			if b.Match(f) {
				return i
			}
		}
	}
	return len(bs) - 1
}

func oneOf(names ...string) func(string) bool {
	return func(fn string) bool { return slices.Contains(names, fn) }
}

func prefix(p string) func(string) bool {
	return func(fn string) bool { return strings.HasPrefix(fn, p) }
}

func oneOfPrefix(ps ...string) func(string) bool {
	return func(fn string) bool {
		for _, p := range ps {
			if strings.HasPrefix(fn, p) {
				return true
			}
		}
		return false
	}
}

func nan() float64 { return math.NaN() }
