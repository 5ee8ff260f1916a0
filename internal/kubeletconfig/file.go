// Package kubeletconfig reads and writes skiff agent configuration files:
// a KubeletConfiguration (kubelet.config.k8s.io/v1beta1), decoded into the
// published k8s.io/kubelet types, the file the kubelet reads with
// --config.
//
// A file is decoded strictly (unknown and duplicate fields are errors, as
// the kubelet's strict decoding), checked for fields skiff does not
// support (an error unless the field is left out or at the kubelet's
// default), and then applied to the agent's flags: every field skiff
// supports is bound to the flag the kubelet binds it to (fields.go), and
// a flag given on the command line wins over the file, as in the kubelet.
// A field the file leaves out keeps the flag's default. The reverse,
// FromFlags and Marshal, is `skiff agent --write-config`.
package kubeletconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"

	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/kubelet/config/v1beta1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// APIVersion and Kind are the only ones skiff reads.
const (
	APIVersion = "kubelet.config.k8s.io/v1beta1"
	Kind       = "KubeletConfiguration"
)

// File is a decoded configuration file.
type File struct {
	// Path names the file in errors.
	Path string
	// Config is the file as written: the kubelet's defaulting is not
	// applied, so a field left out is its zero value (or nil).
	Config *Configuration
}

// Load reads and checks the configuration file at path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("configuration file: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes data, the file at path, strictly and refuses fields skiff
// does not support; each error names the file and the field.
func Parse(path string, data []byte) (*File, error) {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cfg := &Configuration{}
	strict, err := sigsjson.UnmarshalStrict(j, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var errs []error
	for _, e := range strict {
		errs = append(errs, fmt.Errorf("%s: %w", path, e))
	}
	if cfg.APIVersion != APIVersion || cfg.Kind != Kind {
		errs = append(errs, fmt.Errorf("%s: apiVersion %q, kind %q: want apiVersion %s, kind %s", path, cfg.APIVersion, cfg.Kind, APIVersion, Kind))
	}
	for _, e := range unsupported(&cfg.KubeletConfiguration) {
		errs = append(errs, fmt.Errorf("%s: %w", path, e))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &File{Path: path, Config: cfg}, nil
}

// supportedPaths are the JSON paths of the fields skiff reads.
func supportedPaths() []string {
	paths := []string{"apiVersion", "kind"}
	for _, f := range fields() {
		paths = append(paths, f.paths...)
	}
	return paths
}

// unsupported lists the fields of cfg that skiff does not support and
// that are set to something else than the kubelet's default.
func unsupported(cfg *v1beta1.KubeletConfiguration) []error {
	supported := supportedPaths()
	var errs []error
	var walk func(prefix string, got, def reflect.Value)
	walk = func(prefix string, got, def reflect.Value) {
		t := got.Type()
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			g, d := got.Field(i), def.Field(i)
			path := prefix + name
			switch {
			case name == "-":
			case name == "" && t.Field(i).Anonymous:
				walk(prefix, g, d) // inline, e.g. metav1.TypeMeta
			case slices.Contains(supported, path):
			case g.Kind() == reflect.Struct && !isLeaf(g.Type()):
				walk(path+".", g, d)
			case !g.IsZero() && !sameValue(g, d):
				errs = append(errs, fmt.Errorf("field %q is not supported by skiff (%s)", path, notSupportedDetail(g, d)))
			}
		}
	}
	walk("", reflect.ValueOf(cfg).Elem(), reflect.ValueOf(kubeletDefaults()).Elem())
	return errs
}

// isLeaf reports the struct types compared as one value: those with a
// JSON form of their own.
func isLeaf(t reflect.Type) bool {
	m := reflect.TypeFor[json.Marshaler]()
	return t.Implements(m) || reflect.PointerTo(t).Implements(m)
}

// sameValue compares two field values by their JSON forms (a duration
// written as "5s" or as nanoseconds is the same value).
func sameValue(a, b reflect.Value) bool {
	if d, ok := a.Interface().(logsapi.TimeOrMetaDuration); ok {
		return d.Duration == b.Interface().(logsapi.TimeOrMetaDuration).Duration
	}
	ja, errA := json.Marshal(a.Interface())
	jb, errB := json.Marshal(b.Interface())
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

func notSupportedDetail(got, def reflect.Value) string {
	g, _ := json.Marshal(got.Interface())
	if def.IsZero() {
		return fmt.Sprintf("value %s; leave it out", g)
	}
	d, _ := json.Marshal(def.Interface())
	return fmt.Sprintf("value %s; leave it out or set the kubelet's default %s", g, d)
}

// Marshal renders cfg as a configuration file with the fields skiff
// supports only.
func Marshal(cfg *Configuration) ([]byte, error) {
	c := cfg.DeepCopy()
	c.APIVersion, c.Kind = APIVersion, Kind
	j, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encoding the configuration: %w", err)
	}
	var obj map[string]any
	if err := json.Unmarshal(j, &obj); err != nil {
		return nil, fmt.Errorf("encoding the configuration: %w", err)
	}
	keep(obj, "", supportedPaths())
	delete(obj, "apiVersion")
	delete(obj, "kind")
	if j, err = json.Marshal(obj); err != nil {
		return nil, fmt.Errorf("encoding the configuration: %w", err)
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return nil, fmt.Errorf("encoding the configuration: %w", err)
	}
	head := fmt.Sprintf("apiVersion: %s\nkind: %s\n", APIVersion, Kind)
	return append([]byte(head), y...), nil
}

// keep deletes from obj (at prefix) every key that is neither one of
// paths nor on the way to one; objects left empty go too.
func keep(obj map[string]any, prefix string, paths []string) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := prefix + k
		if slices.Contains(paths, path) {
			continue
		}
		sub, isObj := obj[k].(map[string]any)
		if !isObj || !slices.ContainsFunc(paths, func(p string) bool { return strings.HasPrefix(p, path+".") }) {
			delete(obj, k)
			continue
		}
		keep(sub, path+".", paths)
		if len(sub) == 0 {
			delete(obj, k)
		}
	}
}
