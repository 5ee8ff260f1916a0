package podspec

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks a defaulted Pod (see SetDefaults) for a Linux node agent
// and returns every problem found, with field paths
// ("spec.containers[0].name: Invalid value: ..."). An empty list means the
// pod is valid. Validate is deterministic: the same pod always yields the
// same list in the same order. It does not modify pod.
//
// Beyond upstream's rules for the fields skiff supports, it rejects
// spec.os.name other than linux (checklist A.50), duplicate container names
// across init and app containers (A.29), lifecycle hooks and probes on init
// containers (A.28, B.12), and every set field skiff does not implement yet
// (see supportedFieldPaths).
func Validate(pod *v1.Pod) field.ErrorList {
	return validate(pod, false)
}

// ValidateAPIPod is Validate for a pod of an API server (skiff-apiserver),
// where service accounts exist and their tokens are served: any service
// account name that is a DNS subdomain is accepted, as upstream's, where
// Validate (static pods) accepts only "default"; and persistentVolumeClaim
// volumes (a claimName), which Validate refuses: the node reads the claim
// and its PersistentVolume through the API server; and projected
// serviceAccountToken sources (the kube-api-access-* volume the
// ServiceAccount admission plugin adds), whose token the node requests.
func ValidateAPIPod(pod *v1.Pod) field.ErrorList {
	return validate(pod, true)
}

func validate(pod *v1.Pod, apiPod bool) field.ErrorList {
	if pod == nil {
		return field.ErrorList{field.Required(field.NewPath("pod"), "pod is nil")}
	}
	errs := validateObjectMeta(&pod.ObjectMeta)
	errs = append(errs, validateSpec(&pod.Spec, field.NewPath("spec"), apiPod)...)
	errs = append(errs, validateSupportedFields(pod, apiPod)...)
	return errs
}

// validateSpec checks the pod spec; apiPod as ValidateAPIPod.
func validateSpec(spec *v1.PodSpec, path *field.Path, apiPod bool) field.ErrorList {
	errs := validateContainerList(spec, path)
	errs = append(errs, validateEnum(spec.RestartPolicy, path.Child("restartPolicy"),
		v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever)...)
	errs = append(errs, validateDNS(spec, path)...)
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*g, path.Child("terminationGracePeriodSeconds"))...)
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > 1<<31-1) {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, 1<<31-1)))
	}
	if spec.OS != nil {
		errs = append(errs, validateEnum(spec.OS.Name, path.Child("os", "name"), v1.Linux)...)
	}
	errs = append(errs, validateNames(spec, path)...)
	errs = append(errs, validateFileKeyRefVolumes(spec, path)...)
	errs = append(errs, stableRuns(metav1validation.ValidateLabels(spec.NodeSelector, path.Child("nodeSelector")))...)
	errs = append(errs, validateAffinity(spec.Affinity, path.Child("affinity"))...)
	for i, t := range spec.Tolerations {
		errs = append(errs, validateToleration(t, path.Child("tolerations").Index(i))...)
	}
	for i, g := range spec.ReadinessGates {
		errs = append(errs, invalidIf(validation.IsQualifiedName(string(g.ConditionType)),
			path.Child("readinessGates").Index(i).Child("conditionType"), g.ConditionType)...)
	}
	errs = append(errs, validateServiceAccount(spec, path, apiPod)...)
	if sc := spec.SecurityContext; sc != nil {
		errs = append(errs, validateIDs(sc.RunAsUser, sc.RunAsGroup, path.Child("securityContext"))...)
	}
	errs = append(errs, validatePodSecurity(spec, path)...)
	errs = append(errs, validateHostPorts(spec, path)...)
	errs = append(errs, validatePodVolumes(spec, path, apiPod)...)
	errs = append(errs, validateHostAliases(spec.HostAliases, path.Child("hostAliases"))...)
	return errs
}

// validateContainerList checks init and app containers and that their
// names are unique across both lists (A.29).
func validateContainerList(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), "must have at least one container"))
	}
	seen := map[string]bool{}
	check := func(list []v1.Container, listPath *field.Path, isInit bool) {
		for i := range list {
			c := &list[i]
			p := listPath.Index(i)
			errs = append(errs, validateContainer(c, p, isInit, spec.HostNetwork, ownUserNamespace(spec), spec.TerminationGracePeriodSeconds)...)
			if c.Name != "" && seen[c.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
			}
			seen[c.Name] = true
		}
	}
	check(spec.InitContainers, path.Child("initContainers"), true)
	check(spec.Containers, path.Child("containers"), false)
	return errs
}

// validateNames checks the DNS-style names in the spec.
func validateNames(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name, value string
		check       func(string) []string
	}{
		{"hostname", spec.Hostname, validation.IsDNS1123Label},
		{"subdomain", spec.Subdomain, validation.IsDNS1123Label},
		{"nodeName", spec.NodeName, validation.IsDNS1123Subdomain},
		{"priorityClassName", spec.PriorityClassName, validation.IsDNS1123Subdomain},
		{"schedulerName", spec.SchedulerName, validation.IsDNS1123Subdomain},
	} {
		if f.value != "" {
			errs = append(errs, invalidIf(f.check(f.value), path.Child(f.name), f.value)...)
		}
	}
	return append(errs, validateHostnameOverride(spec, path.Child("hostnameOverride"))...)
}

// validateHostnameOverride: a DNS subdomain of at most 64 characters,
// neither with setHostnameAsFQDN nor with hostNetwork (upstream's
// validatePodHostName).
func validateHostnameOverride(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	o := spec.HostnameOverride
	if o == nil {
		return nil
	}
	var errs field.ErrorList
	if spec.SetHostnameAsFQDN != nil && *spec.SetHostnameAsFQDN {
		errs = append(errs, field.Forbidden(path, "may not be specified when setHostnameAsFQDN is true"))
	}
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(path, "may not be specified when hostNetwork is true"))
	}
	if len(*o) > 64 {
		errs = append(errs, field.TooLong(path, "", 64))
	}
	return append(errs, invalidIf(validation.IsDNS1123Subdomain(*o), path, *o)...)
}

// validateDNS checks dnsPolicy and dnsConfig: upstream's four policies
// (None requires a nameserver in dnsConfig).
func validateDNS(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	errs := validateEnum(spec.DNSPolicy, path.Child("dnsPolicy"), v1.DNSClusterFirstWithHostNet, v1.DNSClusterFirst, v1.DNSDefault, v1.DNSNone)
	cfgPath := path.Child("dnsConfig")
	cfg := spec.DNSConfig
	if spec.DNSPolicy == v1.DNSNone {
		if cfg == nil {
			return append(errs, field.Required(cfgPath, "must provide `dnsConfig` when `dnsPolicy` is None"))
		}
		if len(cfg.Nameservers) == 0 {
			errs = append(errs, field.Required(cfgPath.Child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None"))
		}
	}
	if cfg == nil {
		return errs
	}
	if n := len(cfg.Nameservers); n > 3 {
		errs = append(errs, field.TooMany(cfgPath.Child("nameservers"), n, 3))
	}
	for i, ns := range cfg.Nameservers {
		errs = append(errs, validation.IsValidIP(cfgPath.Child("nameservers").Index(i), ns)...)
	}
	if n := len(cfg.Searches); n > 32 {
		errs = append(errs, field.TooMany(cfgPath.Child("searches"), n, 32))
	}
	total := 0
	for i, s := range cfg.Searches {
		total += len(s)
		errs = append(errs, invalidIf(validation.IsDNS1123Subdomain(strings.TrimSuffix(s, ".")),
			cfgPath.Child("searches").Index(i), s)...)
	}
	if total > 2048 {
		errs = append(errs, field.Invalid(cfgPath.Child("searches"), total, "must not have more than 2048 characters (including spaces) in the search list"))
	}
	for i, o := range cfg.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(cfgPath.Child("options").Index(i).Child("name"), ""))
		}
	}
	return errs
}

// validateToleration follows upstream's toleration rules.
func validateToleration(t v1.Toleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Key != "" {
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, path.Child("key"))...)
	} else if t.Operator != v1.TolerationOpExists {
		errs = append(errs, field.Invalid(path.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
	}
	if t.TolerationSeconds != nil && t.Effect != v1.TaintEffectNoExecute {
		errs = append(errs, field.Invalid(path.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
	}
	switch t.Operator {
	case v1.TolerationOpEqual, "":
		errs = append(errs, invalidIf(validation.IsValidLabelValue(t.Value), path.Child("value"), t.Value)...)
	case v1.TolerationOpExists:
		if t.Value != "" {
			errs = append(errs, field.Invalid(path.Child("value"), t.Value, "value must be empty when `operator` is 'Exists'"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("operator"), t.Operator, []v1.TolerationOperator{v1.TolerationOpEqual, v1.TolerationOpExists}))
	}
	if t.Effect != "" {
		errs = append(errs, validateEnum(t.Effect, path.Child("effect"),
			v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute)...)
	}
	return errs
}

// validateServiceAccount accepts only the "default" service account of a
// static pod (without an API server skiff has no tokens to mount) and, for
// an API pod, any name that is a DNS subdomain (upstream's rule).
func validateServiceAccount(spec *v1.PodSpec, path *field.Path, apiPod bool) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct{ name, value string }{
		{"serviceAccountName", spec.ServiceAccountName},
		{"serviceAccount", spec.DeprecatedServiceAccount},
	} {
		switch {
		case f.value == "" || f.value == "default":
		case apiPod:
			for _, msg := range validation.IsDNS1123Subdomain(f.value) {
				errs = append(errs, field.Invalid(path.Child(f.name), f.value, msg))
			}
		default:
			errs = append(errs, field.NotSupported(path.Child(f.name), f.value, []string{"default"}))
		}
	}
	// Upstream copies the deprecated field into serviceAccountName; skiff
	// reads serviceAccountName only, so another account there is refused.
	if d := spec.DeprecatedServiceAccount; apiPod && d != "" && d != "default" && d != spec.ServiceAccountName {
		errs = append(errs, field.Invalid(path.Child("serviceAccount"), d, "must equal spec.serviceAccountName, which names the pod's service account"))
	}
	return errs
}

// validateHostPorts rejects two ports claiming the same host port, protocol
// and host IP, and (with hostNetwork) host ports that differ from the
// container port.
func validateHostPorts(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	used := map[string]bool{}
	check := func(list []v1.Container, listPath *field.Path) {
		for i, c := range list {
			for j, p := range c.Ports {
				pp := listPath.Index(i).Child("ports").Index(j)
				if spec.HostNetwork && p.HostPort != 0 && p.HostPort != p.ContainerPort {
					errs = append(errs, field.Invalid(pp.Child("containerPort"), p.ContainerPort, "must match `hostPort` when `hostNetwork` is true"))
				}
				if p.HostPort == 0 {
					continue
				}
				key := fmt.Sprintf("%s/%d/%s", p.HostIP, p.HostPort, p.Protocol)
				if used[key] {
					errs = append(errs, field.Duplicate(pp.Child("hostPort"), fmt.Sprintf("%d/%s", p.HostPort, p.Protocol)))
				}
				used[key] = true
			}
		}
	}
	check(spec.InitContainers, path.Child("initContainers"))
	check(spec.Containers, path.Child("containers"))
	return errs
}

// validateIDs checks runAsUser and runAsGroup ranges.
func validateIDs(user, group *int64, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if user != nil {
		errs = append(errs, invalidIf(validation.IsValidUserID(*user), path.Child("runAsUser"), *user)...)
	}
	if group != nil {
		errs = append(errs, invalidIf(validation.IsValidGroupID(*group), path.Child("runAsGroup"), *group)...)
	}
	return errs
}

// validateEnum requires v to be one of allowed: Required if empty,
// NotSupported otherwise.
func validateEnum[T ~string](v T, path *field.Path, allowed ...T) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(path, v, allowed)}
}

// validateObjectMeta is upstream's ValidateObjectMeta for a namespaced
// object whose name is a DNS-1123 subdomain, in a stable order (see
// stableRuns).
func validateObjectMeta(meta *metav1.ObjectMeta) field.ErrorList {
	return stableRuns(apivalidation.ValidateObjectMeta(meta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata")))
}

// stableRuns sorts each run of consecutive errors on the same field by
// their text, in place, and returns errs. Upstream's label and annotation
// checks range over a map, so two bad labels come in a random order;
// callers promise the same list for the same object.
func stableRuns(errs field.ErrorList) field.ErrorList {
	for start := 0; start < len(errs); {
		end := start + 1
		for end < len(errs) && errs[end].Field == errs[start].Field {
			end++
		}
		slices.SortStableFunc(errs[start:end], func(a, b *field.Error) int { return strings.Compare(a.Error(), b.Error()) })
		start = end
	}
	return errs
}

// invalidIf turns the messages of an apimachinery Is* check into Invalid
// errors for value at path.
func invalidIf(msgs []string, path *field.Path, value any) field.ErrorList {
	var errs field.ErrorList
	for _, m := range msgs {
		errs = append(errs, field.Invalid(path, value, m))
	}
	return errs
}
