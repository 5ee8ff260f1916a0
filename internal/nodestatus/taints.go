package nodestatus

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ParseTaints parses --register-with-taints: comma-separated
// `<key>=<value>:<effect>` or `<key>:<effect>`, with the kubelet's
// validation and messages (pkg/util/taints ParseTaints): a qualified-name
// key, a label-value value, an effect of NoSchedule, PreferNoSchedule or
// NoExecute, no two taints with one key and effect. The kubelet's parser
// also takes `<key>-` (a removal) and then ignores it; here it is an
// error, since a registration has nothing to remove. Empty: none. Pure.
func ParseTaints(spec string) ([]v1.Taint, error) {
	if spec == "" {
		return nil, nil
	}
	var taints []v1.Taint
	seen := map[v1.TaintEffect]map[string]bool{}
	for _, st := range strings.Split(spec, ",") {
		if strings.HasSuffix(st, "-") {
			return nil, fmt.Errorf("invalid taint spec: %v, a taint to remove cannot be registered", st)
		}
		t, err := parseTaint(st)
		if err != nil {
			return nil, err
		}
		if t.Effect == "" {
			return nil, fmt.Errorf("invalid taint spec: %v", st)
		}
		if seen[t.Effect][t.Key] {
			return nil, fmt.Errorf("duplicated taints with the same key and effect: %v", t)
		}
		if seen[t.Effect] == nil {
			seen[t.Effect] = map[string]bool{}
		}
		seen[t.Effect][t.Key] = true
		taints = append(taints, t)
	}
	return taints, nil
}

// parseTaint is the kubelet's parseTaint.
func parseTaint(st string) (v1.Taint, error) {
	var t v1.Taint
	parts := strings.Split(st, ":")
	switch len(parts) {
	case 1:
		t.Key = parts[0]
	case 2:
		t.Effect = v1.TaintEffect(parts[1])
		switch t.Effect {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			return t, fmt.Errorf("invalid taint effect: %v, unsupported taint effect", t.Effect)
		}
		kv := strings.Split(parts[0], "=")
		if len(kv) > 2 {
			return t, fmt.Errorf("invalid taint spec: %v", st)
		}
		t.Key = kv[0]
		if len(kv) == 2 {
			t.Value = kv[1]
			if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
				return t, fmt.Errorf("invalid taint spec: %v, %s", st, strings.Join(errs, "; "))
			}
		}
	default:
		return t, fmt.Errorf("invalid taint spec: %v", st)
	}
	if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		return t, fmt.Errorf("invalid taint spec: %v, %s", st, strings.Join(errs, "; "))
	}
	return t, nil
}
