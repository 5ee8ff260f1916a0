package kubeletconfig

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubelet/config/v1beta1"
)

// Apply sets the flags of fs from the file's fields: each field the file
// sets, unless its flag was given on the command line (fs.Changed), as
// the kubelet's flags win over its --config. A flag set here counts as
// changed afterwards. Errors name the file and the field.
func (f *File) Apply(fs *pflag.FlagSet) error {
	var errs []error
	for _, b := range fields() {
		fl := fs.Lookup(b.flag)
		if fl == nil {
			return fmt.Errorf("kubeletconfig: the agent has no --%s flag", b.flag)
		}
		if fl.Changed {
			continue
		}
		v, ok, err := b.toFlag(f.Config)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.Path, err))
			continue
		}
		if !ok {
			continue
		}
		if err := fs.Set(b.flag, v); err != nil {
			errs = append(errs, fmt.Errorf("%s: field %q: %w", f.Path, b.paths[0], err))
		}
	}
	return errors.Join(errs...)
}

// FromFlags is the configuration the flags of fs amount to: the
// effective configuration once Apply ran.
func FromFlags(fs *pflag.FlagSet) (*Configuration, error) {
	c := &Configuration{KubeletConfiguration: v1beta1.KubeletConfiguration{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}}}
	for _, b := range fields() {
		fl := fs.Lookup(b.flag)
		if fl == nil {
			return nil, fmt.Errorf("kubeletconfig: the agent has no --%s flag", b.flag)
		}
		if err := b.fromFlag(c, fl.Value); err != nil {
			return nil, fmt.Errorf("--%s: %w", b.flag, err)
		}
	}
	return c, nil
}

// Check verifies that cfg, read back onto fresh (the agent's flags at
// their defaults), gives the flags of fs the same values (as fields:
// cpu=1,memory=1Gi is memory=1Gi,cpu=1): that a written configuration
// means what the flags meant. It names the first flag whose value cannot
// be written (e.g. one whose zero value a file reads as "the default").
func Check(cfg *Configuration, fs, fresh *pflag.FlagSet) error {
	f := &File{Path: "the written configuration", Config: cfg}
	if err := f.Apply(fresh); err != nil {
		return err
	}
	for _, b := range fields() {
		want, errW := fieldJSON(b, fs)
		got, errG := fieldJSON(b, fresh)
		if err := errors.Join(errW, errG); err != nil {
			return err
		}
		if want != got {
			return fmt.Errorf("--%s=%s cannot be written as %s: read back, it is %s", b.flag, fs.Lookup(b.flag).Value, b.paths[0], fresh.Lookup(b.flag).Value)
		}
	}
	return nil
}

// fieldJSON is the configuration b's flag in fs gives, as JSON.
func fieldJSON(b field, fs *pflag.FlagSet) (string, error) {
	var c Configuration
	if err := b.fromFlag(&c, fs.Lookup(b.flag).Value); err != nil {
		return "", fmt.Errorf("--%s: %w", b.flag, err)
	}
	j, err := json.Marshal(&c)
	return string(j), err
}

// Binding names a field skiff supports and the agent flag bound to it.
type Binding struct {
	Path string
	Flag string
}

// Bindings lists the fields skiff supports, for documentation and tests.
func Bindings() []Binding {
	var out []Binding
	for _, f := range fields() {
		for _, p := range f.paths {
			out = append(out, Binding{Path: p, Flag: f.flag})
		}
	}
	return out
}
