package vm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseLdd(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want []string
		err  string
	}{
		{
			name: "one dynamic program",
			out: "\tlinux-vdso.so.1 (0x00007ffd5b1f2000)\n" +
				"\tlibseccomp.so.2 => /lib/x86_64-linux-gnu/libseccomp.so.2 (0x00007f0e0b9a0000)\n" +
				"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0e0b7bf000)\n" +
				"\t/lib64/ld-linux-x86-64.so.2 (0x00007f0e0b9d9000)\n",
			want: []string{"/lib/x86_64-linux-gnu/libseccomp.so.2", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"},
		},
		{
			name: "several files with headers, one static",
			out: "/usr/sbin/runc:\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x1)\n" +
				"/usr/bin/containerd:\n\tnot a dynamic executable\n" +
				"/usr/lib/cni/bridge:\n\tstatically linked\n",
			want: []string{"/lib/x86_64-linux-gnu/libc.so.6"},
		},
		{
			name: "library without an address",
			out:  "\tlibfoo.so.1 => /opt/lib/libfoo.so.1\n",
			want: []string{"/opt/lib/libfoo.so.1"},
		},
		{
			name: "vdso only",
			out:  "\tlinux-vdso.so.1 =>  (0x00007ffd5b1f2000)\n",
		},
		{
			name: "missing library",
			out:  "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x1)\n\tlibgone.so.3 => not found\n",
			err:  "libgone.so.3 not found",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLdd(tt.out)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("libs = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNonELFNeedsNoLibraries(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dyn, err := isDynamic(script)
	if err != nil || dyn {
		t.Fatalf("isDynamic(script) = %v, %v; want false, nil", dyn, err)
	}
	// No dynamic file: ldd is not even run.
	libs, err := sharedLibs(t.Context(), script)
	if err != nil || len(libs) != 0 {
		t.Fatalf("sharedLibs(script) = %q, %v; want none", libs, err)
	}
	if _, err := isDynamic(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("isDynamic of a missing file: no error")
	}
}
