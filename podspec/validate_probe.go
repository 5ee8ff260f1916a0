package podspec

import (
	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// probeKind says which probe of a container validateProbe checks.
type probeKind int

const (
	livenessProbe probeKind = iota
	readinessProbe
	startupProbe
)

// validateProbes checks the three probes of a container (checklist B.2,
// B.15, B.16). Whether an init container may have probes at all is checked
// by forbidOnInit (B.12).
func validateProbes(c *v1.Container, path *field.Path) field.ErrorList {
	errs := validateProbe(c.LivenessProbe, path.Child("livenessProbe"), livenessProbe)
	errs = append(errs, validateProbe(c.ReadinessProbe, path.Child("readinessProbe"), readinessProbe)...)
	return append(errs, validateProbe(c.StartupProbe, path.Child("startupProbe"), startupProbe)...)
}

// validateProbe checks a defaulted probe as upstream does; nil is valid.
// initialDelaySeconds must not be negative; timeoutSeconds, periodSeconds
// and both thresholds must be at least 1 (SetDefaults replaces zeros);
// successThreshold must be 1 for liveness and startup probes; the
// probe-level terminationGracePeriodSeconds is forbidden on readiness
// probes and must be positive on the others (B.16).
func validateProbe(p *v1.Probe, path *field.Path, kind probeKind) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateProbeHandler(&p.ProbeHandler, path)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(p.InitialDelaySeconds), path.Child("initialDelaySeconds"))...)
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"timeoutSeconds", p.TimeoutSeconds}, {"periodSeconds", p.PeriodSeconds},
		{"successThreshold", p.SuccessThreshold}, {"failureThreshold", p.FailureThreshold},
	} {
		if f.value < 1 {
			errs = append(errs, field.Invalid(path.Child(f.name), f.value, "must be greater than or equal to 1"))
		}
	}
	if kind != readinessProbe && p.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(path.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	if g := p.TerminationGracePeriodSeconds; g != nil {
		gp := path.Child("terminationGracePeriodSeconds")
		switch {
		case kind == readinessProbe:
			errs = append(errs, field.Invalid(gp, *g, "must not be set for readinessProbes"))
		case *g <= 0:
			errs = append(errs, field.Invalid(gp, *g, "must be greater than 0"))
		}
	}
	return errs
}

// validateProbeHandler requires exactly one of exec, httpGet, tcpSocket and
// grpc (B.2) and checks it.
func validateProbeHandler(h *v1.ProbeHandler, path *field.Path) field.ErrorList {
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
	if t := h.TCPSocket; t != nil {
		set = append(set, "tcpSocket")
		errs = append(errs, validatePortRef(t.Port, path.Child("tcpSocket", "port"))...)
	}
	if g := h.GRPC; g != nil {
		set = append(set, "grpc")
		errs = append(errs, invalidIf(validation.IsValidPortNum(int(g.Port)), path.Child("grpc", "port"), g.Port)...)
	}
	switch {
	case len(set) == 0:
		errs = append(errs, field.Required(path, "must specify a handler type"))
	case len(set) > 1:
		for _, extra := range set[1:] {
			errs = append(errs, field.Forbidden(path.Child(extra), "may not specify more than 1 handler type"))
		}
	}
	return errs
}

// validateHTTPGet checks the httpGet action of a probe or lifecycle hook as
// upstream does: a path (SetDefaults sets "/"), a port number or name, the
// scheme HTTP or HTTPS, and valid header names.
func validateHTTPGet(g *v1.HTTPGetAction, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if g.Path == "" {
		errs = append(errs, field.Required(path.Child("path"), ""))
	}
	errs = append(errs, validatePortRef(g.Port, path.Child("port"))...)
	errs = append(errs, validateEnum(g.Scheme, path.Child("scheme"), v1.URISchemeHTTP, v1.URISchemeHTTPS)...)
	for i, h := range g.HTTPHeaders {
		errs = append(errs, invalidIf(validation.IsHTTPHeaderName(h.Name), path.Child("httpHeaders").Index(i).Child("name"), h.Name)...)
	}
	return errs
}
