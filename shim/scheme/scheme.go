// Package scheme is the shim's runtime.Scheme: the k8s.io/api types of the
// served groups, registered twice, as their external version and as the
// internal version (runtime.APIVersionInternal). The generic apiserver
// converts every request to the internal ("hub") version and back; with one
// Go type for both, each of those conversions is an identity, so the shim
// needs no internal API packages (those live only in k8s.io/kubernetes).
package scheme

import (
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

var (
	// Scheme holds every served kind, external and internal.
	Scheme = runtime.NewScheme()
	// Codecs serializes Scheme's kinds (JSON, YAML, protobuf).
	Codecs = serializer.NewCodecFactory(Scheme)
	// ParameterCodec decodes query parameters into options structs.
	ParameterCodec = runtime.NewParameterCodec(Scheme)
)

// groups are the served external versions with the function that registers
// them, in version priority order, and the one that registers their
// internal kinds (nil: addInternal's identity twins).
var groups = []struct {
	gv       schema.GroupVersion
	add      func(*runtime.Scheme) error
	internal func(*runtime.Scheme, schema.GroupVersion) error
}{
	{corev1.SchemeGroupVersion, corev1.AddToScheme, nil},
	{coordinationv1.SchemeGroupVersion, coordinationv1.AddToScheme, nil},
	{appsv1.SchemeGroupVersion, appsv1.AddToScheme, nil},
	// Only for the Scale kind of the deployments' and replicasets' scale
	// subresources; no autoscaling resource is served.
	{autoscalingv1.SchemeGroupVersion, autoscalingv1.AddToScheme, nil},
	// Jobs and CronJobs, served when a skiff-apiserver build adds their kinds
	// (server.Options.Kinds).
	{batchv1.SchemeGroupVersion, batchv1.AddToScheme, nil},
	// EndpointSlices, served with Services by skiff-apiserver's build.
	{discoveryv1.SchemeGroupVersion, discoveryv1.AddToScheme, nil},
	// Roles and bindings, stored and served by skiff-apiserver's build.
	{rbacv1.SchemeGroupVersion, rbacv1.AddToScheme, nil},
	// PodDisruptionBudgets, served by skiff-apiserver's build.
	{policyv1.SchemeGroupVersion, policyv1.AddToScheme, nil},
	// StorageClasses, served by skiff-apiserver's build.
	{storagev1.SchemeGroupVersion, storagev1.AddToScheme, nil},
	// events.k8s.io/v1 Events are core/v1 Events inside (events.go).
	{eventsv1.SchemeGroupVersion, eventsv1.AddToScheme, addEventsInternal},
	// TokenRequest (serviceaccounts/token), TokenReview and SelfSubjectReview.
	{authenticationv1.SchemeGroupVersion, authenticationv1.AddToScheme, nil},
	// SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview.
	{authorizationv1.SchemeGroupVersion, authorizationv1.AddToScheme, nil},
}

func init() {
	utilruntime.Must(AddToScheme(Scheme))
}

// AddToScheme registers the served groups, their internal twins, defaults
// and field label conversions in s.
func AddToScheme(s *runtime.Scheme) error {
	// The generic server wants the meta options in the empty group's v1,
	// and the discovery types unversioned (as k8s.io/sample-apiserver).
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	s.AddUnversionedTypes(schema.GroupVersion{Version: "v1"},
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{},
		&metav1.APIGroup{}, &metav1.APIResourceList{})
	for _, g := range groups {
		if err := g.add(s); err != nil {
			return fmt.Errorf("register %s: %w", g.gv, err)
		}
		internal := g.internal
		if internal == nil {
			internal = addInternal
		}
		if err := internal(s, g.gv); err != nil {
			return err
		}
		if err := s.SetVersionPriority(g.gv); err != nil {
			return err
		}
	}
	if err := addDefaults(s); err != nil {
		return err
	}
	if err := addQueryConversions(s); err != nil {
		return fmt.Errorf("query parameter conversions: %w", err)
	}
	if err := addEventsFieldLabelConversion(s); err != nil {
		return fmt.Errorf("events.k8s.io field labels: %w", err)
	}
	return addFieldLabelConversions(s)
}

// addInternal registers the kinds of gv that its own API package defines
// (not the meta types such as ListOptions that AddToGroupVersion put there)
// under gv's internal version, with identity conversions between the two.
func addInternal(s *runtime.Scheme, gv schema.GroupVersion) error {
	internal := schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}
	for kind, t := range s.KnownTypes(gv) {
		if t.PkgPath() == reflect.TypeOf(metav1.Status{}).PkgPath() {
			continue
		}
		obj, ok := reflect.New(t).Interface().(runtime.Object)
		if !ok {
			continue
		}
		s.AddKnownTypeWithName(internal.WithKind(kind), obj)
		if err := s.AddConversionFunc(obj, obj, identity); err != nil {
			return fmt.Errorf("identity conversion of %s: %w", kind, err)
		}
	}
	return nil
}

// identity converts an object into another of the same Go type: a deep copy.
// runtime.Scheme needs it where it converts into a caller's object
// (versioning decoders with a non-nil "into") instead of returning its input.
func identity(in, out any, _ conversion.Scope) error {
	src, ok := in.(runtime.Object)
	if !ok {
		return fmt.Errorf("identity conversion of non-object %T", in)
	}
	reflect.ValueOf(out).Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
	return nil
}

// External returns a scheme of the served external versions only, for
// naming OpenAPI definitions: with the internal twins the definitions'
// x-kubernetes-group-version-kind would list "__internal" versions too.
func External() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	for _, g := range groups {
		utilruntime.Must(g.add(s))
	}
	return s
}
