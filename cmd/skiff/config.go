package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/skiffnode/skiff/internal/kubeletconfig"
)

// configOptions are --config and --write-config (see kubeletconfig).
type configOptions struct {
	file  string
	write bool
}

func addConfigFlags(f *pflag.FlagSet, o *configOptions) {
	f.StringVar(&o.file, "config", "", "KubeletConfiguration file (kubelet.config.k8s.io/v1beta1) to read settings from; flags given on the command line win (see docs/config-file.md)")
	f.BoolVar(&o.write, "write-config", false, "print the effective configuration (flags and --config) as a KubeletConfiguration and exit")
}

// load applies --config to the flags of fs that the command line left
// alone; nothing without --config.
func (o *configOptions) load(fs *pflag.FlagSet) error {
	if o.file == "" {
		return nil
	}
	f, err := kubeletconfig.Load(o.file)
	if err != nil {
		return err
	}
	return f.Apply(fs)
}

// writeConfig prints the configuration that the flags of fs amount to.
// fresh is the agent's flags at their defaults: the configuration is
// checked to read back onto them as fs (kubeletconfig.Check).
func (o *configOptions) writeConfig(w io.Writer, fs, fresh *pflag.FlagSet) error {
	cfg, err := kubeletconfig.FromFlags(fs)
	if err != nil {
		return err
	}
	if err := kubeletconfig.Check(cfg, fs, fresh); err != nil {
		return fmt.Errorf("--write-config: %w", err)
	}
	data, err := kubeletconfig.Marshal(cfg)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}
