package node

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/internal/events"
	"github.com/skiffnode/skiff/internal/nodestatus"
	"github.com/skiffnode/skiff/nodeshutdown"
)

// shutdownOptions are the graceful node shutdown settings (H.17-H.21):
// the kubelet's shutdownGracePeriod, shutdownGracePeriodCriticalPods and
// shutdownGracePeriodByPodPriority. A configuration file (--config) sets
// them through the flags (kubeletconfig).
type ShutdownConfig struct {
	Config nodeshutdown.Config
	// byPriority is --shutdown-grace-period-by-pod-priority as given.
	ByPriority string
}

// resolve parses --shutdown-grace-period-by-pod-priority into the config
// and validates it.
func (o *ShutdownConfig) resolve() error {
	if o.ByPriority != "" {
		ps, err := parseByPriority(o.ByPriority)
		if err != nil {
			return err
		}
		o.Config.ByPodPriority = ps
	}
	if err := o.Config.Validate(); err != nil {
		return fmt.Errorf("graceful node shutdown: %w", err)
	}
	return nil
}

// parseByPriority reads "priority=seconds,..." pairs.
func parseByPriority(s string) ([]nodeshutdown.PriorityGracePeriod, error) {
	var out []nodeshutdown.PriorityGracePeriod
	for _, pair := range strings.Split(s, ",") {
		p, secs, ok := strings.Cut(strings.TrimSpace(pair), "=")
		prio, err1 := strconv.ParseInt(p, 10, 32)
		grace, err2 := strconv.ParseInt(secs, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("--shutdown-grace-period-by-pod-priority: %q is not priority=seconds", pair)
		}
		out = append(out, nodeshutdown.PriorityGracePeriod{Priority: int32(prio), ShutdownGracePeriodSeconds: grace})
	}
	return out, nil
}

// newManager builds the shutdown manager: logind over the system bus, node
// events, the H.21 times under rootDir registered on reg. Its Admit goes
// to agent.Config.Admitters, its Status to the node's readiness
// (withShutdownStatus), and runShutdown runs it.
func (o *ShutdownConfig) newManager(rootDir string, events *events.Recorder, reg prometheus.Registerer, log *slog.Logger) (*nodeshutdown.Manager, error) {
	mo := nodeshutdown.Options{
		Config: o.Config,
		Connect: func(ctx context.Context) (nodeshutdown.Logind, error) {
			return nodeshutdown.ConnectLogind(ctx, "")
		},
		Logger: log,
		Event:  events.NodeEvent,
	}
	if o.Config.Enabled() {
		times, err := nodeshutdown.NewTimes(reg, filepath.Join(rootDir, nodeshutdown.StateFile))
		if err != nil {
			return nil, err
		}
		mo.Times = times.Record
	}
	return nodeshutdown.New(mo), nil
}

// shutdownPods is the agent as the shutdown manager's Pods port.
type shutdownPods struct{ a *agent.Agent }

func (p shutdownPods) ActivePods() []*v1.Pod { return p.a.ActivePods() }

func (p shutdownPods) TerminatePod(uid types.UID, o nodeshutdown.TerminateOptions) <-chan struct{} {
	grace := o.GracePeriodSeconds
	return p.a.TerminatePod(uid, agent.TerminateOptions{
		GracePeriodSeconds: &grace, Reason: o.Reason, Message: o.Message, Conditions: o.Conditions,
	})
}

// withShutdownStatus makes the node NotReady while it shuts down, as the
// kubelet's ready condition takes the shutdown manager's status.
func withShutdownStatus(facts func(context.Context) (nodestatus.Facts, nodestatus.Health), m *nodeshutdown.Manager) func(context.Context) (nodestatus.Facts, nodestatus.Health) {
	return func(ctx context.Context) (nodestatus.Facts, nodestatus.Health) {
		f, h := facts(ctx)
		if err := m.Status(); err != nil {
			h.NotReady = append(h.NotReady, err)
		}
		return f, h
	}
}

// runShutdown runs the manager for a until ctx is done.
func runShutdown(m *nodeshutdown.Manager, a *agent.Agent) func(context.Context) error {
	return func(ctx context.Context) error { return m.Run(ctx, shutdownPods{a: a}) }
}
