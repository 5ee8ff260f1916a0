package cliview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// PrintObject writes obj as kubectl's -o json (keys sorted, 4-space indent,
// trailing newline) or -o yaml. Pods and pod lists without kind/apiVersion
// get them filled in on a copy, as kubectl always prints them; obj itself is
// not modified. Any other format is an error.
func PrintObject(w io.Writer, obj any, format string) error {
	obj = withTypeMeta(obj)
	var data []byte
	var err error
	switch format {
	case "json":
		data, err = marshalJSON(obj)
	case "yaml":
		data, err = yaml.Marshal(obj)
	default:
		return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: json,yaml", format)
	}
	if err != nil {
		return fmt.Errorf("encode %s: %w", format, err)
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", format, err)
	}
	return nil
}

// marshalJSON encodes obj like kubectl's JSON printer, which prints the
// unstructured form: object keys in sorted order. Numbers keep their exact
// text.
func marshalJSON(obj any) ([]byte, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "    ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// withTypeMeta returns obj, or for pods and pod lists without a kind a
// shallow copy with kind and apiVersion set.
func withTypeMeta(obj any) any {
	switch o := obj.(type) {
	case *v1.Pod:
		if o == nil || o.Kind != "" {
			return obj
		}
		c := *o
		setPodType(&c)
		return &c
	case v1.Pod:
		setPodType(&o)
		return o
	case *v1.PodList:
		if o == nil {
			return obj
		}
		c := *o
		c.Items = slices.Clone(o.Items)
		for i := range c.Items {
			setPodType(&c.Items[i])
		}
		if c.Kind == "" {
			c.Kind, c.APIVersion = "PodList", "v1"
		}
		return &c
	}
	return obj
}

func setPodType(p *v1.Pod) {
	if p.Kind == "" {
		p.Kind, p.APIVersion = "Pod", "v1"
	}
}
