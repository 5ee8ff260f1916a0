package cri

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/runtime"
)

// Option configures a Runtime (New).
type Option func(*Runtime)

// WithShimGroups makes sandboxes share runc shims: RunSandbox puts each
// sandbox in a shim group (runtime.AnnotationShimGroup on its config) of at
// most pods sandboxes, filled in creation order, and CreateContainer sends
// the sandbox's group again, so that a pod's containers join its shim. A
// group is never refilled: its shim serves at most pods sandboxes over its
// life and exits with its last container, so a node never runs more shims
// than it would with one per pod. pods <= 1 leaves sandboxes ungrouped.
// The runtime groups only where it passes the annotation to the specs
// (containerd's pod_annotations).
func WithShimGroups(pods int) Option {
	return func(r *Runtime) {
		if pods > 1 {
			r.groups = newShimGroups(pods, time.Now())
		}
	}
}

// shimGroups assigns sandboxes to groups and remembers each live sandbox's
// group for its containers. Safe for concurrent use.
type shimGroups struct {
	pods   int
	prefix string // this agent's groups: a restarted agent starts new ones

	mu       sync.Mutex
	assigned map[string]int    // sandboxes assigned so far, by runtime handler
	of       map[string]string // sandbox ID -> group ("" = none)
}

func newShimGroups(pods int, now time.Time) *shimGroups {
	return &shimGroups{
		pods:     pods,
		prefix:   "skiff-" + strconv.FormatInt(now.UnixNano(), 36),
		assigned: map[string]int{},
		of:       map[string]string{},
	}
}

// next is the group of the next sandbox of runtime handler ("": the
// default). Handlers never share a group: each may run its own shim
// binary or runc options, and the shim's socket is keyed by the group.
func (g *shimGroups) next(handler string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.assigned[handler] / g.pods
	g.assigned[handler]++
	name := g.prefix
	if handler != "" {
		name += "-" + handler
	}
	return name + "-" + strconv.Itoa(n)
}

// lookup is the group recorded for sandbox id.
func (g *shimGroups) lookup(id string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	group, ok := g.of[id]
	return group, ok
}

func (g *shimGroups) record(id, group string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.of[id] = group
}

func (g *shimGroups) forget(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.of, id)
}

// setGroup sets cfg's shim group annotation to group, or removes it when
// group is "" (a sandbox created without one keeps its own shim; a pod's
// own annotation never picks another pod's shim). cfg must be a fresh
// config (sandboxConfig's); its annotations map, the spec's, is copied
// before the change.
func setGroup(cfg *runtimeapi.PodSandboxConfig, group string) {
	_, has := cfg.Annotations[runtime.AnnotationShimGroup]
	if group == "" && !has {
		return
	}
	a := maps.Clone(cfg.Annotations)
	if a == nil {
		a = map[string]string{}
	}
	if group == "" {
		delete(a, runtime.AnnotationShimGroup)
	} else {
		a[runtime.AnnotationShimGroup] = group
	}
	cfg.Annotations = a
}

// sandboxGroup is the shim group sandbox id was run in: the one recorded
// by RunSandbox, else (a sandbox of an earlier agent) the annotation the
// runtime reports for it, remembered.
func (r *Runtime) sandboxGroup(ctx context.Context, id string) (string, error) {
	if group, ok := r.groups.lookup(id); ok {
		return group, nil
	}
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	resp, err := r.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		return "", wrap(err, "shim group of sandbox %s", id)
	}
	if resp.Status == nil {
		return "", fmt.Errorf("shim group of sandbox %s: runtime returned no status", id)
	}
	group := resp.Status.Annotations[runtime.AnnotationShimGroup]
	r.groups.record(id, group)
	return group, nil
}
