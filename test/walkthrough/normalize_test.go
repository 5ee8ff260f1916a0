package walkthrough

import "testing"

func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"NAME    DATA   AGE\nmymap   0      5s\n", "NAME    DATA   AGE\nmymap   0      <age>"},
		{"x   1m30s   y", "x   <age>   y"},
		{"uid: 0b5e1a4c-8a7b-4c1e-9d3f-2a1b3c4d5e6f", "uid: <uid>"},
		{`creationTimestamp: "2026-11-25T03:40:01Z"`, `creationTimestamp: "<time>"`},
		{`resourceVersion: "4711"`, `resourceVersion: "<rv>"`},
		{`"resourceVersion":"4711"`, `"resourceVersion":"<rv>"`},
		{"name: nginx-5869d7778c-abc12", "name: nginx-5869d7778c-<rand>"},
		{"pod/nginx-5869d7778c-abc12", "pod/nginx-5869d7778c-<rand>"},
		{`pod "frontend-54jlb" force deleted`, `pod "frontend-<rand>" force deleted`},
		// Not ages: words and numbers without a unit.
		{"configmap/mymap created", "configmap/mymap created"},
		{"DATA 10", "DATA 10"},
	} {
		if got := normalize(tc.in); got != tc.want {
			t.Errorf("normalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
