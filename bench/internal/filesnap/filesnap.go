// Package filesnap tells which files under a directory were written in a
// window (issue 33: what an agent's write counters are made of): a
// snapshot of every regular file's size and modification time at the
// window's start and one at its end. It sees the files that exist at the
// end; one written and removed within the window (a temporary file
// renamed over another is the other's new inode) is not seen, and a file
// written several times counts once. Walk does the I/O; the rest is pure.
package filesnap

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// State is what a snapshot keeps of a regular file.
type State struct {
	Size    int64
	ModTime time.Time
	// Ino is its inode: another one under the same path is a new file
	// (written whole and renamed into place).
	Ino uint64
}

// Snapshot is a directory's regular files by path relative to it.
type Snapshot map[string]State

// Walk snapshots the regular files under root. It does not cross into
// other filesystems (container root filesystems, tmpfs volumes: their
// writes are not root's device's) and skips the directories in skip
// (absolute paths). Entries that vanish while it walks are left out.
func Walk(root string, skip ...string) (Snapshot, error) {
	rootInfo, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", root, err)
	}
	dev, _ := ids(rootInfo)
	snap := Snapshot{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			if path != root && slices.Contains(skip, path) {
				return filepath.SkipDir
			}
			if info, err := d.Info(); err == nil && devOf(info) != dev {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // gone meanwhile
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		_, ino := ids(info)
		snap[rel] = State{Size: info.Size(), ModTime: info.ModTime(), Ino: ino}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", root, err)
	}
	return snap, nil
}

// ids are a file's device and inode numbers (0, 0 where unknown).
// WalkAll snapshots several paths into one: the files under each
// directory by its base name and the path below it (root/..., state/...),
// a regular file by its base name. A path that does not exist is left
// out.
func WalkAll(paths ...string) (Snapshot, error) {
	snap := Snapshot{}
	for _, p := range paths {
		info, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, fmt.Errorf("snapshot %s: %w", p, err)
		case info.Mode().IsRegular():
			_, ino := ids(info)
			snap[filepath.Base(p)] = State{Size: info.Size(), ModTime: info.ModTime(), Ino: ino}
			continue
		case !info.IsDir():
			continue
		}
		sub, err := Walk(p)
		if err != nil {
			return nil, err
		}
		for rel, st := range sub {
			snap[filepath.Join(filepath.Base(p), rel)] = st
		}
	}
	return snap, nil
}

func ids(info fs.FileInfo) (dev, ino uint64) {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Dev, st.Ino
	}
	return 0, 0
}

func devOf(info fs.FileInfo) uint64 {
	dev, _ := ids(info)
	return dev
}

// Change is a file written in the window.
type Change struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Written is the least the window wrote into it: its whole size for
	// a new file or a new inode renamed into place, what an appended one
	// (same inode, larger) gained; 0 for one changed in place (InPlace:
	// same inode, no larger, as a database's pages or a truncated and
	// rewritten file), whose written part is not known.
	Written int64 `json:"written"`
	InPlace bool  `json:"in_place,omitempty"`
	// New: no file had the path at the window's start.
	New bool `json:"new,omitempty"`
}

// Diff returns the files of after modified at or after since (new ones
// included), by path, and how many files of before are gone from after.
func Diff(before, after Snapshot, since time.Time) (changed []Change, removed int) {
	for p, a := range after {
		if a.ModTime.Before(since) {
			continue
		}
		b, ok := before[p]
		if ok && b == a {
			continue
		}
		c := Change{Path: p, Size: a.Size, New: !ok, Written: a.Size}
		if ok && a.Ino == b.Ino {
			c.Written = max(0, a.Size-b.Size)
			c.InPlace = c.Written == 0
		}
		changed = append(changed, c)
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			removed++
		}
	}
	slices.SortFunc(changed, func(x, y Change) int { return cmp.Compare(x.Path, y.Path) })
	return changed, removed
}

// Group is the files of one Pattern.
type Group struct {
	// Pattern is the files' path with pod UIDs, container IDs and numbers
	// replaced (see PatternOf).
	Pattern string `json:"pattern"`
	Files   int    `json:"files"`
	New     int    `json:"new"`
	// Written sums the files' Change.Written; InPlace counts those
	// changed in place, InPlaceBytes their size.
	Written      int64 `json:"written"`
	InPlace      int   `json:"in_place,omitempty"`
	InPlaceBytes int64 `json:"in_place_bytes,omitempty"`
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// PatternOf is path with UUIDs and hexadecimal IDs replaced by "*" and
// numbers by "N", so that one file of every pod or container falls into
// one group: pods/<uid>/etc-hosts is pods/*/etc-hosts. An ID or a number
// is a whole token between the separators / _ . - (k8s stays k8s); an ID
// has 8 hexadecimal digits or more, one of them decimal.
func PatternOf(path string) string {
	p := uuidRE.ReplaceAllString(path, "*")
	var b strings.Builder
	tok := 0 // start of the current token
	for i := 0; i <= len(p); i++ {
		if i < len(p) && !strings.ContainsRune("/_.-", rune(p[i])) {
			continue
		}
		b.WriteString(tokenPattern(p[tok:i]))
		if i < len(p) {
			b.WriteByte(p[i])
		}
		tok = i + 1
	}
	return b.String()
}

// tokenPattern is "N" for a number, "*" for a hexadecimal ID, else t.
func tokenPattern(t string) string {
	digits, hex := 0, 0
	for _, r := range t {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r >= 'a' && r <= 'f':
			hex++
		}
	}
	switch {
	case t == "" || digits+hex < len(t) || digits == 0:
		return t
	case hex == 0 && len(t) < 8:
		return "N"
	case len(t) >= 8:
		return "*"
	default:
		return t
	}
}

// Groups gathers changes by PatternOf, the groups that wrote the most
// first (then the most files, then by pattern).
func Groups(changes []Change) []Group {
	by := map[string]*Group{}
	for _, c := range changes {
		p := PatternOf(c.Path)
		g, ok := by[p]
		if !ok {
			g = &Group{Pattern: p}
			by[p] = g
		}
		g.Files++
		g.Written += c.Written
		if c.InPlace {
			g.InPlace++
			g.InPlaceBytes += c.Size
		}
		if c.New {
			g.New++
		}
	}
	out := make([]Group, 0, len(by))
	for _, g := range by {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.Written, a.Written), cmp.Compare(b.Files, a.Files), cmp.Compare(b.InPlaceBytes, a.InPlaceBytes),
			strings.Compare(a.Pattern, b.Pattern))
	})
	return out
}
