package staticpods

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Annotations the kubelet puts on static pods (pkg/kubelet/types).
const (
	// ConfigSourceAnnotation names the pod's source; "file" here.
	ConfigSourceAnnotation = "kubernetes.io/config.source"
	// ConfigHashAnnotation holds the pod UID, a hash of the manifest.
	ConfigHashAnnotation = "kubernetes.io/config.hash"
	// ConfigSeenAnnotation holds the time (RFC 3339, nanoseconds) this
	// agent process first read the manifest content.
	ConfigSeenAnnotation = "kubernetes.io/config.seen"
	// SourceFile is the value of ConfigSourceAnnotation for this source.
	SourceFile = "file"
)

// staticPodUID computes the UID the kubelet gives a pod read from a file
// (pkg/kubelet/config/common.go applyDefaults): the hex MD5 of
// "host:<nodeName>", "file:<path>" and a hash of the decoded pod.
//
// The kubelet hashes the pod with hashutil.DeepHashObject (go-spew) after
// API defaulting; skiff hashes the pod's JSON encoding as decoded, before
// any defaulting (encoding/json is deterministic: struct field order, sorted
// map keys). So UIDs differ from the kubelet's, but depend only on the node
// name, the file path and the manifest content: they survive agent restarts,
// and changes to skiff's defaults do not restart static pods.
func staticPodUID(nodeName, path string, decoded *v1.Pod) (types.UID, error) {
	content, err := json.Marshal(decoded)
	if err != nil {
		return "", fmt.Errorf("hashing pod: %w", err)
	}
	h := md5.New()
	_, _ = fmt.Fprintf(h, "host:%s", nodeName)
	_, _ = fmt.Fprintf(h, "file:%s", path)
	_, _ = h.Write(content)
	return types.UID(hex.EncodeToString(h.Sum(nil))), nil
}

// applyStaticDefaults does what the kubelet's applyDefaults does for a file
// source: a UID from the content unless the manifest sets one, the name
// suffix "-<lowercased nodeName>", namespace "default" if empty,
// spec.nodeName, the config annotations and a toleration of every NoExecute
// taint. seen is the value for ConfigSeenAnnotation.
func applyStaticDefaults(pod *v1.Pod, nodeName, path, seen string) error {
	if pod.UID == "" {
		uid, err := staticPodUID(nodeName, path, pod)
		if err != nil {
			return err
		}
		pod.UID = uid
	}
	pod.Name = pod.Name + "-" + strings.ToLower(nodeName)
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = nodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[ConfigHashAnnotation] = string(pod.UID)
	pod.Annotations[ConfigSourceAnnotation] = SourceFile
	pod.Annotations[ConfigSeenAnnotation] = seen
	addOrUpdateToleration(pod, v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
	return nil
}

// addOrUpdateToleration adds t unless an equal toleration (same key,
// operator, value and effect) is present, as the kubelet's
// AddOrUpdateTolerationInPod does.
func addOrUpdateToleration(pod *v1.Pod, t v1.Toleration) {
	for i, have := range pod.Spec.Tolerations {
		if have.Key == t.Key && have.Operator == t.Operator && have.Value == t.Value && have.Effect == t.Effect {
			pod.Spec.Tolerations[i] = t
			return
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
}

// ignoredName reports whether a directory entry is skipped: dot-files (the
// kubelet's rule) and editor temporaries and backups: "*~", "*.swp",
// "*.swx", "*.tmp", "#*#" and vim's numeric probe files ("4913").
func ignoredName(name string) bool {
	switch {
	case name == "" || strings.HasPrefix(name, "."):
		return true
	case strings.HasSuffix(name, "~"),
		strings.HasSuffix(name, ".swp"), strings.HasSuffix(name, ".swx"),
		strings.HasSuffix(name, ".tmp"):
		return true
	case len(name) >= 2 && strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#"):
		return true
	}
	return isAllDigits(name)
}

func isAllDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// limitedRead reads at most limit bytes from r and fails if there is more.
func limitedRead(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("file is larger than %d bytes", limit)
	}
	return data, nil
}
