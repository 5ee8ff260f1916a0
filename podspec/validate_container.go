package podspec

import (
	"fmt"

	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateContainer checks one init or app container.
func validateContainer(c *v1.Container, path *field.Path, isInit, hostNetwork, userns bool, grace *int64) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else {
		errs = append(errs, invalidIf(validation.IsDNS1123Label(c.Name), path.Child("name"), c.Name)...)
	}
	switch {
	case c.Image == "":
		errs = append(errs, field.Required(path.Child("image"), ""))
	case strings.TrimSpace(c.Image) != c.Image:
		errs = append(errs, field.Invalid(path.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	errs = append(errs, validateEnum(c.ImagePullPolicy, path.Child("imagePullPolicy"),
		v1.PullAlways, v1.PullIfNotPresent, v1.PullNever)...)
	errs = append(errs, validateEnum(c.TerminationMessagePolicy, path.Child("terminationMessagePolicy"),
		v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError)...)
	errs = append(errs, validatePorts(c.Ports, path.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, path.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, path.Child("envFrom"))...)
	errs = append(errs, validateResources(&c.Resources, path.Child("resources"))...)
	errs = append(errs, validateResizePolicy(c.ResizePolicy, path.Child("resizePolicy"))...)
	errs = append(errs, validateContainerSecurity(c.SecurityContext, path.Child("securityContext"), userns)...)
	if isInit && (c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways) {
		errs = append(errs, forbidOnInit(c, path)...)
	}
	errs = append(errs, validateRestartPolicy(c, path, isInit)...)
	if l := c.Lifecycle; l != nil {
		errs = append(errs, validateHook(l.PostStart, grace, path.Child("lifecycle", "postStart"))...)
		errs = append(errs, validateHook(l.PreStop, grace, path.Child("lifecycle", "preStop"))...)
	}
	errs = append(errs, validateProbes(c, path)...)
	return errs
}

// forbidOnInit rejects lifecycle hooks and probes on a (non-sidecar) init
// container (checklist A.28, B.12).
func forbidOnInit(c *v1.Container, path *field.Path) field.ErrorList {
	const msg = "may not be set for init containers without restartPolicy=Always"
	var errs field.ErrorList
	if c.Lifecycle != nil {
		errs = append(errs, field.Forbidden(path.Child("lifecycle"), msg))
	}
	if c.LivenessProbe != nil {
		errs = append(errs, field.Forbidden(path.Child("livenessProbe"), msg))
	}
	if c.ReadinessProbe != nil {
		errs = append(errs, field.Forbidden(path.Child("readinessProbe"), msg))
	}
	if c.StartupProbe != nil {
		errs = append(errs, field.Forbidden(path.Child("startupProbe"), msg))
	}
	return errs
}

// validatePorts checks port numbers, protocols, host IPs and names (unique
// within the container).
func validatePorts(ports []v1.ContainerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, p := range ports {
		pp := path.Index(i)
		if p.Name != "" {
			errs = append(errs, invalidIf(validation.IsValidPortName(p.Name), pp.Child("name"), p.Name)...)
			if names[p.Name] {
				errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
			}
			names[p.Name] = true
		}
		if p.ContainerPort == 0 {
			errs = append(errs, field.Required(pp.Child("containerPort"), ""))
		} else {
			errs = append(errs, invalidIf(validation.IsValidPortNum(int(p.ContainerPort)), pp.Child("containerPort"), p.ContainerPort)...)
		}
		if p.HostPort != 0 {
			errs = append(errs, invalidIf(validation.IsValidPortNum(int(p.HostPort)), pp.Child("hostPort"), p.HostPort)...)
		}
		if p.HostIP != "" {
			errs = append(errs, validation.IsValidIP(pp.Child("hostIP"), p.HostIP)...)
		}
		errs = append(errs, validateEnum(p.Protocol, pp.Child("protocol"), v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP)...)
	}
	return errs
}

// validateResources allows cpu and memory only, non-negative, with each
// request at most its limit.
func validateResources(r *v1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	supported := []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}
	for _, kind := range []string{"limits", "requests"} {
		list := r.Limits
		if kind == "requests" {
			list = r.Requests
		}
		for _, name := range slices.Sorted(maps.Keys(list)) {
			q := list[name]
			rp := path.Child(kind).Key(string(name))
			if name != v1.ResourceCPU && name != v1.ResourceMemory {
				errs = append(errs, field.NotSupported(rp, name, supported))
			}
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(rp, q.String(), "must be greater than or equal to 0"))
			}
		}
	}
	for _, name := range supported {
		req, hasReq := r.Requests[name]
		limit, hasLimit := r.Limits[name]
		if hasReq && hasLimit && req.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), req.String(),
				"must be less than or equal to "+string(name)+" limit of "+limit.String()))
		}
	}
	return errs
}

// validateResizePolicy allows one policy per resource, cpu or memory, each
// NotRequired or RestartContainer (upstream's validateResizePolicy).
func validateResizePolicy(policies []v1.ContainerResizePolicy, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[v1.ResourceName]bool{}
	for i, p := range policies {
		pp := path.Index(i)
		switch {
		case p.ResourceName != v1.ResourceCPU && p.ResourceName != v1.ResourceMemory:
			errs = append(errs, field.NotSupported(pp.Child("resourceName"), p.ResourceName, []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}))
		case seen[p.ResourceName]:
			errs = append(errs, field.Duplicate(pp.Child("resourceName"), p.ResourceName))
		}
		seen[p.ResourceName] = true
		if p.RestartPolicy != v1.NotRequired && p.RestartPolicy != v1.RestartContainer {
			errs = append(errs, field.NotSupported(pp.Child("restartPolicy"), p.RestartPolicy,
				[]v1.ResourceResizeRestartPolicy{v1.NotRequired, v1.RestartContainer}))
		}
	}
	return errs
}

// validateRestartPolicy checks a container's restartPolicy and its
// restartPolicyRules as upstream 1.37 does (ContainerRestartRules and
// RestartAllContainersOnContainerExits on): Always, OnFailure or Never;
// rules need a restartPolicy; an init container with Always (a sidecar)
// may carry rules only for RestartAllContainers' sake.
func validateRestartPolicy(c *v1.Container, path *field.Path, isInit bool) field.ErrorList {
	p := path.Child("restartPolicy")
	if c.RestartPolicy == nil {
		if len(c.RestartPolicyRules) > 0 {
			return field.ErrorList{field.Required(p, "must specify restartPolicy when restart rules are used")}
		}
		return nil
	}
	errs := validateEnum(*c.RestartPolicy, p, v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyOnFailure, v1.ContainerRestartPolicyNever)
	rp := path.Child("restartPolicyRules")
	if len(c.RestartPolicyRules) > 20 {
		errs = append(errs, field.TooMany(rp, len(c.RestartPolicyRules), 20))
	}
	for i, r := range c.RestartPolicyRules {
		errs = append(errs, validateEnum(r.Action, rp.Index(i).Child("action"),
			v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers)...)
		ep := rp.Index(i).Child("exitCodes")
		if r.ExitCodes == nil {
			errs = append(errs, field.Required(ep, "must be specified"))
			continue
		}
		errs = append(errs, validateEnum(r.ExitCodes.Operator, ep.Child("operator"),
			v1.ContainerRestartRuleOnExitCodesOpIn, v1.ContainerRestartRuleOnExitCodesOpNotIn)...)
		if len(r.ExitCodes.Values) > 255 {
			errs = append(errs, field.TooMany(ep.Child("values"), len(r.ExitCodes.Values), 255))
		}
	}
	return errs
}

// validateHook requires exactly one of exec, httpGet, sleep (C.1, C.2);
// nil is valid.
// validateHook checks one lifecycle handler; grace is the pod's
// terminationGracePeriodSeconds (nil: not known), which bounds a sleep.
func validateHook(h *v1.LifecycleHandler, grace *int64, path *field.Path) field.ErrorList {
	if h == nil {
		return nil
	}
	var errs field.ErrorList
	var set []string
	if h.Exec != nil {
		set = append(set, "exec")
		if len(h.Exec.Command) == 0 {
			errs = append(errs, field.Required(path.Child("exec", "command"), ""))
		}
	}
	if g := h.HTTPGet; g != nil {
		set = append(set, "httpGet")
		errs = append(errs, validateHTTPGet(g, path.Child("httpGet"))...)
	}
	if h.Sleep != nil {
		set = append(set, "sleep")
		// As the API server (PodLifecycleSleepActionAllowZero, on since 1.33):
		// a sleep longer than the grace period could never finish.
		switch {
		case grace != nil && (h.Sleep.Seconds < 0 || h.Sleep.Seconds > *grace):
			errs = append(errs, field.Invalid(path.Child("sleep", "seconds"), h.Sleep.Seconds,
				fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *grace)))
		case h.Sleep.Seconds < 0:
			errs = append(errs, field.Invalid(path.Child("sleep", "seconds"), h.Sleep.Seconds, "must be greater than or equal to 0"))
		}
	}
	if h.TCPSocket != nil {
		errs = append(errs, field.Forbidden(path.Child("tcpSocket"), "not supported by skiff: the kubelet ignores tcpSocket hooks; use exec, httpGet or sleep"))
	}
	switch {
	case len(set) == 0 && h.TCPSocket == nil:
		errs = append(errs, field.Required(path, "must specify a handler type"))
	case len(set) > 1:
		errs = append(errs, field.Forbidden(path.Child(set[1]), "may not specify more than 1 handler type"))
	}
	return errs
}

// validatePortRef checks a port given by number or IANA name.
func validatePortRef(port intstr.IntOrString, path *field.Path) field.ErrorList {
	if port.Type == intstr.Int {
		return invalidIf(validation.IsValidPortNum(port.IntValue()), path, port.IntValue())
	}
	return invalidIf(validation.IsValidPortName(port.StrVal), path, port.StrVal)
}
