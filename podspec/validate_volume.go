package podspec

import (
	"path"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// fileModeErrorMsg is upstream's message for a file mode out of range.
const fileModeErrorMsg = "must be a number between 0 and 0777 (octal), both inclusive"

// volumeFieldPaths are the volume fields skiff implements (added to
// supportedFieldPaths): every other volume type (ephemeral, nfs, ...) and
// projected source (serviceAccountToken, ...) is Forbidden with "not
// supported by skiff yet" by the allow-list walk. persistentVolumeClaim
// passes the walk: validateVolumeSource refuses it in static pods.
func volumeFieldPaths() []string {
	return []string{
		"spec.volumes[*].name", "spec.volumes[*].hostPath", "spec.volumes[*].emptyDir",
		"spec.volumes[*].configMap", "spec.volumes[*].secret", "spec.volumes[*].downwardAPI",
		"spec.volumes[*].persistentVolumeClaim",
		"spec.volumes[*].projected.defaultMode",
		"spec.volumes[*].projected.sources[*].configMap",
		"spec.volumes[*].projected.sources[*].secret",
		"spec.volumes[*].projected.sources[*].downwardAPI",
		"spec.volumes[*].image",
	}
}

// volumeMountFieldPaths are the volumeMount fields skiff implements
// (relative to a container).
func volumeMountFieldPaths() []string {
	return []string{
		"volumeMounts[*].name", "volumeMounts[*].mountPath", "volumeMounts[*].readOnly",
		"volumeMounts[*].subPath", "volumeMounts[*].subPathExpr", "volumeMounts[*].mountPropagation",
		"volumeMounts[*].recursiveReadOnly",
	}
}

// supportedDownwardAPIVolumeFieldRefs are the fieldRef paths a downwardAPI
// volume may show (upstream validVolumeDownwardAPIFieldPathExpressions).
var supportedDownwardAPIVolumeFieldRefs = []string{
	"metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations", "metadata.uid",
}

// supportedVolumeTypes are the JSON names of the volume sources skiff sets up.
var supportedVolumeTypes = map[string]bool{
	"hostPath": true, "emptyDir": true, "configMap": true, "secret": true, "downwardAPI": true, "projected": true,
	"image": true, "persistentVolumeClaim": true,
}

// staticClaimForbidden is the detail of the error for a static pod's
// persistentVolumeClaim volume: a claim is an API object the node reads
// through its API server, and upstream's NodeRestriction refuses the
// mirror pod of a static pod that references one.
const staticClaimForbidden = "a static pod may not use a PersistentVolumeClaim: only pods of an API server may"

// validateVolumes checks spec.volumes as the API server's ValidateVolumes
// does, plus skiff's limits (hostPath absolute, emptyDir media, claims
// only in API pods: apiPod as ValidateAPIPod), and returns the declared
// volumes by name for the mounts' checks.
func validateVolumes(vols []v1.Volume, p *field.Path, apiPod bool) (map[string]*v1.Volume, field.ErrorList) {
	var errs field.ErrorList
	byName := map[string]*v1.Volume{}
	for i := range vols {
		v := &vols[i]
		vp := p.Index(i)
		if v.Name == "" {
			errs = append(errs, field.Required(vp.Child("name"), ""))
		} else {
			errs = append(errs, invalidIf(validation.IsDNS1123Label(v.Name), vp.Child("name"), v.Name)...)
		}
		if _, dup := byName[v.Name]; dup && v.Name != "" {
			errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
		}
		byName[v.Name] = v
		errs = append(errs, validateVolumeSource(&v.VolumeSource, vp, apiPod)...)
	}
	return byName, errs
}

// validateVolumeSource requires exactly one source and checks it. The
// count covers every type, supported or not, as upstream's does.
func validateVolumeSource(src *v1.VolumeSource, p *field.Path, apiPod bool) field.ErrorList {
	var errs field.ErrorList
	n := 0
	one := func(set bool, name string) bool {
		if !set {
			return false
		}
		n++
		if n > 1 {
			errs = append(errs, field.Forbidden(p.Child(name), "may not specify more than 1 volume type"))
			return false
		}
		return true
	}
	if one(src.HostPath != nil, "hostPath") {
		errs = append(errs, validateHostPath(src.HostPath, p.Child("hostPath"))...)
	}
	if one(src.EmptyDir != nil, "emptyDir") {
		errs = append(errs, validateEmptyDir(src.EmptyDir, p.Child("emptyDir"))...)
	}
	if one(src.ConfigMap != nil, "configMap") {
		cp := p.Child("configMap")
		errs = append(errs, requiredName(src.ConfigMap.Name, cp.Child("name"))...)
		errs = append(errs, validateMode(src.ConfigMap.DefaultMode, cp.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(src.ConfigMap.Items, cp.Child("items"))...)
	}
	if one(src.Secret != nil, "secret") {
		sp := p.Child("secret")
		errs = append(errs, requiredName(src.Secret.SecretName, sp.Child("secretName"))...)
		errs = append(errs, validateMode(src.Secret.DefaultMode, sp.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(src.Secret.Items, sp.Child("items"))...)
	}
	if one(src.DownwardAPI != nil, "downwardAPI") {
		dp := p.Child("downwardAPI")
		errs = append(errs, validateMode(src.DownwardAPI.DefaultMode, dp.Child("defaultMode"))...)
		errs = append(errs, validateDownwardAPIFiles(src.DownwardAPI.Items, dp.Child("items"))...)
	}
	if one(src.Projected != nil, "projected") {
		errs = append(errs, validateProjected(src.Projected, p.Child("projected"))...)
	}
	if one(src.Image != nil, "image") {
		// The API server's validateImageVolumeSource.
		ip := p.Child("image")
		if src.Image.Reference == "" {
			errs = append(errs, field.Required(ip.Child("reference"), ""))
		}
		errs = append(errs, validateEnum(src.Image.PullPolicy, ip.Child("pullPolicy"), v1.PullAlways, v1.PullIfNotPresent, v1.PullNever)...)
	}
	if one(src.PersistentVolumeClaim != nil, "persistentVolumeClaim") {
		errs = append(errs, validateClaimSource(src.PersistentVolumeClaim, p.Child("persistentVolumeClaim"), apiPod)...)
	}
	unsupported, unsupportedErrs := unsupportedVolumeTypes(src, p)
	n += unsupported
	errs = append(errs, unsupportedErrs...)
	if n == 0 {
		errs = append(errs, field.Required(p, "must specify a volume type"))
	}
	return errs
}

// unsupportedVolumeTypes counts the volume types of src skiff does not
// set up, so that two of them are "more than 1": the allow-list walk
// reports those with content Forbidden, an empty one ("nfs: {}") is
// reported here.
func unsupportedVolumeTypes(src *v1.VolumeSource, p *field.Path) (int, field.ErrorList) {
	var errs field.ErrorList
	n := 0
	v := reflect.ValueOf(src).Elem()
	for i := range v.NumField() {
		name, _ := jsonName(v.Type().Field(i))
		f := v.Field(i)
		if supportedVolumeTypes[name] || f.Kind() != reflect.Pointer || f.IsNil() {
			continue
		}
		n++
		if !isSet(f) {
			errs = append(errs, field.Forbidden(p.Child(name), notSupported))
		}
	}
	return n, errs
}

// validateClaimSource: a claimName (upstream's Required, plus the DNS
// subdomain every PersistentVolumeClaim name is, as skiff checks the
// names of configMap and secret volumes), in an API pod only.
func validateClaimSource(claim *v1.PersistentVolumeClaimVolumeSource, p *field.Path, apiPod bool) field.ErrorList {
	if !apiPod {
		return field.ErrorList{field.Forbidden(p, staticClaimForbidden)}
	}
	return requiredName(claim.ClaimName, p.Child("claimName"))
}

func requiredName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return invalidIf(validation.IsDNS1123Subdomain(name), p, name)
}

// validateHostPath: a path (absolute: skiff has no working directory to
// resolve it against; upstream only forbids ".."), a known type.
func validateHostPath(hp *v1.HostPathVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case hp.Path == "":
		errs = append(errs, field.Required(p.Child("path"), ""))
	case !path.IsAbs(hp.Path):
		errs = append(errs, field.Invalid(p.Child("path"), hp.Path, "must be an absolute path"))
	}
	errs = append(errs, noBacksteps(hp.Path, p.Child("path"))...)
	if hp.Type != nil {
		types := []v1.HostPathType{v1.HostPathUnset, v1.HostPathDirectoryOrCreate, v1.HostPathDirectory,
			v1.HostPathFileOrCreate, v1.HostPathFile, v1.HostPathSocket, v1.HostPathCharDev, v1.HostPathBlockDev}
		ok := false
		for _, t := range types {
			ok = ok || *hp.Type == t
		}
		if !ok {
			errs = append(errs, field.NotSupported(p.Child("type"), *hp.Type, types))
		}
	}
	return errs
}

// validateEmptyDir: disk or Memory medium (huge pages are not supported),
// a non-negative sizeLimit.
func validateEmptyDir(ed *v1.EmptyDirVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch m := ed.Medium; {
	case m == v1.StorageMediumDefault, m == v1.StorageMediumMemory:
	case m == v1.StorageMediumHugePages, strings.HasPrefix(string(m), string(v1.StorageMediumHugePagesPrefix)):
		errs = append(errs, field.Forbidden(p.Child("medium"), notSupported))
	default:
		errs = append(errs, field.NotSupported(p.Child("medium"), m, []v1.StorageMedium{v1.StorageMediumDefault, v1.StorageMediumMemory}))
	}
	if ed.SizeLimit != nil && ed.SizeLimit.Cmp(resource.Quantity{}) < 0 {
		errs = append(errs, field.Forbidden(p.Child("sizeLimit"), "SizeLimit field must be a valid resource quantity"))
	}
	return errs
}

func validateMode(mode *int32, p *field.Path) field.ErrorList {
	if mode != nil && (*mode < 0 || *mode > 0o777) {
		return field.ErrorList{field.Invalid(p, *mode, fileModeErrorMsg)}
	}
	return nil
}

func validateKeyToPaths(items []v1.KeyToPath, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, it := range items {
		ip := p.Index(i)
		if it.Key == "" {
			errs = append(errs, field.Required(ip.Child("key"), ""))
		}
		errs = append(errs, validateLocalNonReservedPath(it.Path, ip.Child("path"))...)
		errs = append(errs, validateMode(it.Mode, ip.Child("mode"))...)
	}
	return errs
}

// validateLocalNonReservedPath is upstream's: required, relative, no "..",
// not starting with ".." (the atomic writer's names).
func validateLocalNonReservedPath(target string, p *field.Path) field.ErrorList {
	if target == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	errs := validateLocalDescendingPath(target, p)
	if len(target) >= 2 && strings.HasPrefix(target, "..") {
		errs = append(errs, field.Invalid(p, target, "must not start with '..'"))
	}
	return errs
}

// validateLocalDescendingPath: relative and without "..".
func validateLocalDescendingPath(target string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(p, target, "must be a relative path"))
	}
	return append(errs, noBacksteps(target, p)...)
}

func noBacksteps(target string, p *field.Path) field.ErrorList {
	for _, item := range strings.Split(target, "/") {
		if item == ".." {
			return field.ErrorList{field.Invalid(p, target, "must not contain '..'")}
		}
	}
	return nil
}

// validateDownwardAPIFiles checks downwardAPI items: a path, and exactly
// one of fieldRef (a supported path) and resourceFieldRef (with its
// container).
func validateDownwardAPIFiles(items []v1.DownwardAPIVolumeFile, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, it := range items {
		ip := p.Index(i)
		errs = append(errs, validateLocalNonReservedPath(it.Path, ip.Child("path"))...)
		errs = append(errs, validateMode(it.Mode, ip.Child("mode"))...)
		switch {
		case it.FieldRef != nil && it.ResourceFieldRef != nil:
			errs = append(errs, field.Invalid(ip, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		case it.FieldRef != nil:
			errs = append(errs, validateVolumeFieldRef(it.FieldRef, ip.Child("fieldRef"))...)
		case it.ResourceFieldRef != nil:
			rp := ip.Child("resourceFieldRef")
			if it.ResourceFieldRef.ContainerName == "" {
				errs = append(errs, field.Required(rp.Child("containerName"), ""))
			}
			errs = append(errs, validateResourceFieldRefName(it.ResourceFieldRef.Resource, rp.Child("resource"))...)
		default:
			errs = append(errs, field.Required(ip, "one of fieldRef and resourceFieldRef is required"))
		}
	}
	return errs
}

func validateVolumeFieldRef(ref *v1.ObjectFieldSelector, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.APIVersion != "" && ref.APIVersion != "v1" {
		errs = append(errs, field.Invalid(p.Child("apiVersion"), ref.APIVersion, "unsupported API version"))
	}
	fp := ref.FieldPath
	for _, prefix := range []string{"metadata.labels", "metadata.annotations"} {
		if key, ok := strings.CutPrefix(fp, prefix+"['"); ok && strings.HasSuffix(key, "']") {
			return errs
		}
	}
	for _, ok := range supportedDownwardAPIVolumeFieldRefs {
		if fp == ok {
			return errs
		}
	}
	if fp == "" {
		return append(errs, field.Required(p.Child("fieldPath"), ""))
	}
	return append(errs, field.NotSupported(p.Child("fieldPath"), fp, supportedDownwardAPIVolumeFieldRefs))
}

// validateResourceFieldRefName accepts the container resources a
// resourceFieldRef may name (upstream validContainerResourceFieldPath...).
func validateResourceFieldRefName(res string, p *field.Path) field.ErrorList {
	allowed := []string{"limits.cpu", "limits.memory", "limits.ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage"}
	for _, a := range allowed {
		if res == a {
			return nil
		}
	}
	if strings.HasPrefix(res, "limits.hugepages-") || strings.HasPrefix(res, "requests.hugepages-") {
		return nil
	}
	if res == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return field.ErrorList{field.NotSupported(p, res, allowed)}
}

// validateProjected checks a projected volume: one source type per entry
// (supported ones are checked; the walk forbids the rest), no path twice.
func validateProjected(pr *v1.ProjectedVolumeSource, p *field.Path) field.ErrorList {
	errs := validateMode(pr.DefaultMode, p.Child("defaultMode"))
	paths := map[string]bool{}
	addPath := func(target string, fp *field.Path) {
		if paths[target] {
			errs = append(errs, field.Invalid(fp, target, "conflicting duplicate paths"))
		}
		paths[target] = true
	}
	for i, s := range pr.Sources {
		sp := p.Child("sources").Index(i)
		n := 0
		for _, set := range []bool{s.ConfigMap != nil, s.Secret != nil, s.DownwardAPI != nil,
			s.ServiceAccountToken != nil, s.ClusterTrustBundle != nil, s.PodCertificate != nil} {
			if set {
				n++
			}
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type per source"))
		}
		switch {
		case s.ConfigMap != nil:
			errs = append(errs, requiredName(s.ConfigMap.Name, sp.Child("configMap", "name"))...)
			errs = append(errs, validateKeyToPaths(s.ConfigMap.Items, sp.Child("configMap", "items"))...)
			for j, it := range s.ConfigMap.Items {
				addPath(it.Path, sp.Child("configMap", "items").Index(j).Child("path"))
			}
		case s.Secret != nil:
			errs = append(errs, requiredName(s.Secret.Name, sp.Child("secret", "name"))...)
			errs = append(errs, validateKeyToPaths(s.Secret.Items, sp.Child("secret", "items"))...)
			for j, it := range s.Secret.Items {
				addPath(it.Path, sp.Child("secret", "items").Index(j).Child("path"))
			}
		case s.DownwardAPI != nil:
			errs = append(errs, validateDownwardAPIFiles(s.DownwardAPI.Items, sp.Child("downwardAPI", "items"))...)
			for j, it := range s.DownwardAPI.Items {
				addPath(it.Path, sp.Child("downwardAPI", "items").Index(j).Child("path"))
			}
		}
	}
	return errs
}

// validateVolumeMounts checks a container's volumeMounts as upstream's
// ValidateVolumeMounts does: a declared volume, a unique absolute
// mountPath, subPath/subPathExpr relative without ".." and not both, and
// a propagation mode (Bidirectional only for privileged containers).
func validateVolumeMounts(c *v1.Container, vols map[string]*v1.Volume, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	for i, m := range c.VolumeMounts {
		mp := p.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(mp.Child("name"), ""))
		} else if _, ok := vols[m.Name]; !ok {
			errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
		}
		switch {
		case m.MountPath == "":
			errs = append(errs, field.Required(mp.Child("mountPath"), ""))
		case !path.IsAbs(m.MountPath):
			errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must be an absolute path"))
		case seen[path.Clean(m.MountPath)]:
			errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must be unique"))
		}
		seen[path.Clean(m.MountPath)] = true
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, mp.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(mp.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, validateLocalDescendingPath(m.SubPathExpr, mp.Child("subPathExpr"))...)
		}
		if mode := m.MountPropagation; mode != nil {
			modes := []v1.MountPropagationMode{v1.MountPropagationNone, v1.MountPropagationHostToContainer, v1.MountPropagationBidirectional}
			switch *mode {
			case v1.MountPropagationNone, v1.MountPropagationHostToContainer:
			case v1.MountPropagationBidirectional:
				if !privileged {
					errs = append(errs, field.Forbidden(mp.Child("mountPropagation"), "Bidirectional mount propagation is available only to privileged containers"))
				}
			default:
				errs = append(errs, field.NotSupported(mp.Child("mountPropagation"), *mode, modes))
			}
		}
		errs = append(errs, validateRecursiveReadOnly(&m, mp.Child("recursiveReadOnly"))...)
	}
	return errs
}

// validateRecursiveReadOnly is the API server's validateMountRecursiveReadOnly.
func validateRecursiveReadOnly(m *v1.VolumeMount, p *field.Path) field.ErrorList {
	if m.RecursiveReadOnly == nil {
		return nil
	}
	switch *m.RecursiveReadOnly {
	case v1.RecursiveReadOnlyDisabled:
		return nil
	case v1.RecursiveReadOnlyIfPossible, v1.RecursiveReadOnlyEnabled:
		var errs field.ErrorList
		if !m.ReadOnly {
			errs = append(errs, field.Forbidden(p, "may only be specified when readOnly is true"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != v1.MountPropagationNone {
			errs = append(errs, field.Forbidden(p, "may only be specified when mountPropagation is None or not specified"))
		}
		return errs
	}
	return field.ErrorList{field.NotSupported(p, *m.RecursiveReadOnly,
		[]v1.RecursiveReadOnlyMode{v1.RecursiveReadOnlyDisabled, v1.RecursiveReadOnlyEnabled, v1.RecursiveReadOnlyIfPossible})}
}

// validatePodVolumes checks spec.volumes and every container's mounts;
// apiPod as ValidateAPIPod.
func validatePodVolumes(spec *v1.PodSpec, p *field.Path, apiPod bool) field.ErrorList {
	vols, errs := validateVolumes(spec.Volumes, p.Child("volumes"), apiPod)
	for _, list := range []struct {
		name string
		cs   []v1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for i := range list.cs {
			errs = append(errs, validateVolumeMounts(&list.cs[i], vols, p.Child(list.name).Index(i).Child("volumeMounts"))...)
		}
	}
	return errs
}
