package vm

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// mergedUsr maps the top-level directories that are symlinks into /usr on a
// merged-/usr system (Debian 12) to their targets. The guest always has that
// layout, so a host path such as /lib/x86_64-linux-gnu/libc.so.6 lands at
// /usr/lib/x86_64-linux-gnu/libc.so.6 whether the host is merged or not.
var mergedUsr = map[string]string{
	"bin":   "usr/bin",
	"sbin":  "usr/sbin",
	"lib":   "usr/lib",
	"lib64": "usr/lib64",
}

// entryKind says what a rootfs entry is.
type entryKind int

const (
	kindDir entryKind = iota
	kindFile
	kindSymlink
	kindCharDev
)

// entry is one file of the guest root file system.
type entry struct {
	kind entryKind
	perm uint32
	// host is the file whose content a kindFile entry copies (symlinks
	// followed); data is used instead when host is empty.
	host string
	data []byte
	// target of a kindSymlink.
	target string
	// major, minor of a kindCharDev.
	major, minor uint32
}

// Rootfs is the guest's root file system, assembled in memory (host paths
// and small generated files) and written out as a cpio archive. Guest paths
// are absolute; parent directories are created implicitly. Adding a path
// twice keeps the last entry. Not safe for concurrent use.
type Rootfs struct {
	entries map[string]*entry
}

// NewRootfs returns a root file system with the merged-/usr symlinks and
// the standard top-level directories.
func NewRootfs() *Rootfs {
	r := &Rootfs{entries: map[string]*entry{}}
	for name, target := range mergedUsr {
		r.entries[name] = &entry{kind: kindSymlink, perm: 0o777, target: target}
	}
	for _, d := range []string{"dev", "etc", "proc", "sys", "run", "tmp", "root", "var/tmp", "var/lib", "var/log", "mnt", "usr/bin", "usr/sbin", "usr/lib", "usr/lib64"} {
		r.AddDir("/"+d, 0o755)
	}
	r.entries["tmp"].perm = 0o1777
	r.entries["var/tmp"].perm = 0o1777
	// The kernel opens /dev/console for the first process before /init
	// runs; without the node init would have no output.
	r.AddCharDev("/dev/console", 0o600, 5, 1)
	r.AddCharDev("/dev/null", 0o666, 1, 3)
	return r
}

// clean turns a guest path into the archive name: no leading slash,
// cleaned, merged-/usr prefixes resolved.
func clean(guest string) (string, error) {
	if !strings.HasPrefix(guest, "/") {
		return "", fmt.Errorf("guest path %q is not absolute", guest)
	}
	p := strings.TrimPrefix(path.Clean(guest), "/")
	if p == "" {
		return "", fmt.Errorf("guest path %q is the root", guest)
	}
	first, rest, _ := strings.Cut(p, "/")
	if to, ok := mergedUsr[first]; ok {
		if rest == "" {
			return "", fmt.Errorf("guest path %q replaces the /%s symlink", guest, first)
		}
		p = to + "/" + rest
	}
	return p, nil
}

// put records e at guest and creates missing parent directories.
func (r *Rootfs) put(guest string, e *entry) error {
	p, err := clean(guest)
	if err != nil {
		return err
	}
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if old, ok := r.entries[dir]; ok {
			if old.kind != kindDir {
				return fmt.Errorf("guest path %s: parent /%s is not a directory", guest, dir)
			}
			continue
		}
		r.entries[dir] = &entry{kind: kindDir, perm: 0o755}
	}
	if old, ok := r.entries[p]; ok && old.kind == kindDir && e.kind == kindDir {
		return nil // keep the existing directory
	}
	r.entries[p] = e
	return nil
}

// AddDir adds an (empty) directory.
func (r *Rootfs) AddDir(guest string, perm uint32) {
	// Errors only come from relative paths, which callers never pass.
	_ = r.put(guest, &entry{kind: kindDir, perm: perm})
}

// AddCharDev adds a character device node.
func (r *Rootfs) AddCharDev(guest string, perm, major, minor uint32) {
	_ = r.put(guest, &entry{kind: kindCharDev, perm: perm, major: major, minor: minor})
}

// AddSymlink adds a symbolic link to target.
func (r *Rootfs) AddSymlink(guest, target string) error {
	return r.put(guest, &entry{kind: kindSymlink, perm: 0o777, target: target})
}

// AddBytes adds a regular file with the given content.
func (r *Rootfs) AddBytes(guest string, data []byte, perm uint32) error {
	return r.put(guest, &entry{kind: kindFile, perm: perm, data: data})
}

// AddFile adds the host file src (symlinks followed) at guest, keeping its
// permissions.
func (r *Rootfs) AddFile(guest, src string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("add %s: %w", src, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("add %s: not a regular file", src)
	}
	return r.put(guest, &entry{kind: kindFile, perm: uint32(fi.Mode().Perm()), host: src})
}

// AddTree adds the host directory src recursively at guest. Symlinks are
// kept as symlinks; special files are skipped.
func (r *Rootfs) AddTree(guest, src string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("add tree %s: %w", src, err)
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		g := path.Join(guest, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			info, err := d.Info()
			if err != nil {
				return fmt.Errorf("add tree %s: %w", src, err)
			}
			r.AddDir(g, uint32(info.Mode().Perm()))
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("add tree %s: %w", src, err)
			}
			return r.AddSymlink(g, target)
		case d.Type().IsRegular():
			return r.AddFile(g, p)
		}
		return nil
	})
}

// Add adds the host path src at guest: a directory recursively, anything
// else as a file.
func (r *Rootfs) Add(guest, src string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("add %s: %w", src, err)
	}
	if fi.IsDir() {
		return r.AddTree(guest, src)
	}
	return r.AddFile(guest, src)
}

// Has reports whether guest is present.
func (r *Rootfs) Has(guest string) bool {
	p, err := clean(guest)
	if err != nil {
		return false
	}
	_, ok := r.entries[p]
	return ok
}

// WriteCPIO writes the file system as a newc archive, parents before their
// children, in a deterministic order.
func (r *Rootfs) WriteCPIO(w io.Writer) error {
	names := make([]string, 0, len(r.entries))
	for name := range r.entries {
		names = append(names, name)
	}
	// A parent is a prefix of its children, so it sorts first.
	sort.Strings(names)
	cw := newCPIOWriter(w)
	for _, name := range names {
		if err := r.writeEntry(cw, name, r.entries[name]); err != nil {
			return err
		}
	}
	return cw.Close()
}

func (r *Rootfs) writeEntry(cw *cpioWriter, name string, e *entry) error {
	h := cpioHeader{Name: name, Mode: e.perm & modePerm}
	switch e.kind {
	case kindDir:
		h.Mode |= modeDir
		return cw.WriteHeader(h)
	case kindCharDev:
		h.Mode |= modeCharDev
		h.RdevMajor, h.RdevMinor = e.major, e.minor
		return cw.WriteHeader(h)
	case kindSymlink:
		h.Mode |= modeSymlink
		h.Size = int64(len(e.target))
		if err := cw.WriteHeader(h); err != nil {
			return err
		}
		_, err := cw.Write([]byte(e.target))
		return err
	case kindFile:
		h.Mode |= modeRegular
		if e.host == "" {
			h.Size = int64(len(e.data))
			if err := cw.WriteHeader(h); err != nil {
				return err
			}
			_, err := cw.Write(e.data)
			return err
		}
		return writeHostFile(cw, h, e.host)
	}
	return fmt.Errorf("rootfs: /%s: unknown entry kind %d", name, e.kind)
}

// writeHostFile copies src into the archive, failing if it changed size.
func writeHostFile(cw *cpioWriter, h cpioHeader, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	h.Size = fi.Size()
	if err := cw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.Copy(cw, f)
	if err != nil {
		return fmt.Errorf("rootfs: copy %s: %w", src, err)
	}
	if n != h.Size {
		return fmt.Errorf("rootfs: %s changed while being copied (%d of %d bytes)", src, n, h.Size)
	}
	return nil
}
