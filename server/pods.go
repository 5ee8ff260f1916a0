package server

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"sort"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// handlePods serves GET /pods: a v1.PodList as the kubelet's read-only port
// returns it, items sorted by namespace and name.
func (s *Server) handlePods(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, s.log, podList(s.pods.Pods()))
}

// handleHealthz serves GET /healthz.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	if s.healthz != nil {
		if err := s.healthz(r.Context()); err != nil {
			http.Error(w, "healthz check failed: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write([]byte("ok"))
}

// podList builds the response of /pods. The items are shallow copies that
// share maps and slices with the provider's pods; they are only read.
func podList(pods []*v1.Pod) *v1.PodList {
	items := make([]v1.Pod, 0, len(pods))
	for _, p := range pods {
		if p != nil {
			items = append(items, *p)
		}
	}
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].Namespace != items[j].Namespace {
			return items[i].Namespace < items[j].Namespace
		}
		return items[i].Name < items[j].Name
	})
	return &v1.PodList{
		TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
		Items:    items,
	}
}

// findPod returns the pod namespace/name, preferring one that is not being
// deleted when an old and a new pod share the name; nil if there is none.
func findPod(pods []*v1.Pod, namespace, name string) *v1.Pod {
	var found *v1.Pod
	for _, p := range pods {
		if p == nil || p.Namespace != namespace || p.Name != name {
			continue
		}
		if p.DeletionTimestamp == nil {
			return p
		}
		if found == nil {
			found = p
		}
	}
	return found
}

func writeJSON(w http.ResponseWriter, log *slog.Logger, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(append(body, '\n')); err != nil {
		log.Debug("write response", "err", err)
	}
}
