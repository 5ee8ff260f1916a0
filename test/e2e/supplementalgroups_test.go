package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestSupplementalGroupsPolicy: the busybox image's /etc/group puts its
// user grouped (4242) in imgextra (4343). With supplementalGroupsPolicy
// Merge (the default) the container's groups are the pod's plus the
// image's; with Strict only the pod's, and the status's user says so
// (containerd 2). A runtime without the policy (containerd 1.6) refuses a
// Strict pod at admission, with the kubelet's reason.
func TestSupplementalGroupsPolicy(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	features := e.RuntimeFeatures(t)
	pod := func(name, policy string) string {
		return podSpec(name, []string{
			"terminationGracePeriodSeconds: 2",
			"securityContext: {runAsUser: 4242, runAsGroup: 4242, supplementalGroups: [5000], supplementalGroupsPolicy: " + policy + "}",
		}, nil, []string{sleeper("app")})
	}
	e.WriteManifest(t, "merge.yaml", pod("merge", "Merge"))
	e.WriteManifest(t, "strict.yaml", pod("strict", "Strict"))
	merge := e.WaitForPod(t, PodName("merge"), runningAndReady, podStartTimeout)
	if out := e.Exec(t, e.PodContainer(t, merge.Name, "app").ID, "id", "-G"); !sameGroups(out, "4242 4343 5000") {
		t.Errorf("Merge: groups %q, want 4242 4343 5000 (the image's imgextra kept)", out)
	}
	if !features.SupplementalGroupsPolicy {
		p := e.WaitForPod(t, PodName("strict"), phaseIs(v1.PodFailed), podStartTimeout)
		if p.Status.Reason != "SupplementalGroupsPolicyNotSupported" || !strings.Contains(p.Status.Message, "SupplementalGroupsPolicy=Strict is not supported in this node") {
			t.Errorf("Strict on a runtime without it: reason %q message %q", p.Status.Reason, p.Status.Message)
		}
		return
	}
	strict := e.WaitForPod(t, PodName("strict"), runningAndReady, podStartTimeout)
	if out := e.Exec(t, e.PodContainer(t, strict.Name, "app").ID, "id", "-G"); !sameGroups(out, "4242 5000") {
		t.Errorf("Strict: groups %q, want 4242 5000 (the image's imgextra dropped)", out)
	}
	for _, tc := range []struct {
		p    *v1.Pod
		want string
	}{{merge, "[4242 4343 5000]"}, {strict, "[4242 5000]"}} {
		u := statusOf(t, tc.p, "app").User
		if u == nil || u.Linux == nil || u.Linux.UID != 4242 || u.Linux.GID != 4242 || sortedGroups(u.Linux.SupplementalGroups) != tc.want {
			t.Errorf("%s: status user %s, want uid 4242 gid 4242 groups %s", tc.p.Name, dump(u), tc.want)
		}
	}
}

// sameGroups reports whether `id -G` output lists exactly the groups of
// want (space-separated), in any order.
func sameGroups(out, want string) bool {
	return sortedFields(out) == sortedFields(want)
}

// sortedFields is s's space-separated fields, deduplicated and sorted
// (`id -G` prints the primary group twice when it is also supplementary).
func sortedFields(s string) string {
	f := strings.Fields(s)
	slices.Sort(f)
	return strings.Join(slices.Compact(f), " ")
}

// sortedGroups formats ids sorted and deduplicated, as "[a b]".
func sortedGroups(ids []int64) string {
	s := slices.Clone(ids)
	slices.Sort(s)
	return fmt.Sprint(slices.Compact(s))
}
