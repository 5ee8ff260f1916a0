package report

import (
	"fmt"
	"math"
	"strings"
)

// API is the API-pods scenario (issue 16): pods created through a real
// kube-apiserver, bound to the node by spec.nodeName, run by skiff joined
// to that control plane with --kubeconfig and then by the kubelet, on the
// same containerd. The agents' columns come from the CRI, as elsewhere.
type API struct {
	// ControlPlane is the control plane's version (kube-apiserver).
	ControlPlane string `json:"control_plane"`
	// StartupPods: how many pods each agent started one after another.
	StartupPods int `json:"startup_pods"`
	// Startup: the create call sent -> app container running (CRI
	// StartedAt), one pod at a time; Floor is unused.
	Startup Compare `json:"startup"`
	// Running: the same pods, create call sent -> status.phase Running
	// seen by a watch opened before the create (issue 17: like with like
	// against skiff-apiserver's round trip); Floor is unused.
	Running Compare `json:"running"`
	// ListPods: LISTs of the pods as `kubectl get pods` makes them (a
	// Table) while skiff's density pods ran, one after another.
	ListPods *Series `json:"list_pods,omitempty"`
	// Density: density pods created at once (from the first create call);
	// RemoveAllS is delete calls sent -> every pod gone from the API (the
	// agent's final delete with grace 0). Floor is unused.
	Density *Density `json:"density,omitempty"`
	// Writes: etcd's, kube-apiserver's and the agent's write counters
	// over each agent's density steady window (issue 33); nil: not
	// measured.
	Writes *APIWrites `json:"writes,omitempty"`
}

// EvaluateAPI checks a against issue 16's goals: startup and density
// ahead of the kubelet on the same control plane, and the agent's RSS at
// the density point under l.APIRSSMB. A comparison with a kubelet that did
// not run is NotRun. Pure.
func EvaluateAPI(a *API, l Limits) []Target {
	sk, kb := math.NaN(), math.NaN()
	if a.Startup.Skiff != nil {
		sk = a.Startup.Skiff.Summary.Median
	}
	if a.Startup.Kubelet != nil {
		kb = a.Startup.Kubelet.Summary.Median
	}
	out := []Target{kubeletTarget("API pod startup median vs kubelet", l.APIKubeletRatio, sk, kb)}
	all, kall, rss, pods := math.NaN(), math.NaN(), math.NaN(), "density"
	if d := a.Density; d != nil {
		pods = fmt.Sprintf("%d API pods", d.Pods)
		if d.Skiff != nil {
			all, rss = d.Skiff.AllRunningS, d.Skiff.Steady.RSSMaxMB
		}
		if d.Kubelet != nil {
			kall = d.Kubelet.AllRunningS
		}
	}
	return append(out, kubeletTarget(pods+" all running vs kubelet", l.APIKubeletRatio, all, kall),
		maxTarget("steady state, "+pods+": RSS (max)", l.APIRSSMB, rss, "MB"))
}

// kubeletTarget is ratioTarget against the kubelet, NotRun when skiff was
// measured and the kubelet was not.
func kubeletTarget(name string, limit, skiff, kubelet float64) Target {
	t := ratioTarget(name, "kubelet", limit, skiff, kubelet)
	if math.IsNaN(kubelet) && !math.IsNaN(skiff) {
		t.Status = NotRun
	}
	return t
}

// writeAPI writes the API-pods section: its targets, the startup series
// and the density run of each agent.
func writeAPI(b *strings.Builder, num, rt string, a *API, l Limits) {
	fmt.Fprintf(b, "### %s API pods, %s (issue 16: a real kube-apiserver %s)\n\n", num, rt, a.ControlPlane)
	b.WriteString("Pods created through the API server with spec.nodeName set (no scheduler in the path), each with the ")
	b.WriteString("service account token volume the API server adds; skiff joined with --kubeconfig, then the kubelet, as the same Node, on the same containerd. ")
	b.WriteString("Timed from the create call to the app container's CRI StartedAt (the pod startup SLI: the images are present).\n\n")
	b.WriteString("| target | goal | skiff | status |\n|---|---|---|---|\n")
	for _, t := range EvaluateAPI(a, l) {
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", t.Name, t.Goal, t.Value, t.Status)
	}
	fmt.Fprintf(b, "\nStartup, %d pods (init + app) one after another:\n\n", a.StartupPods)
	b.WriteString("| | n | min | median | p90 | max | median vs kubelet |\n|---|---|---|---|---|---|---|\n")
	kmed := statOf(a.Startup.Kubelet, medianOf)
	for _, r := range []struct {
		name string
		s    *Series
	}{{"skiff", a.Startup.Skiff}, {"kubelet", a.Startup.Kubelet}} {
		if r.s == nil {
			continue
		}
		sm := r.s.Summary
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s |\n", r.name, sm.N, sec(sm.Min), sec(sm.Median), sec(sm.P90), sec(sm.Max), ratio(sm.Median, kmed))
	}
	fmt.Fprintf(b, "\nThe same pods, create call -> status.phase Running seen by a watch: skiff %s, kubelet %s (median, n); ", medianN(a.Running.Skiff), medianN(a.Running.Kubelet))
	fmt.Fprintf(b, "`kubectl get pods` (a Table LIST) with skiff's density pods: %s.\n", medianMsN(a.ListPods))
	if d := a.Density; d != nil {
		fmt.Fprintf(b, "\nDensity, %d pods created at once (cpu 10m, memory 16Mi, exec readiness probe every 10 s); steady window %.0f s; "+
			"remove all: delete calls -> every pod gone from the API.\n\n", d.Pods, d.SteadyS)
		b.WriteString("| | first running | all running | all running vs kubelet | steady CPU | RSS mean / max | remove all |\n|---|---|---|---|---|---|---|\n")
		kall := math.NaN()
		if d.Kubelet != nil {
			kall = d.Kubelet.AllRunningS
		}
		for _, r := range []struct {
			name string
			a    *Agent
		}{{"skiff", d.Skiff}, {"kubelet", d.Kubelet}} {
			if r.a == nil {
				continue
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %.2f %% | %.1f / %.1f MB | %s |\n", r.name, sec(r.a.FirstRunningS), sec(r.a.AllRunningS),
				ratio(r.a.AllRunningS, kall), r.a.Steady.CPUPercent, r.a.Steady.RSSMeanMB, r.a.Steady.RSSMaxMB, sec(r.a.RemoveAllS))
		}
	}
	b.WriteString("\n")
}
