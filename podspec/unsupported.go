package podspec

import (
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// notSupported is the detail of the error for a field skiff does not
// implement.
const notSupported = "not supported by skiff yet"

// supportedFieldPaths lists the Pod fields skiff implements, as JSON paths
// with "[*]" for list elements. A listed path allows its whole subtree; any
// other field that is set (see isSet) is rejected with
// field.Forbidden(path, "not supported by skiff yet").
//
// The check walks the Pod by reflection over JSON field names, so it is an
// allow-list: fields added to k8s.io/api later are rejected until listed
// here. To support a feature, add its path (e.g.
// "spec.containers[*].livenessProbe") and validate its content in Validate.
// Values of supported fields are checked by Validate (e.g. env fieldRef
// paths, resource names, serviceAccountName).
func supportedFieldPaths() []string {
	paths := []string{
		"apiVersion", "kind",
		"metadata.name", "metadata.namespace", "metadata.uid",
		"metadata.labels", "metadata.annotations",
		// status is not input: manifests.Decode drops it and the kubelet
		// ignores it.
		"status",
		"spec.restartPolicy", "spec.terminationGracePeriodSeconds",
		"spec.activeDeadlineSeconds",
		"spec.dnsPolicy", "spec.dnsConfig",
		"spec.hostNetwork", "spec.hostname", "spec.subdomain", "spec.hostnameOverride",
		"spec.nodeName", "spec.nodeSelector", "spec.tolerations",
		// Node affinity is checked at admission; pod (anti-)affinity is
		// the scheduler's, ignored on the node as by the kubelet.
		"spec.affinity",
		"spec.priority", "spec.priorityClassName", "spec.schedulerName",
		"spec.os", "spec.readinessGates", "spec.enableServiceLinks",
		"spec.serviceAccountName", "spec.serviceAccount",
		"spec.automountServiceAccountToken",
		"spec.securityContext.runAsUser", "spec.securityContext.runAsGroup",
		"spec.securityContext.runAsNonRoot",
		// Security context (issue 14; validate_security.go).
		"spec.hostPID", "spec.hostIPC", "spec.shareProcessNamespace", "spec.hostUsers",
		"spec.securityContext.fsGroup", "spec.securityContext.fsGroupChangePolicy",
		"spec.securityContext.supplementalGroups",
		"spec.securityContext.supplementalGroupsPolicy", "spec.securityContext.sysctls",
		"spec.securityContext.seccompProfile", "spec.securityContext.appArmorProfile",
		"spec.securityContext.seLinuxOptions",
		"spec.hostAliases", "spec.setHostnameAsFQDN",
		// Pull secrets (issue 15): Secrets of the pod's namespace; an empty
		// name is ignored, as by the kubelet (credentials/).
		"spec.imagePullSecrets",
	}
	paths = append(paths, volumeFieldPaths()...)
	for _, list := range []string{"spec.containers[*].", "spec.initContainers[*]."} {
		for _, f := range containerFieldPaths() {
			paths = append(paths, list+f)
		}
	}
	return paths
}

// containerFieldPaths are the container fields skiff implements, relative
// to the container.
func containerFieldPaths() []string {
	fields := []string{
		"name", "image", "command", "args", "workingDir",
		"env[*].name", "env[*].value", "env[*].valueFrom.fieldRef",
		"env[*].valueFrom.resourceFieldRef", "env[*].valueFrom.configMapKeyRef",
		"env[*].valueFrom.secretKeyRef", "env[*].valueFrom.fileKeyRef", "envFrom",
		"ports", "resources.requests", "resources.limits", "resizePolicy",
		"imagePullPolicy", "terminationMessagePath", "terminationMessagePolicy",
		"securityContext.privileged", "securityContext.runAsUser",
		"securityContext.runAsGroup", "securityContext.runAsNonRoot",
		"livenessProbe", "readinessProbe", "startupProbe",
		"lifecycle.postStart", "lifecycle.preStop", "restartPolicy", "restartPolicyRules",
		"securityContext.capabilities", "securityContext.readOnlyRootFilesystem",
		"securityContext.allowPrivilegeEscalation", "securityContext.procMount",
		"securityContext.seccompProfile", "securityContext.appArmorProfile",
		"securityContext.seLinuxOptions",
	}
	return append(fields, volumeMountFieldPaths()...)
}

// fieldAllowList is the compiled form of supportedFieldPaths.
type fieldAllowList struct {
	leaves   map[string]bool // allowed with their whole subtree
	prefixes map[string]bool // strict ancestors of a leaf: walk into them
}

func newFieldAllowList(paths []string) fieldAllowList {
	a := fieldAllowList{leaves: map[string]bool{}, prefixes: map[string]bool{}}
	for _, p := range paths {
		a.leaves[p] = true
		for i := range len(p) {
			if p[i] == '.' || p[i] == '[' {
				a.prefixes[p[:i]] = true
			}
		}
	}
	return a
}

// validateSupportedFields returns a Forbidden error for every set field of
// pod outside supportedFieldPaths (and, for an API pod, the projected
// service account token's fields and ephemeral containers), in field
// declaration order.
func validateSupportedFields(pod *v1.Pod, apiPod bool) field.ErrorList {
	paths := supportedFieldPaths()
	if apiPod {
		paths = append(append(paths, serviceAccountTokenPaths()...), ephemeralContainerPaths()...)
	}
	a := newFieldAllowList(paths)
	return a.walkStruct(reflect.ValueOf(pod).Elem(), nil, "")
}

// walkStruct checks the fields of struct value v found at path (real, with
// indexes) and pattern (with [*]).
func (a fieldAllowList) walkStruct(v reflect.Value, path *field.Path, pattern string) field.ErrorList {
	var errs field.ErrorList
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		name, inline := jsonName(sf)
		if name == "-" || !sf.IsExported() {
			continue
		}
		fv := v.Field(i)
		if inline {
			if fv.Kind() == reflect.Struct {
				errs = append(errs, a.walkStruct(fv, path, pattern)...)
			}
			continue
		}
		if !isSet(fv) {
			continue
		}
		errs = append(errs, a.checkField(fv, childPath(path, name), joinPattern(pattern, name))...)
	}
	return errs
}

// checkField checks one set field: allowed, walked into, or forbidden.
func (a fieldAllowList) checkField(fv reflect.Value, path *field.Path, pattern string) field.ErrorList {
	if a.leaves[pattern] {
		return nil
	}
	if !a.prefixes[pattern] {
		return field.ErrorList{field.Forbidden(path, notSupported)}
	}
	fv = deref(fv)
	switch fv.Kind() {
	case reflect.Struct:
		return a.walkStruct(fv, path, pattern)
	case reflect.Slice:
		var errs field.ErrorList
		for i := range fv.Len() {
			if elem := deref(fv.Index(i)); elem.Kind() == reflect.Struct {
				errs = append(errs, a.walkStruct(elem, path.Index(i), pattern+"[*]")...)
			} else if isSet(elem) {
				errs = append(errs, field.Forbidden(path.Index(i), notSupported))
			}
		}
		return errs
	default:
		return field.ErrorList{field.Forbidden(path, notSupported)}
	}
}

// isSet reports whether a field carries information: a non-nil pointer to a
// non-struct (so "hostPID: false" via *bool counts), a pointer to or a struct
// with any set field (so "lifecycle: {}" does not), a non-empty list or map,
// or a non-zero scalar.
func isSet(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return false
		}
		if e := v.Elem(); e.Kind() == reflect.Struct {
			return isSet(e)
		}
		return true
	case reflect.Struct:
		for i := range v.NumField() {
			if isSet(v.Field(i)) {
				return true
			}
		}
		return false
	case reflect.Slice, reflect.Map:
		return v.Len() > 0
	default:
		return !v.IsZero()
	}
}

func deref(v reflect.Value) reflect.Value {
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	return v
}

// jsonName returns a field's JSON name and whether it is inlined.
func jsonName(sf reflect.StructField) (name string, inline bool) {
	tag := sf.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" && (sf.Anonymous || strings.Contains(opts, "inline")) {
		return "", true
	}
	if name == "" {
		name = sf.Name
	}
	return name, false
}

func childPath(p *field.Path, name string) *field.Path {
	if p == nil {
		return field.NewPath(name)
	}
	return p.Child(name)
}

func joinPattern(pattern, name string) string {
	if pattern == "" {
		return name
	}
	return pattern + "." + name
}
