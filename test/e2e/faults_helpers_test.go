package e2e

import (
	"bufio"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/network"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/test/criproxy"
)

// The faults suite (make faults; issue 34) runs with SKIFF_FAULTS set to
// its scale and SKIFF_E2E_RUNTIME=external: the suite's containerd is the
// runtime the CRI fault injector sits in front of, and the one the
// runtime-kill scenario kills (its supervisor restarts it, as systemd
// restarts a node's containerd). Each scenario appends its figures to
// SKIFF_FAULTS_REPORT (a markdown table), when set.

// faultScale is how big a scenario runs.
type faultScale struct {
	name string
	// churnPods pods live through churnFor of CRI errors, one replaced
	// every churnEvery.
	churnPods              int
	churnFor, churnEvery   time.Duration
	killPods, runtimeKills int
	// agentChurnOps create/delete operations with agentKills agent kills.
	agentChurnOps, agentKills int
	// slowFor of a slow runtime.
	slowFor time.Duration
	// apiFlaps times the API server connection goes down and up.
	apiFlaps int
}

var faultScales = map[string]faultScale{
	"short": {name: "short", churnPods: 10, churnFor: 60 * time.Second, churnEvery: 3 * time.Second,
		killPods: 20, runtimeKills: 2, agentChurnOps: 100, agentKills: 3, slowFor: 45 * time.Second, apiFlaps: 4},
	"full": {name: "full", churnPods: 50, churnFor: 10 * time.Minute, churnEvery: 5 * time.Second,
		killPods: 100, runtimeKills: 6, agentChurnOps: 1000, agentKills: 20, slowFor: 3 * time.Minute, apiFlaps: 20},
}

// faultsEnv skips the test unless the faults suite runs (SKIFF_FAULTS and
// the external runtime), and returns its Env and scale.
func faultsEnv(t *testing.T) (*Env, faultScale) {
	t.Helper()
	mode := os.Getenv("SKIFF_FAULTS")
	if mode == "" {
		t.Skip("faults suite: set SKIFF_FAULTS=short or full (make faults)")
	}
	sc, ok := faultScales[mode]
	if !ok {
		t.Fatalf("SKIFF_FAULTS=%q: want short or full", mode)
	}
	e := NewEnv(t)
	if !e.ExternalRuntime() {
		t.Skip("faults suite: needs SKIFF_E2E_RUNTIME=external (the fault injector fronts the suite's containerd)")
	}
	e.preexisting = map[string]bool{}
	for _, p := range e.hostNetEntries() {
		e.preexisting[p] = true
	}
	for _, id := range e.shimIDs() {
		e.preexisting["shim:"+id] = true
	}
	for id := range e.s.runtimeStuck {
		e.preexisting["stuck:"+id] = true
	}
	if len(e.preexisting) > 0 {
		t.Logf("faults: the host held before the test (not counted): %v", slices.Sorted(maps.Keys(e.preexisting)))
	}
	return e, sc
}

// hostNetEntries lists, as paths, the network namespaces, ports of skiff's
// bridge and host-local IP records on the host.
func (e *Env) hostNetEntries() []string {
	var out []string
	add := func(dir string, keep func(string) bool) {
		ents, _ := os.ReadDir(dir)
		for _, ent := range ents {
			if keep == nil || keep(ent.Name()) {
				out = append(out, filepath.Join(dir, ent.Name()))
			}
		}
	}
	add("/var/run/netns", func(n string) bool { return strings.HasPrefix(n, "cni-") })
	add(filepath.Join("/sys/class/net", network.DefaultBridge, "brif"), nil)
	for _, dir := range []string{filepath.Join("/var/lib/cni/networks", network.DefaultNetworkName),
		filepath.Join(e.root(), "cni", "networks", network.DefaultNetworkName)} {
		add(dir, func(n string) bool { _, err := netip.ParseAddr(n); return err == nil })
	}
	return out
}

// startCRIProxy starts the fault injector in front of the suite's
// containerd; the agent dials it with the returned flags.
func (e *Env) startCRIProxy(t *testing.T, seed uint64) (*criproxy.Proxy, []string) {
	t.Helper()
	p, err := criproxy.Start(filepath.Join(e.Dir, "cri.sock"), e.s.external.m.Address(), seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.SetFaults() }) // before the Env's cleanup removes the pods
	e.afterAgent = append(e.afterAgent, func() {
		if err := p.Close(); err != nil {
			t.Errorf("CRI proxy: %v", err)
		}
	})
	return p, []string{"--container-runtime-endpoint", p.Endpoint()}
}

// nodeState is what the node holds for its pods, seen from the agent's
// API, the runtime and the kernel.
type nodeState struct {
	pods       map[string]*v1.Pod // by UID
	ready      int                // pods Running and Ready
	restarts   int32              // sum of the pods' restart counts
	sandboxes  map[string][]*runtime.Sandbox
	containers map[string][]*runtime.Container // by pod UID, running ones
	netns      int                             // cni-* network namespaces
	veths      int                             // ports of skiff's bridge
	ips        int                             // host-local IP records
	cgroups    []string                        // pod UIDs with a pod cgroup
	mounts     []string                        // pod UIDs with mounts under <root>/pods
	shims      []string                        // the -id of each shim of the suite's containerd
	goroutines int                             // the agent's
	fds        int                             // the agent's
	// stuck are sandboxes containerd cannot remove (Suite.runtimeStuck).
	stuck map[string]bool
}

// snapshot reads the node's state; errors fail the test.
func (e *Env) snapshot(t *testing.T) nodeState {
	t.Helper()
	s := nodeState{pods: map[string]*v1.Pod{}, sandboxes: map[string][]*runtime.Sandbox{}, containers: map[string][]*runtime.Container{},
		stuck: e.s.runtimeStuck}
	list, err := e.Pods()
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		s.pods[string(p.UID)] = p
		if runningAndReady(p) {
			s.ready++
		}
		for _, c := range p.Status.ContainerStatuses {
			s.restarts += c.RestartCount
		}
	}
	for _, sb := range e.Sandboxes(t, nil) {
		s.sandboxes[sb.UID] = append(s.sandboxes[sb.UID], sb)
	}
	for _, c := range e.Containers(t, nil) {
		if c.State == runtime.ContainerRunning {
			uid := c.Labels["io.kubernetes.pod.uid"]
			s.containers[uid] = append(s.containers[uid], c)
		}
	}
	for _, p := range e.hostNetEntries() {
		if e.preexisting[p] {
			continue
		}
		switch {
		case strings.HasPrefix(p, "/var/run/netns/"):
			s.netns++
		case strings.HasPrefix(p, "/sys/class/net/"):
			s.veths++
		default:
			s.ips++
		}
	}
	s.cgroups = podCgroupUIDs()
	s.mounts = e.podMountUIDs(t)
	s.shims = e.shimIDs()
	if e.agent != nil {
		s.goroutines = e.agentGoroutines(t)
		s.fds = countEntries(fmt.Sprintf("/proc/%d/fd", e.agent.cmd.Process.Pid), nil)
	}
	return s
}

// problems lists where the node differs from want pods, each Running and
// Ready with one ready sandbox and one running container per container
// of its spec, and nothing of another pod left: no sandbox, netns, bridge
// port, IP, cgroup or mount more than the pods need. nil when none. Shims
// are the runtime's to end once their sandbox is removed: orphanShims.
func (s nodeState) problems(want int) []string {
	var out []string
	if len(s.pods) != want || s.ready != want {
		out = append(out, fmt.Sprintf("%d pods, %d Running and Ready; want %d", len(s.pods), s.ready, want))
	}
	ready := 0
	for uid, sbs := range s.sandboxes {
		p := s.pods[uid]
		if p == nil {
			for _, sb := range sbs {
				if !s.stuck[sb.ID] {
					out = append(out, fmt.Sprintf("sandbox %s of a pod the agent does not have (uid %s)", sb.ID, uid))
				}
			}
			continue
		}
		n := 0
		for _, sb := range sbs {
			if sb.State == runtime.SandboxReady {
				n++
			}
		}
		ready += n
		if n != 1 {
			out = append(out, fmt.Sprintf("pod %s has %d ready sandboxes", p.Name, n))
		}
	}
	for uid, p := range s.pods {
		seen := map[string]int{}
		for _, c := range s.containers[uid] {
			seen[c.Name]++
		}
		for _, c := range p.Spec.Containers {
			if seen[c.Name] != 1 {
				out = append(out, fmt.Sprintf("pod %s container %s runs %d times", p.Name, c.Name, seen[c.Name]))
			}
		}
	}
	for uid := range s.containers {
		if s.pods[uid] == nil {
			out = append(out, fmt.Sprintf("running containers of a pod the agent does not have (uid %s)", uid))
		}
	}
	for _, c := range []struct {
		what string
		n    int
	}{{"network namespaces", s.netns}, {"bridge ports", s.veths}, {"IP records", s.ips}} {
		if c.n != ready {
			out = append(out, fmt.Sprintf("%d %s for %d ready sandboxes", c.n, c.what, ready))
		}
	}
	for _, what := range []struct {
		name string
		uids []string
	}{{"cgroup", s.cgroups}, {"mounts", s.mounts}} {
		for _, uid := range what.uids {
			if s.pods[uid] == nil {
				out = append(out, fmt.Sprintf("%s of a pod the agent does not have (uid %s)", what.name, uid))
			}
		}
	}
	return out
}

// findRuntimeStuck records in Suite.runtimeStuck the sandboxes of pods the
// agent no longer has that containerd cannot remove: a container of theirs
// that is not running cannot be removed through CRI because containerd
// holds a task for it ("cannot delete running task"; left by a
// StartContainer whose caller, the killed agent, went away). It reports
// whether it found a new one.
func (e *Env) findRuntimeStuck(t *testing.T, s nodeState) bool {
	t.Helper()
	found := false
	for uid, sbs := range s.sandboxes {
		if s.pods[uid] != nil {
			continue
		}
		for _, sb := range sbs {
			if e.s.runtimeStuck[sb.ID] {
				continue
			}
			for _, c := range e.Containers(t, uidLabels(uid)) {
				if c.SandboxID != sb.ID || c.State == runtime.ContainerRunning {
					continue
				}
				err := e.CRI(t).RemoveContainer(t.Context(), c.ID)
				if err != nil && strings.Contains(err.Error(), "cannot delete running task") {
					if e.s.runtimeStuck == nil {
						e.s.runtimeStuck = map[string]bool{}
					}
					e.s.runtimeStuck[sb.ID] = true
					t.Logf("containerd cannot remove container %s (%s) of sandbox %s: %v", c.ID, c.State, sb.ID, err)
					found = true
				}
			}
		}
	}
	return found
}

// orphanShims are the shims that serve no sandbox the runtime lists and
// that were not there when the test began: the runtime's own leaks, as
// skiff removed their sandboxes through CRI (containerd keeps a shim alive
// while a task it was creating when its caller went away is left in it;
// the class of containerd#10421).
func (e *Env) orphanShims(s nodeState) []string {
	sandboxIDs := map[string]bool{}
	for _, sbs := range s.sandboxes {
		for _, sb := range sbs {
			sandboxIDs[sb.ID] = true
		}
	}
	var out []string
	for _, id := range s.shims {
		if !sandboxIDs[id] && !e.preexisting["shim:"+id] {
			out = append(out, id)
		}
	}
	return out
}

// waitConverged waits until the node holds exactly want healthy pods and
// nothing else (nodeState.problems), and returns the state and how long
// that took; it fails the test after timeout with the problems left.
func (e *Env) waitConverged(t *testing.T, want int, timeout time.Duration) (nodeState, time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		s := e.snapshot(t)
		probs := s.problems(want)
		if len(probs) == 0 {
			return s, time.Since(start)
		}
		if time.Since(start) > time.Minute && e.findRuntimeStuck(t, s) {
			continue
		}
		if time.Since(start) > timeout {
			if len(probs) > 20 {
				probs = append(probs[:20], fmt.Sprintf("... and %d more", len(probs)-20))
			}
			t.Fatalf("node not converged to %d pods within %s:\n  %s", want, timeout, strings.Join(probs, "\n  "))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// checkNoGrowth fails when the agent's goroutines or file descriptors grew
// from before to after with the same pods: a leak in the agent itself.
func checkNoGrowth(t *testing.T, before, after nodeState) {
	t.Helper()
	if after.goroutines > before.goroutines+max(20, before.goroutines/10) {
		t.Errorf("agent goroutines %d -> %d with the same number of pods", before.goroutines, after.goroutines)
	}
	if after.fds > before.fds+10 {
		t.Errorf("agent file descriptors %d -> %d with the same number of pods", before.fds, after.fds)
	}
}

// countEntries counts the entries of dir that keep accepts (nil: all); a
// missing dir has none.
func countEntries(dir string, keep func(string) bool) int {
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, ent := range ents {
		if keep == nil || keep(ent.Name()) {
			n++
		}
	}
	return n
}

var podCgroupName = regexp.MustCompile(`pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})`)

// podCgroupUIDs returns the pod UIDs with a pod cgroup in the memory
// hierarchy (cgroup v1) or the unified one, cgroupfs or systemd names.
func podCgroupUIDs() []string {
	root := "/sys/fs/cgroup/memory"
	if _, err := os.Stat(root); err != nil {
		root = "/sys/fs/cgroup"
	}
	var uids []string
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.Count(strings.TrimPrefix(path, root), "/") > 3 {
			return filepath.SkipDir
		}
		if m := podCgroupName.FindStringSubmatch(d.Name()); m != nil {
			uids = append(uids, strings.ReplaceAll(m[1], "_", "-"))
			return filepath.SkipDir
		}
		return nil
	})
	slices.Sort(uids)
	return slices.Compact(uids)
}

// podMountUIDs returns the pod UIDs with a mount under <root>/pods.
func (e *Env) podMountUIDs(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	prefix := filepath.Join(e.root(), "pods") + "/"
	var uids []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || !strings.HasPrefix(fields[4], prefix) {
			continue
		}
		uid, _, _ := strings.Cut(strings.TrimPrefix(fields[4], prefix), "/")
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	return slices.Compact(uids)
}

// shimIDs returns the -id argument of each live shim serving the suite's
// containerd (a sandbox ID with containerd 2's pod sandbox controller).
func (e *Env) shimIDs() []string {
	var ids []string
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		if _, err := strconv.Atoi(ent.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") || !strings.Contains(string(cmdline), e.s.Root) {
			continue
		}
		if i := slices.Index(args, "-id"); i >= 0 && i+1 < len(args) {
			ids = append(ids, args[i+1])
		}
	}
	return ids
}

// agentGoroutines reads the agent's goroutine count from its profile.
func (e *Env) agentGoroutines(t *testing.T) int {
	t.Helper()
	code, body, err := e.get("/debug/pprof/goroutine?debug=1")
	if err != nil || code != 200 {
		t.Fatalf("goroutine profile: %d %v", code, err)
	}
	first, _, _ := strings.Cut(body, "\n")
	n, err := strconv.Atoi(strings.TrimPrefix(first, "goroutine profile: total "))
	if err != nil {
		t.Fatalf("goroutine profile: first line %q", first)
	}
	return n
}

// faultRecord is one scenario's row of the reliability report. Its pods
// lost and skiff's leaks are 0: a scenario with either fails before it
// reports (waitConverged).
type faultRecord struct {
	scenario, scale string
	pods            int
	restarts        int32  // container restarts the faults caused
	runtimeLeaks    int    // orphanShims and stuck sandboxes: the runtime's leaks
	recovery        string // how long the node took to be whole again
	notes           string
}

// report counts the runtime's leaks into r (orphanShims, each logged) and
// appends r to SKIFF_FAULTS_REPORT (with the header when the file is new).
func (e *Env) report(t *testing.T, r faultRecord) {
	t.Helper()
	orphans := e.orphanShims(e.snapshot(t))
	for _, id := range orphans {
		t.Logf("containerd leaked the shim of removed sandbox %s (its process still runs)", id)
	}
	r.runtimeLeaks = len(orphans)
	for id := range e.s.runtimeStuck {
		if !e.preexisting["stuck:"+id] {
			r.runtimeLeaks++
		}
	}
	leaks := "0"
	if r.runtimeLeaks > 0 {
		leaks += fmt.Sprintf(" (containerd: %d shims or sandboxes)", r.runtimeLeaks)
	}
	row := fmt.Sprintf("| %s | %s | %d | 0 | %d | %s | %s | %s |\n",
		r.scenario, r.scale, r.pods, r.restarts, leaks, r.recovery, r.notes)
	t.Logf("faults report: %s", strings.TrimSpace(row))
	path := os.Getenv("SKIFF_FAULTS_REPORT")
	if path == "" {
		return
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Errorf("faults report: %v", err)
		return
	}
	defer f.Close()
	if statErr != nil {
		_, _ = f.WriteString("| scenario | scale | pods | pods lost | restarts | leaks | recovery | notes |\n|---|---|---|---|---|---|---|---|\n")
	}
	if _, err := f.WriteString(row); err != nil {
		t.Errorf("faults report: %v", err)
	}
}
