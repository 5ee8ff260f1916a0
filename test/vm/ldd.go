package vm

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// isDynamic reports whether the ELF file at path is dynamically linked
// (has a PT_DYNAMIC program header: executables with a loader and shared
// libraries). Non-ELF files (scripts, data) are not.
func isDynamic(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		if fe := (*elf.FormatError)(nil); errors.As(err, &fe) {
			return false, nil
		}
		return false, fmt.Errorf("read ELF %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_DYNAMIC {
			return true, nil
		}
	}
	return false, nil
}

// sharedLibs returns the host paths of the shared libraries and dynamic
// loaders that the given files need, as ldd(1) resolves them; static and
// non-ELF files need none. One ldd run covers all files.
func sharedLibs(ctx context.Context, paths ...string) ([]string, error) {
	var dynamic []string
	for _, p := range paths {
		dyn, err := isDynamic(p)
		if err != nil {
			return nil, err
		}
		if dyn {
			dynamic = append(dynamic, p)
		}
	}
	if len(dynamic) == 0 {
		return nil, nil
	}
	out, err := exec.CommandContext(ctx, "ldd", dynamic...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w: %s", strings.Join(dynamic, " "), err, strings.TrimSpace(string(out)))
	}
	return parseLdd(string(out))
}

// parseLdd extracts library paths from ldd output:
//
//	linux-vdso.so.1 (0x...)                      skipped (in the kernel)
//	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)
//	/lib64/ld-linux-x86-64.so.2 (0x...)
//	libfoo.so.1 => not found                     error
func parseLdd(out string) ([]string, error) {
	var libs []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		// With several files ldd prints a "file:" header before each.
		if line == "" || strings.HasSuffix(line, ":") || strings.Contains(line, "statically linked") {
			continue
		}
		if name, where, ok := strings.Cut(line, "=>"); ok {
			where = strings.TrimSpace(where)
			if strings.HasPrefix(where, "not found") {
				return nil, fmt.Errorf("shared library %s not found", strings.TrimSpace(name))
			}
			if p, _, _ := strings.Cut(where, " "); strings.HasPrefix(p, "/") {
				libs = append(libs, p)
			}
			continue
		}
		if p, _, _ := strings.Cut(line, " "); strings.HasPrefix(p, "/") {
			libs = append(libs, p)
		}
	}
	return libs, nil
}

// AddExecutable adds the host program src at guest together with the
// shared libraries and the dynamic loader it needs, each at its host path.
func (r *Rootfs) AddExecutable(ctx context.Context, guest, src string) error {
	if err := r.AddFile(guest, src); err != nil {
		return err
	}
	return r.AddLibsOf(ctx, src)
}

// AddLibsOf adds the shared libraries the host files srcs need (nothing
// for static programs), each at its host path.
func (r *Rootfs) AddLibsOf(ctx context.Context, srcs ...string) error {
	libs, err := sharedLibs(ctx, srcs...)
	if err != nil {
		return fmt.Errorf("shared libraries: %w", err)
	}
	for _, lib := range libs {
		if r.Has(lib) {
			continue
		}
		if err := r.AddFile(lib, lib); err != nil {
			return fmt.Errorf("shared libraries: %w", err)
		}
	}
	return nil
}

// lookPath finds a program in PATH plus the sbin directories, which a
// non-root PATH may lack, and returns its absolute path.
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return filepath.Abs(p)
	}
	for _, dir := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH or the sbin directories (run test/setup.sh)", name)
}
