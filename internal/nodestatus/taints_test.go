package nodestatus

import (
	"fmt"
	"strings"
	"testing"
)

// TestParseTaints_H1: --register-with-taints with the kubelet's grammar
// and messages.
func TestParseTaints_H1(t *testing.T) {
	tests := []struct {
		spec, want, err string
	}{
		{"", "[]", ""},
		{"os=windows:NoSchedule", "[os=windows:NoSchedule]", ""},
		{"dedicated:NoExecute,example.com/gpu=yes:PreferNoSchedule", "[dedicated:NoExecute example.com/gpu=yes:PreferNoSchedule]", ""},
		{"os=windows", "", "invalid taint spec: os=windows"},
		{"os=windows:Sometimes", "", "invalid taint effect: Sometimes, unsupported taint effect"},
		{"a=b=c:NoSchedule", "", "invalid taint spec: a=b=c:NoSchedule"},
		{"a:b:NoSchedule", "", "invalid taint spec: a:b:NoSchedule"},
		{"bad key!:NoSchedule", "", "invalid taint spec: bad key!:NoSchedule, name part must consist of"},
		{"k=bad value:NoSchedule", "", "invalid taint spec: k=bad value:NoSchedule, a valid label must be"},
		{"k=a:NoSchedule,k=b:NoSchedule", "", "duplicated taints with the same key and effect"},
		{"k:NoSchedule-", "", "a taint to remove cannot be registered"},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			taints, err := ParseTaints(tc.spec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("ParseTaints(%q) = %v, %v; want an error containing %q", tc.spec, taints, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tt := range taints {
				got = append(got, tt.ToString())
			}
			if s := fmt.Sprint("[", strings.Join(got, " "), "]"); s != tc.want {
				t.Errorf("ParseTaints(%q) = %s, want %s", tc.spec, s, tc.want)
			}
		})
	}
}
