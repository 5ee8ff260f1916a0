package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		args []string
		err  string
		// check inspects a successful parse.
		check func(t *testing.T, c config)
	}{
		{
			name: "full command line",
			args: []string{"-add", "/h/skiff:/skiff/bin/skiff", "-add", "/h/img", "-env", "A=1", "-env", "B=2",
				"-timeout", "5m", "-mem", "2048", "-require-cgroup2", "cpu,memory", "-quiet", "--", "/bin/x", "-v", "--", "y"},
			check: func(t *testing.T, c config) {
				img := c.opts.Image
				if strings.Join(img.Command, " ") != "/bin/x -v -- y" || strings.Join(img.Env, " ") != "A=1 B=2" {
					t.Errorf("command %q env %q", img.Command, img.Env)
				}
				if len(img.Adds) != 2 || img.Adds[0].Guest != "/skiff/bin/skiff" || img.Adds[1].Guest != "/h/img" {
					t.Errorf("adds = %+v", img.Adds)
				}
				if c.opts.Timeout != 5*time.Minute || c.opts.Machine.MemoryMiB != 2048 || !c.quiet ||
					strings.Join(c.requireV2, " ") != "cpu memory" {
					t.Errorf("config = %+v", c)
				}
			},
		},
		{
			name: "defaults",
			args: []string{"--", "true"},
			check: func(t *testing.T, c config) {
				if c.opts.Timeout != 14*time.Minute || c.opts.Machine.CPUs != 2 || c.log != "_output/vm/console.log" ||
					c.opts.Image.Workdir != "/" || c.requireV2 != nil || c.systemd || c.powerOff != "systemctl" {
					t.Errorf("config = %+v", c)
				}
			},
		},
		{
			name: "systemd VM",
			args: []string{"-systemd", "-disk", "/d/root.img", "-poweroff", "force", "--", "true"},
			check: func(t *testing.T, c config) {
				if !c.systemd || c.disk != "/d/root.img" || c.powerOff != "force" {
					t.Errorf("config = %+v", c)
				}
			},
		},
		{name: "no command", args: []string{"-quiet"}, err: "no command"},
		{name: "bad add", args: []string{"-add", "x:rel", "--", "true"}, err: "must be absolute"},
		{name: "unknown flag", args: []string{"-nope", "--", "true"}, err: "not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parse(tt.args, io.Discard)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestRunUsageErrorExitsTwo(t *testing.T) {
	if code := run(t.Context(), []string{}, io.Discard); code != 2 {
		t.Errorf("exit status %d, want 2", code)
	}
}
