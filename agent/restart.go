package agent

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// Container restart rules (ContainerRestartRules, beta and on since 1.35):
// a container's own restartPolicy, and its restartPolicyRules on exit
// codes, decide its restarts before the pod's restartPolicy does.

// containerShouldRestart reports whether container c of pod restarts after
// exiting with exitCode, as upstream's ContainerShouldRestart: the first
// restartPolicyRule matching the exit code with action Restart restarts it;
// else the container's restartPolicy (Always, OnFailure, Never) decides;
// without one, the pod's. RestartAllContainers rules are refused at
// admission (the node does not declare the feature). Pure.
func containerShouldRestart(c *v1.Container, pod *v1.Pod, exitCode int32) bool {
	if c.RestartPolicy != nil {
		if rule, ok := matchingRestartRule(c, exitCode); ok && rule.Action == v1.ContainerRestartRuleActionRestart {
			return true
		}
		switch *c.RestartPolicy {
		case v1.ContainerRestartPolicyAlways:
			return true
		case v1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case v1.ContainerRestartPolicyNever:
			return false
		}
	}
	return shouldRestart(pod.Spec.RestartPolicy, exitCode)
}

// matchingRestartRule returns the first of c's restartPolicyRules whose
// exit codes match exitCode (In: listed; NotIn: not listed).
func matchingRestartRule(c *v1.Container, exitCode int32) (v1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		if rule.ExitCodes == nil {
			continue
		}
		listed := slices.Contains(rule.ExitCodes.Values, exitCode)
		switch rule.ExitCodes.Operator {
		case v1.ContainerRestartRuleOnExitCodesOpIn:
			if listed {
				return rule, true
			}
		case v1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !listed {
				return rule, true
			}
		}
	}
	return v1.ContainerRestartRule{}, false
}

// restartsAfterProbeKill reports whether c restarts once killed for a
// failed liveness or startup probe: sidecars always; else the container's
// restartPolicy if set (anything but Never; its rules are not evaluated,
// as the kubelet's computePodActions), else the pod's for a failure.
func restartsAfterProbeKill(c *v1.Container, pod *v1.Pod) bool {
	switch {
	case isSidecar(c):
		return true
	case c.RestartPolicy != nil:
		return *c.RestartPolicy != v1.ContainerRestartPolicyNever
	}
	return shouldRestart(pod.Spec.RestartPolicy, 1)
}
