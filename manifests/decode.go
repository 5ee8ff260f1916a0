// Package manifests turns manifest files (YAML or JSON) into k8s.io/api
// core/v1 objects for the node agent's static pods: strict decoding of Pods
// (Decode) and of the Pods, ConfigMaps and Secrets of a manifest directory
// (DecodeManifest). Defaulting and validation are the neutral podspec's,
// which the API server applies too.
//
// The usual pipeline is Decode, then podspec.SetDefaults, then
// podspec.Validate. All functions are pure and safe for concurrent use.
package manifests

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
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
// validate; see podspec.SetDefaults and podspec.Validate. Any error means
// no pods.
//
// YAML aliases are expanded with the limits of the YAML library, so
// "billion laughs" input fails instead of exhausting memory.
func Decode(data []byte) ([]*v1.Pod, error) {
	var pods []*v1.Pod
	err := decodeStream(data, podKinds, func(obj any) { pods = append(pods, obj.(*v1.Pod)) })
	if err != nil {
		return nil, err
	}
	return pods, nil
}

// podKinds are the kinds Decode accepts.
var podKinds = []string{"Pod"}

// decodeStream decodes the documents of data (see Decode for the format and
// error rules) as objects of one of kinds, calling add for each in order.
// It fails on the first bad document and when there is no object.
func decodeStream(data []byte, kinds []string, add func(obj any)) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return errors.New("empty manifest")
	}
	if trimmed[0] == '{' {
		obj, err := decodeJSONObject(trimmed, kinds)
		if err != nil {
			return err
		}
		add(obj)
		return nil
	}
	docs, err := splitYAML(data)
	if err != nil {
		return err
	}
	n := 0
	for i, doc := range docs {
		obj, err := decodeYAMLObject(doc, kinds)
		if err != nil {
			if len(docs) > 1 {
				return fmt.Errorf("document %d: %w", i+1, err)
			}
			return err
		}
		if obj != nil {
			add(obj)
			n++
		}
	}
	if n == 0 {
		return errors.New("manifest contains no documents")
	}
	return nil
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

// decodeYAMLObject decodes one YAML document; it returns nil, nil for a
// document without content (only comments or whitespace, or null).
func decodeYAMLObject(doc []byte, kinds []string) (any, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	return decodeJSONObject(js, kinds)
}

// decodeJSONObject strictly decodes one JSON object of one of kinds: a
// *v1.Pod (status dropped), *v1.ConfigMap or *v1.Secret.
func decodeJSONObject(js []byte, kinds []string) (any, error) {
	var tm metav1.TypeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &tm); err != nil {
		return nil, fmt.Errorf("not a %s object: %w", joinKinds(kinds), err)
	}
	if err := checkTypeMeta(tm, kinds); err != nil {
		return nil, err
	}
	var obj any
	switch tm.Kind {
	case "Pod":
		obj = &v1.Pod{}
	case "ConfigMap":
		obj = &v1.ConfigMap{}
	case "Secret":
		obj = &v1.Secret{}
	}
	strictErrs, err := kjson.UnmarshalStrict(js, obj)
	if err != nil {
		if where := badBase64Field(js, tm.Kind); where != "" {
			return nil, fmt.Errorf("decoding %s: %s: %w", tm.Kind, where, err)
		}
		return nil, fmt.Errorf("decoding %s: %w", tm.Kind, err)
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("decoding %s: %s", tm.Kind, strings.Join(msgs, "; "))
	}
	if pod, ok := obj.(*v1.Pod); ok {
		pod.Status = v1.PodStatus{}
	}
	return obj, nil
}

// badBase64Field names the first base64 value (a Secret's data, a
// ConfigMap's binaryData) of a document of kind that is not valid base64
// ("data[tls.key]"), since the JSON decoder's error does not; "" if none is.
func badBase64Field(js []byte, kind string) string {
	var doc struct {
		Data       map[string]any `json:"data"`
		BinaryData map[string]any `json:"binaryData"`
	}
	if json.Unmarshal(js, &doc) != nil {
		return ""
	}
	for _, f := range []struct {
		name string
		m    map[string]any
	}{{"data", doc.Data}, {"binaryData", doc.BinaryData}} {
		if (kind == "Secret") != (f.name == "data") {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(f.m)) {
			if s, ok := f.m[k].(string); ok {
				if _, err := base64.StdEncoding.DecodeString(s); err != nil {
					return fmt.Sprintf("%s[%s]", f.name, k)
				}
			}
		}
	}
	return ""
}

// checkTypeMeta requires apiVersion v1 and one of kinds.
func checkTypeMeta(tm metav1.TypeMeta, kinds []string) error {
	switch {
	case tm.APIVersion == "":
		return errors.New("apiVersion: Required value: must be \"v1\"")
	case tm.APIVersion != "v1":
		return fmt.Errorf("apiVersion: Unsupported value: %q: supported values: \"v1\"", tm.APIVersion)
	case tm.Kind == "":
		return fmt.Errorf("kind: Required value: must be %s", kindList(kinds, "or"))
	case !slices.Contains(kinds, tm.Kind):
		return fmt.Errorf("kind: Unsupported value: %q: supported values: %s", tm.Kind, kindList(kinds, ","))
	}
	return nil
}

// joinKinds joins kinds as prose: "Pod", "Pod, ConfigMap or Secret".
func joinKinds(kinds []string) string {
	if len(kinds) == 1 {
		return kinds[0]
	}
	return strings.Join(kinds[:len(kinds)-1], ", ") + " or " + kinds[len(kinds)-1]
}

// kindList quotes kinds and joins them: `"Pod"`, `"Pod" or "Secret"`,
// `"Pod", "Secret"` (sep ",").
func kindList(kinds []string, sep string) string {
	q := make([]string, len(kinds))
	for i, k := range kinds {
		q[i] = strconv.Quote(k)
	}
	if sep == "," || len(q) == 1 {
		return strings.Join(q, ", ")
	}
	return strings.Join(q[:len(q)-1], ", ") + " " + sep + " " + q[len(q)-1]
}
