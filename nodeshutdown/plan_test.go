package nodeshutdown

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func pod(name string, prio *int32, grace *int64) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Priority: prio, TerminationGracePeriodSeconds: grace},
	}
}

func i32(v int32) *int32 { return &v }
func i64(v int64) *int64 { return &v }

// render is "prio:budget[name=grace ...]" per group.
func render(gs []Group) string {
	var parts []string
	for _, g := range gs {
		var ks []string
		for _, k := range g.Kills {
			ks = append(ks, fmt.Sprintf("%s=%d", k.Pod.Name, k.GracePeriodSeconds))
		}
		parts = append(parts, fmt.Sprintf("%d:%v[%s]", g.Priority, g.Budget, strings.Join(ks, " ")))
	}
	return strings.Join(parts, " ")
}

func TestPeriods_H18_H20(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		want []PriorityGracePeriod
	}{
		{"H.18 off by default", Config{}, nil},
		{"H.18 30s/10s: 20s regular, 10s critical", Config{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second},
			[]PriorityGracePeriod{{0, 20}, {SystemCriticalPriority, 10}}},
		{"H.18 no critical period", Config{GracePeriod: 30 * time.Second}, []PriorityGracePeriod{{0, 30}, {SystemCriticalPriority, 0}}},
		{"H.18 critical above total: off", Config{GracePeriod: 10 * time.Second, GracePeriodCriticalPods: 20 * time.Second}, nil},
		{"H.20 by priority, sorted low to high", Config{ByPodPriority: []PriorityGracePeriod{{100000, 10}, {0, 60}, {1000, 120}, {10000, 180}}},
			[]PriorityGracePeriod{{0, 60}, {1000, 120}, {10000, 180}, {100000, 10}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Periods(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Periods() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTotal_H18(t *testing.T) {
	c := Config{ByPodPriority: []PriorityGracePeriod{{100000, 10}, {10000, 180}, {1000, 120}, {0, 60}}}
	if got := c.Total(); got != 370*time.Second {
		t.Errorf("Total() = %v, want 370s", got)
	}
	if got := (Config{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second}).Total(); got != 30*time.Second {
		t.Errorf("Total() = %v, want 30s", got)
	}
}

func TestValidate_H18_H20(t *testing.T) {
	tests := []struct {
		name    string
		c       Config
		wantErr string
	}{
		{"off", Config{}, ""},
		{"two-phase", Config{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second}, ""},
		{"critical above total", Config{GracePeriod: 10 * time.Second, GracePeriodCriticalPods: 20 * time.Second}, "shutdownGracePeriodCriticalPods 20s must be <= shutdownGracePeriod 10s"},
		{"negative", Config{GracePeriod: -time.Second}, "shutdownGracePeriod -1s must be >= 0"},
		{"both forms", Config{GracePeriod: 30 * time.Second, ByPodPriority: []PriorityGracePeriod{{0, 10}}}, "cannot specify both"},
		{"negative group", Config{ByPodPriority: []PriorityGracePeriod{{0, -1}}}, "shutdownGracePeriodByPodPriority[0].shutdownGracePeriodSeconds -1"},
		{"duplicate priority", Config{ByPodPriority: []PriorityGracePeriod{{0, 1}, {0, 2}}}, "shutdownGracePeriodByPodPriority[1].priority 0 is given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestPlan_H18_H19_H20(t *testing.T) {
	twoPhase := Config{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second}.Periods()
	// The seeds' example (S001 2.1 › Pod Priority based graceful node shutdown).
	byPrio := Config{ByPodPriority: []PriorityGracePeriod{{100000, 300}, {1000, 120}, {0, 60}}}.Periods()
	tests := []struct {
		name    string
		periods []PriorityGracePeriod
		pods    []*v1.Pod
		want    string
	}{
		{"H.18 no config, no plan", nil, []*v1.Pod{pod("a", nil, nil)}, ""},
		{"H.18 regular first, then critical", twoPhase,
			[]*v1.Pod{pod("crit", i32(2000001000), i64(30)), pod("app", nil, i64(30))},
			"0:20s[app=20] 2000000000:10s[crit=10]"},
		{"H.19 system-cluster-critical is critical", twoPhase,
			[]*v1.Pod{pod("scc", i32(SystemCriticalPriority), i64(30)), pod("high", i32(SystemCriticalPriority-1), i64(30))},
			"0:20s[high=20] 2000000000:10s[scc=10]"},
		{"H.18 a shorter pod grace period is kept", twoPhase,
			[]*v1.Pod{pod("quick", nil, i64(5)), pod("nograce", nil, nil)},
			"0:20s[quick=5 nograce=20]"},
		{"H.20 bucket of the highest priority not above the pod's", byPrio,
			[]*v1.Pod{pod("b", i32(10000), nil), pod("top", i32(200000), nil), pod("c", i32(100000), nil), pod("zero", i32(0), nil)},
			"0:1m0s[zero=60] 1000:2m0s[b=120] 100000:5m0s[top=300 c=300]"},
		{"H.20 below the lowest goes to the lowest", byPrio,
			[]*v1.Pod{pod("neg", i32(-5), nil)},
			"0:1m0s[neg=60]"},
		{"H.20 empty ranges are skipped", byPrio,
			[]*v1.Pod{pod("c", i32(100000), nil)},
			"100000:5m0s[c=300]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(Plan(tt.periods, tt.pods)); got != tt.want {
				t.Errorf("Plan() = %q\nwant     %q", got, tt.want)
			}
		})
	}
}
