package apps

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiffnode/skiff/podspec"
)

var specPath = field.NewPath("spec")

// validateDeploymentSpec is upstream's ValidateDeploymentSpec
// (pkg/apis/apps/validation/validation.go) without rollbackTo.
func validateDeploymentSpec(spec *appsv1.DeploymentSpec) field.ErrorList {
	errs := validateReplicas(spec.Replicas)
	errs = append(errs, validateSelectorAndTemplate(spec.Selector, &spec.Template)...)
	errs = append(errs, validateStrategy(&spec.Strategy, specPath.Child("strategy"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*spec.RevisionHistoryLimit), specPath.Child("revisionHistoryLimit"))...)
	}
	if p := spec.ProgressDeadlineSeconds; p != nil {
		path := specPath.Child("progressDeadlineSeconds")
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*p), path)...)
		if *p <= spec.MinReadySeconds {
			errs = append(errs, field.Invalid(path, *p, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

// validateReplicaSetSpec is upstream's ValidateReplicaSetSpec.
func validateReplicaSetSpec(spec *appsv1.ReplicaSetSpec) field.ErrorList {
	errs := validateReplicas(spec.Replicas)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	return append(errs, validateSelectorAndTemplate(spec.Selector, &spec.Template)...)
}

func validateReplicas(n *int32) field.ErrorList {
	if n == nil {
		return nil
	}
	return apivalidation.ValidateNonnegativeField(int64(*n), specPath.Child("replicas"))
}

// validateSelectorAndTemplate requires a non-empty valid selector that
// matches the template's labels, and a valid template (upstream's
// ValidatePodTemplateSpecForReplicaSet).
func validateSelectorAndTemplate(sel *metav1.LabelSelector, t *corev1.PodTemplateSpec) field.ErrorList {
	path := specPath.Child("selector")
	if sel == nil {
		return append(field.ErrorList{field.Required(path, "")}, validateTemplate(t)...)
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(path, sel, "empty selector is invalid for deployment"))
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return append(errs, field.Invalid(path, sel, "invalid label selector"))
	}
	if !selector.Empty() && !selector.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(specPath.Child("template", "metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	return append(errs, validateTemplate(t)...)
}

// validateTemplate validates the template's labels and annotations, its
// spec as a pod's (podspec.ValidateAPIPod), restartPolicy Always and no
// activeDeadlineSeconds (upstream's rules for ReplicaSet templates).
func validateTemplate(t *corev1.PodTemplateSpec) field.ErrorList {
	path := specPath.Child("template")
	errs := metav1validation.ValidateLabels(t.Labels, path.Child("metadata", "labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, path.Child("metadata", "annotations"))...)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "template", Namespace: "template"}, Spec: t.Spec}
	for _, e := range podspec.ValidateAPIPod(pod) {
		if !strings.HasPrefix(e.Field, "metadata") {
			e.Field = path.String() + "." + e.Field
			errs = append(errs, e)
		}
	}
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(path.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Invalid(path.Child("spec", "activeDeadlineSeconds"), t.Spec.ActiveDeadlineSeconds, "activeDeadlineSeconds in ReplicaSet is not Supported"))
	}
	return errs
}

// validateStrategy is upstream's ValidateDeploymentStrategy.
func validateStrategy(st *appsv1.DeploymentStrategy, path *field.Path) field.ErrorList {
	switch st.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if st.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(path.Child("rollingUpdate"), "may not be specified when strategy `type` is '"+string(st.Type)+"'")}
		}
		return nil
	case appsv1.RollingUpdateDeploymentStrategyType:
		if st.RollingUpdate == nil {
			return field.ErrorList{field.Required(path.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		return validateRollingUpdate(st.RollingUpdate, path.Child("rollingUpdate"))
	default:
		return field.ErrorList{field.NotSupported(path.Child("type"), st.Type,
			[]string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)})}
	}
}

// validateRollingUpdate is upstream's ValidateRollingUpdateDeployment.
func validateRollingUpdate(ru *appsv1.RollingUpdateDeployment, path *field.Path) field.ErrorList {
	unavail, surge := path.Child("maxUnavailable"), path.Child("maxSurge")
	errs := validateIntOrPercent(ru.MaxUnavailable, unavail)
	errs = append(errs, validateIntOrPercent(ru.MaxSurge, surge)...)
	if intOrPercentValue(ru.MaxUnavailable) == 0 && intOrPercentValue(ru.MaxSurge) == 0 {
		errs = append(errs, field.Invalid(unavail, ru.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
	}
	if v := ru.MaxUnavailable; v != nil && v.Type == intstr.String && intOrPercentValue(v) > 100 {
		errs = append(errs, field.Invalid(unavail, v, "must not be greater than 100%"))
	}
	return errs
}

// validateIntOrPercent is upstream's ValidatePositiveIntOrPercent.
func validateIntOrPercent(v *intstr.IntOrString, path *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	if v.Type == intstr.String {
		if _, ok := percent(v.StrVal); !ok {
			return field.ErrorList{field.Invalid(path, v, "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")}
		}
		return nil
	}
	return apivalidation.ValidateNonnegativeField(int64(v.IntVal), path)
}

func intOrPercentValue(v *intstr.IntOrString) int {
	if v == nil {
		return 0
	}
	if v.Type == intstr.Int {
		return int(v.IntVal)
	}
	n, _ := percent(v.StrVal)
	return n
}

// percent parses "[0-9]+%".
func percent(s string) (int, bool) {
	digits, ok := strings.CutSuffix(s, "%")
	if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}

// immutableSelector is apps/v1's rule: spec.selector may not change.
func immutableSelector(sel, old *metav1.LabelSelector) field.ErrorList {
	return apivalidation.ValidateImmutableField(sel, old, specPath.Child("selector"))
}
