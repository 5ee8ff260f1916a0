package kubeletconfig

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/internal/nodestatus"
)

// The fields whose file and flag forms differ, or whose defaults depend
// on other fields.

// evictionHardField: {memory.available: 100Mi} is the flag's
// memory.available<100Mi. The other signals are accepted at the
// kubelet's defaults (skiff does not evict for them) and refused at any
// other value.
func evictionHardField() field {
	const path = "evictionHard"
	return field{
		flag: "eviction-hard", paths: []string{path},
		toFlag: func(c *config) (string, bool, error) {
			if c.EvictionHard == nil {
				return "", false, nil
			}
			m, def := map[string]string{}, defaultEvictionHard()
			for k, v := range c.EvictionHard {
				switch {
				case k == "memory.available":
					m[k] = v
				case def[k] != v:
					return "", false, fmt.Errorf("field %q: signal %q is not supported by skiff (memory.available only; the others only at the kubelet's defaults: %s)", path, k, joinMap(def, "<"))
				}
			}
			return joinMap(m, "<"), true, nil
		},
		fromFlag: func(c *config, v pflag.Value) error {
			m, err := splitMap(v.String(), "<")
			c.EvictionHard = m
			return err
		},
	}
}

// portField: port 0 (the kubelet API off) is enableServer: false, as a
// kubelet's configuration says it (its port 0 means the default).
func portField() field {
	return field{
		flag: "port", paths: []string{"port", "enableServer"},
		toFlag: func(c *config) (string, bool, error) {
			switch {
			case c.EnableServer != nil && !*c.EnableServer:
				return "0", true, nil
			case c.Port != 0:
				return strconv.Itoa(int(c.Port)), true, nil
			case c.EnableServer != nil:
				return "10250", true, nil
			}
			return "", false, nil
		},
		fromFlag: func(c *config, v pflag.Value) error {
			n, err := parseInt[int32](v.String())
			c.Port, c.EnableServer = n, ptr.To(n != 0)
			return err
		},
	}
}

// kubeAPIQPSField: the kubelet's kubeAPIQPS is an integer; skiff's flag
// is a float, as client-go's QPS.
func kubeAPIQPSField() field {
	return field{
		flag: "kube-api-qps", paths: []string{"kubeAPIQPS"},
		toFlag: func(c *config) (string, bool, error) {
			if c.KubeAPIQPS == nil {
				return "", false, nil
			}
			return strconv.Itoa(int(*c.KubeAPIQPS)), true, nil
		},
		fromFlag: func(c *config, v pflag.Value) error {
			f, err := strconv.ParseFloat(v.String(), 32)
			if err != nil {
				return err
			}
			if f != float64(int32(f)) {
				return fmt.Errorf("%v is not an integer, as kubeAPIQPS must be", f)
			}
			c.KubeAPIQPS = ptr.To(int32(f))
			return nil
		},
	}
}

// maxParallelImagePullsField: the flag's 0 (no bound) is the field left
// out; the kubelet refuses 0 in the file.
func maxParallelImagePullsField() field {
	f := numPtr("maxParallelImagePulls", "max-parallel-image-pulls", func(c *config) **int32 { return &c.MaxParallelImagePulls })
	from := f.fromFlag
	f.fromFlag = func(c *config, v pflag.Value) error {
		if err := from(c, v); err != nil {
			return err
		}
		if *c.MaxParallelImagePulls == 0 {
			c.MaxParallelImagePulls = nil
		}
		return nil
	}
	return f
}

func verbosityField() field {
	return field{
		flag: "v", paths: []string{"logging.verbosity"},
		toFlag: func(c *config) (string, bool, error) {
			v := c.Logging.Verbosity
			return strconv.FormatUint(uint64(v), 10), v != 0, nil
		},
		fromFlag: func(c *config, v pflag.Value) error {
			n, err := strconv.ParseUint(v.String(), 10, 32)
			c.Logging.Verbosity = logsapi.VerbosityLevel(n)
			return err
		},
	}
}

// taintsField: the flag's <key>=<value>:<effect>,... (nodestatus). Each
// taint of the file must read back from the flag as itself: a taint the
// flag would refuse (an unknown effect, a key that is not a qualified
// name) or change (a key holding '=') is an error naming its index, at
// --config time rather than when the node registers.
func taintsField() field {
	const path = "registerWithTaints"
	return field{
		flag: "register-with-taints", paths: []string{path},
		toFlag: func(c *config) (string, bool, error) {
			parts := make([]string, 0, len(c.RegisterWithTaints))
			for i, t := range c.RegisterWithTaints {
				s := t.Key
				if t.Value != "" {
					s += "=" + t.Value
				}
				s += ":" + string(t.Effect)
				back, err := nodestatus.ParseTaints(s)
				if err != nil {
					return "", false, fmt.Errorf("field %q: taint %d: %w", path, i, err)
				}
				if len(back) != 1 || back[0].Key != t.Key || back[0].Value != t.Value || back[0].Effect != t.Effect {
					return "", false, fmt.Errorf("field %q: taint %d: key %q, value %q: not a valid taint", path, i, t.Key, t.Value)
				}
				parts = append(parts, s)
			}
			s := strings.Join(parts, ",")
			if _, err := nodestatus.ParseTaints(s); err != nil {
				return "", false, fmt.Errorf("field %q: %w", path, err)
			}
			return s, c.RegisterWithTaints != nil, nil
		},
		fromFlag: func(c *config, v pflag.Value) error {
			taints, err := nodestatus.ParseTaints(v.String())
			if len(taints) == 0 {
				taints = nil
			}
			c.RegisterWithTaints = taints
			return err
		},
	}
}

// nodeStatusReportFrequencyField: left out, it is nodeStatusUpdateFrequency
// where the file sets that, as the kubelet's defaulting does (for
// compatibility with configurations older than the field).
func nodeStatusReportFrequencyField() field {
	f := duration("nodeStatusReportFrequency", "node-status-report-frequency", func(c *config) *metav1.Duration { return &c.NodeStatusReportFrequency })
	to := f.toFlag
	f.toFlag = func(c *config) (string, bool, error) {
		if c.NodeStatusReportFrequency.Duration == 0 && c.NodeStatusUpdateFrequency.Duration != 0 {
			return c.NodeStatusUpdateFrequency.Duration.String(), true, nil
		}
		return to(c)
	}
	return f
}

// serializeImagePullsField: left out, it is false where
// maxParallelImagePulls is 2 or more, as the kubelet's defaulting does.
func serializeImagePullsField() field {
	f := boolPtr("serializeImagePulls", "serialize-image-pulls", func(c *config) **bool { return &c.SerializeImagePulls })
	to := f.toFlag
	f.toFlag = func(c *config) (string, bool, error) {
		if c.SerializeImagePulls == nil && ptr.Deref(c.MaxParallelImagePulls, 0) >= 2 {
			return "false", true, nil
		}
		return to(c)
	}
	return f
}

// byPodPriorityField: [{priority: 1000, shutdownGracePeriodSeconds: 60}]
// is the flag's 1000=60, in the file's order.
func byPodPriorityField() field {
	return field{
		flag: "shutdown-grace-period-by-pod-priority", paths: []string{"shutdownGracePeriodByPodPriority"},
		toFlag: func(c *config) (string, bool, error) {
			parts := make([]string, 0, len(c.ShutdownGracePeriodByPodPriority))
			for _, p := range c.ShutdownGracePeriodByPodPriority {
				parts = append(parts, fmt.Sprintf("%d=%d", p.Priority, p.ShutdownGracePeriodSeconds))
			}
			return strings.Join(parts, ","), len(parts) > 0, nil
		},
		fromFlag: func(c *config, v pflag.Value) error {
			c.ShutdownGracePeriodByPodPriority = nil
			m, err := splitPairs(v.String(), "=")
			for _, kv := range m {
				prio, err1 := parseInt[int32](kv[0])
				secs, err2 := parseInt[int64](kv[1])
				if err1 != nil || err2 != nil {
					return fmt.Errorf("%q is not priority=seconds", kv[0]+"="+kv[1])
				}
				c.ShutdownGracePeriodByPodPriority = append(c.ShutdownGracePeriodByPodPriority, v1beta1.ShutdownGracePeriodByPodPriority{Priority: prio, ShutdownGracePeriodSeconds: secs})
			}
			return err
		},
	}
}

// memoryThrottlingFactorField binds memoryThrottlingFactor (MemoryQoS,
// not defaulted since 1.37) to --memory-throttling-factor, whose 0 means
// unset: a value must be greater than 0 and at most 1, as the kubelet
// validates it.
func memoryThrottlingFactorField() field {
	const path = "memoryThrottlingFactor"
	return field{
		flag: "memory-throttling-factor", paths: []string{path},
		toFlag: func(c *config) (string, bool, error) {
			p := c.MemoryThrottlingFactor
			if p == nil {
				return "", false, nil
			}
			if !(*p > 0 && *p <= 1) {
				return "", false, fmt.Errorf("field %q: %v must be greater than 0 and at most 1", path, *p)
			}
			return strconv.FormatFloat(*p, 'g', -1, 64), true, nil
		},
		fromFlag: func(c *config, v pflag.Value) error {
			f, err := strconv.ParseFloat(v.String(), 64)
			c.MemoryThrottlingFactor = nil
			if err == nil && f != 0 {
				c.MemoryThrottlingFactor = &f
			}
			return err
		},
	}
}
