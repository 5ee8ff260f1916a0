// Package manifests turns Pod manifests (YAML or JSON) into k8s.io/api
// core/v1 Pods for a node agent: strict decoding (Decode), the defaults the
// API server and kubelet apply (SetDefaults) and validation with field paths
// (Validate), including the rejection of every field skiff does not
// implement yet (see supportedFieldPaths).
//
// The usual pipeline is Decode, then SetDefaults, then Validate. All
// functions are pure and safe for concurrent use on distinct pods.
package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Decode parses data as a JSON object or as YAML with one or more documents
// separated by "---" lines, and returns one Pod per non-empty document, in
// order (checklist A.1).
//
// Decoding is strict: unknown fields, duplicate fields and mismatched case
// ("Image" for "image") are errors naming the field path, and each document
// must have apiVersion "v1" and kind "Pod". As in the kubelet, input whose
// first non-space byte is "{" is JSON and must be exactly one object;
// trailing data is an error. A document's status is dropped, as the
// kubelet ignores it. In multi-document input an error names the document
// ("document 2: ..."), counting from 1. Decode sets no defaults and does not
// validate; see SetDefaults and Validate. Any error means no pods.
//
// YAML aliases are expanded with the limits of the YAML library, so
// "billion laughs" input fails instead of exhausting memory.
func Decode(data []byte) ([]*v1.Pod, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("empty manifest")
	}
	if trimmed[0] == '{' {
		pod, err := decodeJSONPod(trimmed)
		if err != nil {
			return nil, err
		}
		return []*v1.Pod{pod}, nil
	}
	docs, err := splitYAML(data)
	if err != nil {
		return nil, err
	}
	var pods []*v1.Pod
	for i, doc := range docs {
		pod, err := decodeYAMLPod(doc)
		if err != nil {
			if len(docs) > 1 {
				return nil, fmt.Errorf("document %d: %w", i+1, err)
			}
			return nil, err
		}
		if pod != nil {
			pods = append(pods, pod)
		}
	}
	if len(pods) == 0 {
		return nil, errors.New("manifest contains no documents")
	}
	return pods, nil
}

// splitYAML splits a YAML stream into its documents at separator lines:
// "---" alone or followed by blanks and an optional comment. Content after
// "--- " on the same line is not supported and is an error. (apimachinery's
// YAMLReader is not used: it drops a final unterminated line that ends
// exactly at its 4 KiB buffer boundary.)
func splitYAML(data []byte) ([][]byte, error) {
	var docs [][]byte
	start, line := 0, 0
	for off := 0; off < len(data); line++ {
		next := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			next = off + i + 1
		}
		text := bytes.TrimRight(data[off:next], "\r\n")
		if bytes.HasPrefix(text, []byte("---")) && (len(text) == 3 || text[3] == ' ' || text[3] == '\t') {
			if off > start {
				docs = append(docs, data[start:off])
			}
			if rest := bytes.TrimSpace(text[3:]); len(rest) > 0 && rest[0] != '#' {
				return nil, fmt.Errorf("document %d: line %d: content after the document separator is not supported: %q",
					len(docs)+1, line+1, truncate(text, 40))
			}
			start = next
		}
		off = next
	}
	if start < len(data) {
		docs = append(docs, data[start:])
	}
	return docs, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// decodeYAMLPod decodes one YAML document; it returns nil, nil for a
// document without content (only comments or whitespace, or null).
func decodeYAMLPod(doc []byte) (*v1.Pod, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	return decodeJSONPod(js)
}

// decodeJSONPod strictly decodes one JSON object into a Pod.
func decodeJSONPod(js []byte) (*v1.Pod, error) {
	var tm metav1.TypeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &tm); err != nil {
		return nil, fmt.Errorf("not a Pod object: %w", err)
	}
	if err := checkTypeMeta(tm); err != nil {
		return nil, err
	}
	pod := &v1.Pod{}
	strictErrs, err := kjson.UnmarshalStrict(js, pod)
	if err != nil {
		return nil, fmt.Errorf("decoding Pod: %w", err)
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("decoding Pod: %s", strings.Join(msgs, "; "))
	}
	pod.Status = v1.PodStatus{}
	return pod, nil
}

// checkTypeMeta requires apiVersion v1 and kind Pod.
func checkTypeMeta(tm metav1.TypeMeta) error {
	switch {
	case tm.APIVersion == "":
		return errors.New("apiVersion: Required value: must be \"v1\"")
	case tm.APIVersion != "v1":
		return fmt.Errorf("apiVersion: Unsupported value: %q: supported values: \"v1\"", tm.APIVersion)
	case tm.Kind == "":
		return errors.New("kind: Required value: must be \"Pod\"")
	case tm.Kind != "Pod":
		return fmt.Errorf("kind: Unsupported value: %q: supported values: \"Pod\"", tm.Kind)
	}
	return nil
}
