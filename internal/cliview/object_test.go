package cliview

import (
	"bytes"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPrintObject(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"b": "2", "a": "<1>"}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "nginx", Image: "nginx"}}},
	}
	tests := []struct {
		name   string
		obj    any
		format string
		want   string
	}{
		{name: "json pod: sorted keys, 4 spaces, type filled in", obj: pod, format: "json", want: `{
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "labels": {
            "a": "<1>",
            "b": "2"
        },
        "name": "web",
        "namespace": "default"
    },
    "spec": {
        "containers": [
            {
                "image": "nginx",
                "name": "nginx",
                "resources": {}
            }
        ]
    },
    "status": {}
}
`},
		{name: "yaml pod", obj: *pod, format: "yaml", want: `apiVersion: v1
kind: Pod
metadata:
  labels:
    a: <1>
    b: "2"
  name: web
  namespace: default
spec:
  containers:
  - image: nginx
    name: nginx
    resources: {}
status: {}
`},
		{name: "yaml pod list", obj: &v1.PodList{Items: []v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}}, format: "yaml",
			want: `apiVersion: v1
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: a
  spec:
    containers: null
  status: {}
kind: PodList
metadata: {}
`},
		{name: "other objects as they are", obj: map[string]int{"z": 1, "a": 12345678901234567}, format: "json",
			want: "{\n    \"a\": 12345678901234567,\n    \"z\": 1\n}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := PrintObject(&buf, tt.obj, tt.format); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tt.want {
				t.Errorf("PrintObject =\n%s\nwant\n%s", buf.String(), tt.want)
			}
		})
	}
	if pod.Kind != "" {
		t.Error("PrintObject modified the pod it was given")
	}
}

func TestPrintObjectUnknownFormat(t *testing.T) {
	err := PrintObject(&bytes.Buffer{}, &v1.Pod{}, "wide")
	if err == nil || !strings.Contains(err.Error(), `"wide"`) {
		t.Errorf("PrintObject(format wide) = %v, want an error naming the format", err)
	}
}
