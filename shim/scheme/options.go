package scheme

import (
	"net/url"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
)

// addQueryConversions registers the query parameter decoders of the pod
// subresources' options (pods/log, exec, attach, portforward, proxy;
// services/proxy): the
// ParameterCodec converts a url.Values into them. Upstream's are generated
// (Convert_url_Values_To_v1_PodLogOptions and its siblings in
// k8s.io/kubernetes/pkg/apis/core/v1/zz_generated.conversion.go, from the
// types' +k8s:conversion-gen:explicit-from=net/url.Values); these read the
// same parameters with the same helpers. A parameter given twice takes its
// first value, as there.
func addQueryConversions(s *runtime.Scheme) error {
	for _, c := range []struct {
		out runtime.Object
		fn  conversion.ConversionFunc
	}{
		{&corev1.PodLogOptions{}, func(in, out any, sc conversion.Scope) error {
			return convertPodLogOptions(*in.(*url.Values), out.(*corev1.PodLogOptions), sc)
		}},
		{&corev1.PodExecOptions{}, func(in, out any, sc conversion.Scope) error {
			return convertPodExecOptions(*in.(*url.Values), out.(*corev1.PodExecOptions), sc)
		}},
		{&corev1.PodAttachOptions{}, func(in, out any, sc conversion.Scope) error {
			return convertPodAttachOptions(*in.(*url.Values), out.(*corev1.PodAttachOptions), sc)
		}},
		{&corev1.PodProxyOptions{}, func(in, out any, _ conversion.Scope) error {
			out.(*corev1.PodProxyOptions).Path = in.(*url.Values).Get("path")
			return nil
		}},
		{&corev1.ServiceProxyOptions{}, func(in, out any, _ conversion.Scope) error {
			out.(*corev1.ServiceProxyOptions).Path = in.(*url.Values).Get("path")
			return nil
		}},
		{&corev1.PodPortForwardOptions{}, func(in, out any, _ conversion.Scope) error {
			o := out.(*corev1.PodPortForwardOptions)
			o.Ports = nil
			return metav1.Convert_Slice_string_To_Slice_int32(valuesOf(*in.(*url.Values), "ports"), &o.Ports, nil)
		}},
	} {
		if err := s.AddConversionFunc((*url.Values)(nil), c.out, c.fn); err != nil {
			return err
		}
	}
	return nil
}

// valuesOf returns a pointer to the values of key (nil slice when absent).
func valuesOf(v url.Values, key string) *[]string {
	vals := v[key]
	return &vals
}

// has reports whether key has a value.
func has(v url.Values, key string) bool { return len(v[key]) > 0 }

func convertPodLogOptions(in url.Values, out *corev1.PodLogOptions, s conversion.Scope) error {
	*out = corev1.PodLogOptions{TypeMeta: out.TypeMeta}
	out.Container = in.Get("container")
	for key, dst := range map[string]*bool{"follow": &out.Follow, "previous": &out.Previous, "timestamps": &out.Timestamps,
		"insecureSkipTLSVerifyBackend": &out.InsecureSkipTLSVerifyBackend} {
		if has(in, key) {
			if err := runtime.Convert_Slice_string_To_bool(valuesOf(in, key), dst, s); err != nil {
				return err
			}
		}
	}
	for key, dst := range map[string]**int64{"sinceSeconds": &out.SinceSeconds, "tailLines": &out.TailLines, "limitBytes": &out.LimitBytes} {
		if has(in, key) {
			if err := runtime.Convert_Slice_string_To_Pointer_int64(valuesOf(in, key), dst, s); err != nil {
				return err
			}
		}
	}
	if has(in, "sinceTime") {
		if err := metav1.Convert_Slice_string_To_Pointer_v1_Time(valuesOf(in, "sinceTime"), &out.SinceTime, s); err != nil {
			return err
		}
	}
	if has(in, "stream") {
		stream := in.Get("stream")
		out.Stream = &stream
	}
	return nil
}

// streamFlags reads the stdin, stdout, stderr and tty parameters.
func streamFlags(in url.Values, stdin, stdout, stderr, tty *bool, s conversion.Scope) error {
	for key, dst := range map[string]*bool{"stdin": stdin, "stdout": stdout, "stderr": stderr, "tty": tty} {
		*dst = false
		if has(in, key) {
			if err := runtime.Convert_Slice_string_To_bool(valuesOf(in, key), dst, s); err != nil {
				return err
			}
		}
	}
	return nil
}

func convertPodExecOptions(in url.Values, out *corev1.PodExecOptions, s conversion.Scope) error {
	*out = corev1.PodExecOptions{TypeMeta: out.TypeMeta, Container: in.Get("container"), Command: in["command"]}
	return streamFlags(in, &out.Stdin, &out.Stdout, &out.Stderr, &out.TTY, s)
}

func convertPodAttachOptions(in url.Values, out *corev1.PodAttachOptions, s conversion.Scope) error {
	*out = corev1.PodAttachOptions{TypeMeta: out.TypeMeta, Container: in.Get("container")}
	return streamFlags(in, &out.Stdin, &out.Stdout, &out.Stderr, &out.TTY, s)
}
