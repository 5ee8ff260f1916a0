package apisource

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/internal/nodestatus"
)

// NodeAPI is the API server as the node manager uses it.
type NodeAPI interface {
	GetNode(ctx context.Context, name string) (*v1.Node, error)
	CreateNode(ctx context.Context, n *v1.Node) (*v1.Node, error)
	UpdateNode(ctx context.Context, n *v1.Node) (*v1.Node, error)
	UpdateNodeStatus(ctx context.Context, n *v1.Node) (*v1.Node, error)
}

// DefaultNodeStatusUpdateFrequency is how often the node's status is
// computed (and sent if changed): the kubelet's nodeStatusUpdateFrequency.
const DefaultNodeStatusUpdateFrequency = 10 * time.Second

// registration retries: 100 ms doubling to 7 s, as the kubelet's
// registerWithAPIServer.
const (
	firstRegisterRetry = 100 * time.Millisecond
	maxRegisterRetry   = 7 * time.Second
)

// NodeConfig configures a NodeManager.
type NodeConfig struct {
	API          NodeAPI
	Registration nodestatus.Registration
	// Register: create the Node when it does not exist (--register-node);
	// false: wait for someone else to create it.
	Register bool
	// Facts gathers the status facts and health now. Blocking.
	Facts func(ctx context.Context) (nodestatus.Facts, nodestatus.Health)
	// UpdateFrequency (default DefaultNodeStatusUpdateFrequency) and
	// ReportFrequency (default nodestatus.DefaultReportFrequency).
	UpdateFrequency, ReportFrequency time.Duration
	// Record gets each condition transition's event (may be nil).
	Record func(eventType, reason, message string)
	// Informer watches the Node (apiclient's NodeInformer), so that Node
	// returns what others set on it (labels, taints) at once, as the
	// kubelet's node lister does; nil: the Node is read only when its
	// status is sent. Run runs it.
	Informer cache.SharedIndexInformer
	Clock    clock.WithTicker
	Logger   *slog.Logger
}

// NodeManager registers the Node and keeps its status current (H.1,
// H.5-H.10). Create with NewNodeManager, then Run.
type NodeManager struct {
	cfg NodeConfig

	mu         sync.Mutex
	node       *v1.Node
	registered chan struct{}

	// sent and sentAt are owned by Run's goroutine.
	sent   *v1.NodeStatus
	sentAt time.Time
}

// NewNodeManager returns a manager for cfg, with its defaults filled in.
func NewNodeManager(cfg NodeConfig) *NodeManager {
	if cfg.UpdateFrequency <= 0 {
		cfg.UpdateFrequency = DefaultNodeStatusUpdateFrequency
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Record == nil {
		cfg.Record = func(string, string, string) {}
	}
	return &NodeManager{cfg: cfg, registered: make(chan struct{})}
}

// Node returns a copy of the Node as last read, written or watched; nil
// until the registration or the Informer has one. Safe for concurrent use.
func (n *NodeManager) Node() *v1.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.node == nil {
		return nil
	}
	return n.node.DeepCopy()
}

// Registered is closed once the Node exists.
func (n *NodeManager) Registered() <-chan struct{} { return n.registered }

// setNode keeps node, an API call's answer, unless the copy kept is a
// newer one of the same Node: the Informer's copy and an answer arrive in
// either order.
func (n *NodeManager) setNode(node *v1.Node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.node == nil || n.node.UID != node.UID || !olderVersion(node.ResourceVersion, n.node.ResourceVersion) {
		n.node = node
	}
}

// setWatched keeps node, the Informer's: always, as the watch is the API
// server's own order (and follows it back, after a restore of its store).
func (n *NodeManager) setWatched(node *v1.Node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.node = node
}

// olderVersion reports whether resourceVersion a is older than b, when
// both are numbers (etcd's revisions; the API's contract keeps them
// opaque, so anything else counts as not older).
func olderVersion(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}

// Run registers the node (retrying until it succeeds), runs the Informer
// if any, and updates the status every UpdateFrequency until ctx is done.
// Blocking; the informer has stopped when it returns.
func (n *NodeManager) Run(ctx context.Context) {
	if n.cfg.Informer != nil {
		stop, err := n.watch(ctx)
		if err != nil {
			n.cfg.Logger.Warn("watching the node", "node", n.cfg.Registration.Name, "err", err)
		}
		defer stop()
	}
	retry := time.Duration(0)
	for {
		err := n.register(ctx)
		if err == nil {
			break
		}
		retry = min(max(2*retry, firstRegisterRetry), maxRegisterRetry)
		n.cfg.Logger.Warn("registering the node", "node", n.cfg.Registration.Name, "err", err, "retry", retry)
		if !sleep(ctx, n.cfg.Clock, retry) {
			return
		}
	}
	close(n.registered)
	n.cfg.Logger.Info("node registered", "node", n.cfg.Registration.Name)
	for {
		if err := n.updateStatus(ctx); err != nil && ctx.Err() == nil {
			n.cfg.Logger.Warn("updating node status", "err", err)
		}
		if !sleep(ctx, n.cfg.Clock, n.cfg.UpdateFrequency) {
			return
		}
	}
}

// watch runs the Informer, each Node it sees kept by setWatched, until
// ctx is done or stop is called; stop waits for it. A deleted Node stays
// as last seen (the registration's loop does not make it again).
func (n *NodeManager) watch(ctx context.Context) (stop func(), err error) {
	keep := func(o any) {
		if node, ok := o.(*v1.Node); ok && node.Name == n.cfg.Registration.Name {
			n.setWatched(node.DeepCopy())
		}
	}
	if _, err := n.cfg.Informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: keep, UpdateFunc: func(_, o any) { keep(o) },
	}); err != nil {
		return func() {}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); n.cfg.Informer.RunWithContext(ctx) }()
	return func() { cancel(); <-done }, nil
}

// register creates the Node with its first status, or adopts the one
// there, fixing its default labels (the kubelet's reconcileExistingNode).
func (n *NodeManager) register(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	defer cancel()
	want := nodestatus.Initial(n.cfg.Registration)
	if n.cfg.Register {
		created, err := n.cfg.API.CreateNode(ctx, want)
		if err == nil {
			n.setNode(created)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node: %w", err)
		}
	}
	existing, err := n.cfg.API.GetNode(ctx, want.Name)
	if err != nil {
		return fmt.Errorf("reading node: %w", err)
	}
	if fixed, changed := defaultLabels(existing, want); changed {
		if existing, err = n.cfg.API.UpdateNode(ctx, fixed); err != nil {
			return fmt.Errorf("updating node labels: %w", err)
		}
	}
	n.setNode(existing)
	return nil
}

// defaultLabels returns existing with want's default labels
// (kubernetes.io/hostname, os, arch and the beta twins), and whether any
// differed (the kubelet's updateDefaultLabels). Pure.
func defaultLabels(existing, want *v1.Node) (*v1.Node, bool) {
	out := existing.DeepCopy()
	changed := false
	for _, k := range []string{v1.LabelHostname, v1.LabelOSStable, v1.LabelArchStable, "beta.kubernetes.io/os", "beta.kubernetes.io/arch"} {
		v, ok := want.Labels[k]
		if !ok || out.Labels[k] == v {
			continue
		}
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		out.Labels[k], changed = v, true
	}
	return out, changed
}

// updateStatus computes the status and, when it changed or the report
// frequency passed, sends it on the Node as the API server has it now
// (read first: others change the Node too, e.g. the node lifecycle
// controller's taints, and NodeRestriction forbids a node's update that
// would undo them); a conflict tries once more.
func (n *NodeManager) updateStatus(ctx context.Context) error {
	facts, health := n.cfg.Facts(ctx)
	ctx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	defer cancel()
	if !n.due(facts, health) {
		return nil
	}
	for attempt := 0; ; attempt++ {
		node, err := n.cfg.API.GetNode(ctx, n.cfg.Registration.Name)
		if err != nil {
			return fmt.Errorf("reading node: %w", err)
		}
		now := n.cfg.Clock.Now()
		nodestatus.SetStatus(node, facts)
		var events [][2]string
		nodestatus.SetConditions(node, health, now, func(typ, reason string) { events = append(events, [2]string{typ, reason}) })
		updated, err := n.cfg.API.UpdateNodeStatus(ctx, node)
		if (apierrors.IsConflict(err) || taintRace(err)) && attempt == 0 {
			continue
		}
		if err != nil {
			return err
		}
		n.setNode(updated)
		n.sent, n.sentAt = updated.Status.DeepCopy(), now
		for _, e := range events {
			n.cfg.Record(e[0], e[1], fmt.Sprintf("Node %s status is now: %s", node.Name, e[1]))
		}
		return nil
	}
}

// taintRace reports the NodeRestriction refusal a status update gets when
// the node's taints changed since it was read (the node lifecycle
// controller taints a new node not-ready): admission compares the taints
// before the storage's resourceVersion precondition would answer with a
// conflict, so it is retried on a fresh read as a conflict is.
func taintRace(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "is not allowed to modify taints")
}

// due reports whether the status computed from facts and health on the
// last Node differs from the one sent, or the report frequency passed.
func (n *NodeManager) due(facts nodestatus.Facts, health nodestatus.Health) bool {
	node := n.Node()
	now := n.cfg.Clock.Now()
	nodestatus.SetStatus(node, facts)
	nodestatus.SetConditions(node, health, now, nil)
	return nodestatus.NeedsReport(n.sent, &node.Status, n.sentAt, now, n.cfg.ReportFrequency)
}

// sleep waits d on c; false if ctx ended first.
func sleep(ctx context.Context, c clock.WithTicker, d time.Duration) bool {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
