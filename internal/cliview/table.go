package cliview

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// kubectl's tabwriter settings (k8s.io/cli-runtime/pkg/printers/tabwriter.go).
const (
	tabwriterMinWidth = 6
	tabwriterWidth    = 4
	tabwriterPadding  = 3
	tabwriterPadChar  = ' '
)

// PrintPods writes pods as the `kubectl get pods` table, in the given order:
//
//	NAME   READY   STATUS   RESTARTS   AGE   [IP   NODE]
//
// READY counts ready app containers and started, ready sidecars out of app
// containers plus sidecars (A.34: `0/1` while initializing); STATUS is
// PodStatusReason; RESTARTS gets kubectl's " (5m ago)" suffix when a
// container has a previous run with a finish time; AGE is measured from
// creationTimestamp to now ("<unknown>" if unset). wide adds the IP and NODE
// columns ("<none>" when empty). With no pods it writes nothing: kubectl's
// "No resources found" message is for the caller to print, on stderr.
func PrintPods(w io.Writer, pods []v1.Pod, wide bool, now time.Time) error {
	if len(pods) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, tabwriterMinWidth, tabwriterWidth, tabwriterPadding, tabwriterPadChar, 0)
	header := []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}
	if wide {
		header = append(header, "IP", "NODE")
	}
	if _, err := fmt.Fprintln(tw, strings.Join(header, "\t")); err != nil {
		return fmt.Errorf("write pod table: %w", err)
	}
	for i := range pods {
		if _, err := fmt.Fprintln(tw, strings.Join(podRow(&pods[i], wide, now), "\t")); err != nil {
			return fmt.Errorf("write pod table: %w", err)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write pod table: %w", err)
	}
	return nil
}

// PodRow returns the cells of pod's row in `kubectl get pods`: NAME,
// READY, STATUS, RESTARTS, AGE and, with wide, IP and NODE (see
// PrintPods). Pure.
func PodRow(pod *v1.Pod, wide bool, now time.Time) []string { return podRow(pod, wide, now) }

// Since formats the time from t to now as kubectl's AGE columns do
// ("<unknown>" for a zero t).
func Since(t, now time.Time) string { return since(t, now) }

// podRow returns the cells of one pod's row.
func podRow(pod *v1.Pod, wide bool, now time.Time) []string {
	s := summarize(pod)
	restarts := fmt.Sprint(s.restarts)
	if s.restarts != 0 && !s.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", s.restarts, since(s.lastRestart, now))
	}
	row := []string{
		pod.Name,
		fmt.Sprintf("%d/%d", s.ready, s.total),
		s.reason,
		restarts,
		since(pod.CreationTimestamp.Time, now),
	}
	if wide {
		row = append(row, orNone(podIP(pod)), orNone(pod.Spec.NodeName))
	}
	return row
}

// since formats the time from t to now as kubectl does.
func since(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

func podIP(pod *v1.Pod) string {
	if len(pod.Status.PodIPs) > 0 {
		return pod.Status.PodIPs[0].IP
	}
	return pod.Status.PodIP
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
