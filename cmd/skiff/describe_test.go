package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podEvent is an event about a container of pod.
func podEvent(pod *v1.Pod, container, typ, reason, msg string, age time.Duration) v1.Event {
	ts := metav1.NewTime(time.Now().Add(-age))
	return v1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name + "." + reason, Namespace: pod.Namespace},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, FieldPath: "spec.containers{" + container + "}"},
		Type: typ, Reason: reason, Message: msg, Count: 1, FirstTimestamp: ts, LastTimestamp: ts,
		Source: v1.EventSource{Component: "skiff", Host: "node-1"},
	}
}

// eventAgent has the pods web-1, web-2 and db-1 (kube-system) with events.
func eventAgent() *fakeAgent {
	web1, web2, db := runningPod("web-1", "app"), runningPod("web-2", "app"), runningPod("db-1", "db")
	db.Namespace = "kube-system"
	stale := podEvent(web1, "app", v1.EventTypeNormal, "Killing", "from an earlier pod with the same name", time.Hour)
	stale.InvolvedObject.UID = "old-uid"
	return &fakeAgent{
		pods: []*v1.Pod{web1, web2, db},
		events: []v1.Event{
			stale,
			podEvent(web1, "app", v1.EventTypeNormal, "Started", "Started container app", time.Minute),
			podEvent(web2, "app", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container app", 30*time.Second),
			podEvent(db, "db", v1.EventTypeNormal, "Pulled", "Container image already present", 2*time.Minute),
			podEvent(web1, "app", v1.EventTypeNormal, "Pulled", "Container image \"busybox\" already present on machine", 2*time.Minute),
		},
	}
}

func TestDescribePod_A54(t *testing.T) {
	for _, tt := range []struct {
		name      string
		args      []string
		wantPods  []string
		wantEvent []string // reasons in the order shown
	}{
		{"exact name", []string{"describe", "pod", "web-1"}, []string{"web-1"}, []string{"Pulled", "Started"}},
		{"pods and type/name", []string{"describe", "pods/web-2"}, []string{"web-2"}, []string{"BackOff"}},
		{"prefix", []string{"describe", "pods", "web"}, []string{"web-1", "web-2"}, []string{"Pulled", "Started", "BackOff"}},
		{"all in namespace", []string{"describe", "po", "-n", "kube-system"}, []string{"db-1"}, []string{"Pulled"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := runSkiff(t, eventAgent(), tt.args...)
			if err != nil {
				t.Fatalf("%v (stderr %q)", err, stderr)
			}
			names := regexp.MustCompile(`(?m)^Name:\s+(\S+)$`).FindAllStringSubmatch(stdout, -1)
			var got []string
			for _, m := range names {
				got = append(got, m[1])
			}
			if strings.Join(got, ",") != strings.Join(tt.wantPods, ",") {
				t.Errorf("described pods %v, want %v\n%s", got, tt.wantPods, stdout)
			}
			reasons := regexp.MustCompile(`(?m)^  (?:Normal|Warning)\s+(\S+)\s`).FindAllStringSubmatch(stdout, -1)
			got = nil
			for _, m := range reasons {
				got = append(got, m[1])
			}
			if strings.Join(got, ",") != strings.Join(tt.wantEvent, ",") {
				t.Errorf("events %v, want %v (the stale one of an earlier pod left out)\n%s", got, tt.wantEvent, stdout)
			}
			if len(tt.wantPods) > 1 && !strings.Contains(stdout, "\n\n\nName:") {
				t.Errorf("pods not separated by two blank lines:\n%s", stdout)
			}
		})
	}
}

func TestDescribeErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown pod", []string{"describe", "pod", "nope"}, `pods "nope" not found in namespace "default"`},
		{"empty namespace", []string{"describe", "pods", "-n", "empty"}, `no pods found in namespace "empty"`},
		{"other kind", []string{"describe", "deployment", "web"}, `the server doesn't have a resource type "deployment"`},
		{"type twice", []string{"describe", "pod", "pod/web-1"}, ""},
		{"type/name plus name", []string{"describe", "pod/web-1", "web-2"}, "there is no need to specify a resource type as a separate argument"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runSkiff(t, eventAgent(), tt.args...)
			if tt.want == "" {
				if err == nil {
					t.Error("no error")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestEventsCommand_A54(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		want    []string // reasons in the order shown
		columns string
	}{
		{"default namespace, oldest first", []string{"events"}, []string{"Killing", "Pulled", "Started", "BackOff"}, "LAST SEEN TYPE REASON OBJECT MESSAGE"},
		{"for a pod", []string{"events", "--for", "pod/web-2"}, []string{"BackOff"}, "LAST SEEN TYPE REASON OBJECT MESSAGE"},
		{"types", []string{"events", "--types", "warning"}, []string{"BackOff"}, "LAST SEEN TYPE REASON OBJECT MESSAGE"},
		{"all namespaces", []string{"events", "-A"}, []string{"Killing", "Pulled", "Pulled", "Started", "BackOff"}, "NAMESPACE LAST SEEN TYPE REASON OBJECT MESSAGE"},
		{"wide", []string{"events", "-o", "wide", "-n", "kube-system"}, []string{"Pulled"}, "LAST SEEN TYPE REASON OBJECT SUBOBJECT SOURCE MESSAGE FIRST SEEN COUNT NAME"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := runSkiff(t, eventAgent(), tt.args...)
			if err != nil {
				t.Fatalf("%v (stderr %q)", err, stderr)
			}
			lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			if got := strings.Join(strings.Fields(lines[0]), " "); got != tt.columns {
				t.Errorf("header %q, want %q", got, tt.columns)
			}
			var got []string
			for _, l := range lines[1:] {
				m := regexp.MustCompile(`\s(?:Normal|Warning)\s+(\S+)\s`).FindStringSubmatch(l)
				if m == nil {
					t.Fatalf("row without type and reason: %q", l)
				}
				got = append(got, m[1])
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("events %v, want %v\n%s", got, tt.want, stdout)
			}
		})
	}
}

func TestEventsCommandOutputs(t *testing.T) {
	stdout, _, err := runSkiff(t, eventAgent(), "events", "-o", "json", "--for", "pod/web-2")
	if err != nil {
		t.Fatal(err)
	}
	var list v1.EventList
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatalf("-o json: %v\n%s", err, stdout)
	}
	if list.Kind != "EventList" || len(list.Items) != 1 || list.Items[0].Kind != "Event" || list.Items[0].Reason != "BackOff" {
		t.Errorf("-o json = %s", stdout)
	}

	stdout, stderr, err := runSkiff(t, eventAgent(), "events", "-n", "empty")
	if err != nil || stdout != "" || stderr != "No events found in empty namespace.\n" {
		t.Errorf("no events: stdout %q stderr %q err %v", stdout, stderr, err)
	}
	for _, args := range [][]string{
		{"events", "-o", "table"},
		{"events", "--for", "web"},
		{"events", "--for", "node/n1"},
		{"events", "--types", "Fatal"},
	} {
		if _, _, err := runSkiff(t, eventAgent(), args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
