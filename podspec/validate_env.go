package podspec

import (
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiffnode/skiff/internal/downward"
)

// Container environment and host-name fields, validated as the v1.34 API
// server does (pkg/apis/core/validation: ValidateEnv, ValidateEnvFrom,
// ValidateHostAliases).

// envFieldRefPaths are the env valueFrom.fieldRef paths (besides
// subscripted metadata.labels['k'] and metadata.annotations['k']), checklist
// G.6.
var envFieldRefPaths = []string{
	"metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.serviceAccountName",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
}

// envResourcePaths are the resourceFieldRef resources (besides
// requests.hugepages-* and limits.hugepages-*), checklist G.8.
var envResourcePaths = []string{
	"limits.cpu", "limits.ephemeral-storage", "limits.memory",
	"requests.cpu", "requests.ephemeral-storage", "requests.memory",
}

// Divisors the API server allows, by resource.
var (
	cpuDivisors  = []string{"1m", "1"}
	sizeDivisors = []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
)

// validateEnv checks env names (relaxed: any printable ASCII but "=", as
// the API server since RelaxedEnvironmentVariableValidation went GA) and
// each valueFrom.
func validateEnv(env []v1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range env {
		ep := path.Index(i)
		if e.Name == "" {
			errs = append(errs, field.Required(ep.Child("name"), ""))
		} else {
			errs = append(errs, invalidIf(validation.IsRelaxedEnvVarName(e.Name), ep.Child("name"), e.Name)...)
		}
		errs = append(errs, validateEnvValueFrom(e, ep.Child("valueFrom"))...)
	}
	return errs
}

// validateEnvValueFrom requires exactly one source, no value beside it,
// and a valid source.
func validateEnvValueFrom(e v1.EnvVar, path *field.Path) field.ErrorList {
	vf := e.ValueFrom
	if vf == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	if vf.FieldRef != nil {
		n++
		errs = append(errs, validateFieldRef(vf.FieldRef, path.Child("fieldRef"))...)
	}
	if vf.ResourceFieldRef != nil {
		n++
		errs = append(errs, validateResourceFieldRef(vf.ResourceFieldRef, path.Child("resourceFieldRef"))...)
	}
	if vf.ConfigMapKeyRef != nil {
		n++
		errs = append(errs, validateKeyRef(vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Key, path.Child("configMapKeyRef"))...)
	}
	if vf.SecretKeyRef != nil {
		n++
		errs = append(errs, validateKeyRef(vf.SecretKeyRef.Name, vf.SecretKeyRef.Key, path.Child("secretKeyRef"))...)
	}
	if vf.FileKeyRef != nil {
		n++
		errs = append(errs, validateFileKeyRef(vf.FileKeyRef, path.Child("fileKeyRef"))...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case e.Value != "":
		errs = append(errs, field.Invalid(path, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(path, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// validateFieldRef checks a downward-API field selector for env.
func validateFieldRef(ref *v1.ObjectFieldSelector, path *field.Path) field.ErrorList {
	if errs := validateEnum(ref.APIVersion, path.Child("apiVersion"), "v1"); len(errs) > 0 {
		return errs
	}
	if ref.FieldPath == "" {
		return field.ErrorList{field.Required(path.Child("fieldPath"), "")}
	}
	if base, key, ok := downward.SplitSubscript(ref.FieldPath); ok {
		switch base {
		case "metadata.annotations":
			return invalidIf(validation.IsQualifiedName(strings.ToLower(key)), path, strings.ToLower(key))
		case "metadata.labels":
			return invalidIf(validation.IsQualifiedName(key), path, key)
		}
		return field.ErrorList{field.Invalid(path, base, "does not support subscript")}
	}
	if !slices.Contains(envFieldRefPaths, ref.FieldPath) {
		return field.ErrorList{field.NotSupported(path.Child("fieldPath"), ref.FieldPath, envFieldRefPaths)}
	}
	return nil
}

// validateResourceFieldRef checks the resource and its divisor.
func validateResourceFieldRef(ref *v1.ResourceFieldSelector, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	hugepages := strings.HasPrefix(ref.Resource, "requests.hugepages-") || strings.HasPrefix(ref.Resource, "limits.hugepages-")
	switch {
	case ref.Resource == "":
		errs = append(errs, field.Required(path.Child("resource"), ""))
	case !slices.Contains(envResourcePaths, ref.Resource) && !hugepages:
		errs = append(errs, field.NotSupported(path.Child("resource"), ref.Resource, envResourcePaths))
	}
	if ref.ContainerName != "" {
		errs = append(errs, invalidIf(validation.IsDNS1123Label(ref.ContainerName), path.Child("containerName"), ref.ContainerName)...)
	}
	return append(errs, validateDivisor(ref.Resource, ref.Divisor, path.Child("divisor"))...)
}

// validateDivisor allows the divisors the API server allows; an unset
// (zero) divisor means 1.
func validateDivisor(res string, divisor resource.Quantity, path *field.Path) field.ErrorList {
	if divisor.Cmp(resource.Quantity{}) == 0 {
		return nil
	}
	d := divisor.String()
	_, name, _ := strings.Cut(res, ".")
	switch {
	case name == "cpu" && !slices.Contains(cpuDivisors, d):
		return field.ErrorList{field.Invalid(path, res, "only divisor's values 1m and 1 are supported with the cpu resource")}
	case name == "memory" && !slices.Contains(sizeDivisors, d):
		return field.ErrorList{field.Invalid(path, res, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource")}
	case name == "ephemeral-storage" && !slices.Contains(sizeDivisors, d):
		return field.ErrorList{field.Invalid(path, res, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource")}
	case strings.HasPrefix(name, "hugepages-") && !slices.Contains(sizeDivisors, d):
		return field.ErrorList{field.Invalid(path, res, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource")}
	}
	return nil
}

// validateKeyRef checks a configMapKeyRef or secretKeyRef: the object name
// a DNS-1123 subdomain, the key a valid config map key.
func validateKeyRef(name, key string, path *field.Path) field.ErrorList {
	errs := invalidIf(apivalidation.NameIsDNSSubdomain(name, false), path.Child("name"), name)
	if key == "" {
		return append(errs, field.Required(path.Child("key"), ""))
	}
	return append(errs, invalidIf(validation.IsConfigMapKey(key), path.Child("key"), key)...)
}

// validateEnvFrom checks each envFrom source: a valid prefix and exactly
// one of configMapRef and secretRef, naming a valid object.
func validateEnvFrom(list []v1.EnvFromSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, from := range list {
		ip := path.Index(i)
		if from.Prefix != "" {
			errs = append(errs, invalidIf(validation.IsRelaxedEnvVarName(from.Prefix), ip.Child("prefix"), from.Prefix)...)
		}
		n := 0
		if ref := from.ConfigMapRef; ref != nil {
			n++
			errs = append(errs, validateObjectRefName(ref.Name, ip.Child("configMapRef", "name"))...)
		}
		if ref := from.SecretRef; ref != nil {
			n++
			errs = append(errs, validateObjectRefName(ref.Name, ip.Child("secretRef", "name"))...)
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(path, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

// validateObjectRefName: required, and a DNS-1123 subdomain (the API
// server validates these names as prefixes, allowing a trailing "-").
func validateObjectRefName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	return invalidIf(apivalidation.NameIsDNSSubdomain(name, true), path, name)
}

// validateHostAliases checks spec.hostAliases: each ip a valid IP, each
// hostname a DNS-1123 subdomain.
func validateHostAliases(aliases []v1.HostAlias, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, a := range aliases {
		ap := path.Index(i)
		errs = append(errs, validation.IsValidIP(ap.Child("ip"), a.IP)...)
		for j, h := range a.Hostnames {
			errs = append(errs, invalidIf(validation.IsDNS1123Subdomain(h), ap.Child("hostnames").Index(j), h)...)
		}
	}
	return errs
}

// validateFileKeyRef checks an env file reference as upstream's
// validateFileKeySelector: a valid variable name as key, a DNS label as
// volumeName, a path without "..". That the volume is one of the pod's
// emptyDirs is checked with the volumes (validateFileKeyRefVolumes).
func validateFileKeyRef(ref *v1.FileKeySelector, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.Key == "" {
		errs = append(errs, field.Required(path.Child("key"), ""))
	} else {
		errs = append(errs, invalidIf(validation.IsRelaxedEnvVarName(ref.Key), path.Child("key"), ref.Key)...)
	}
	if ref.VolumeName == "" {
		errs = append(errs, field.Required(path.Child("volumeName"), ""))
	} else {
		errs = append(errs, invalidIf(validation.IsDNS1123Label(ref.VolumeName), path.Child("volumeName"), ref.VolumeName)...)
	}
	switch {
	case ref.Path == "":
		errs = append(errs, field.Required(path.Child("path"), ""))
	case slices.Contains(strings.Split(filepath.ToSlash(ref.Path), "/"), ".."):
		errs = append(errs, field.Invalid(path.Child("path"), ref.Path, "must not contain '..'"))
	}
	return errs
}

// validateFileKeyRefVolumes requires the volume of every fileKeyRef to be
// an emptyDir of the pod (upstream's validateFileKeyRefVolumes).
func validateFileKeyRefVolumes(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	emptyDirs := map[string]bool{}
	for _, v := range spec.Volumes {
		emptyDirs[v.Name] = v.EmptyDir != nil
	}
	var errs field.ErrorList
	check := func(list []v1.Container, p *field.Path) {
		for i, c := range list {
			for j, e := range c.Env {
				if e.ValueFrom == nil || e.ValueFrom.FileKeyRef == nil {
					continue
				}
				name := e.ValueFrom.FileKeyRef.VolumeName
				fp := p.Index(i).Child("env").Index(j).Child("valueFrom", "fileKeyRef", "volumeName")
				switch isEmptyDir, ok := emptyDirs[name]; {
				case !ok:
					errs = append(errs, field.NotFound(fp, name))
				case !isEmptyDir:
					errs = append(errs, field.Invalid(fp, name, "referenced volume must be an emptyDir"))
				}
			}
		}
	}
	check(spec.InitContainers, path.Child("initContainers"))
	check(spec.Containers, path.Child("containers"))
	return errs
}
