package main

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"

	"github.com/skiffnode/skiff/internal/imagebuild"
)

// formatVersion is part of every inputs hash; bump it when the layout this
// program produces changes in a way the file list does not show.
const formatVersion = "skiff-test-images/1"

// image is one image to write.
type image struct {
	ref   string
	files []imagebuild.File
	cfg   imagebuild.Config
}

// writeIfChanged writes the archive at out unless out exists and its stored
// inputs hash (out + ".inputs") equals the current one.
func (im image) writeIfChanged(out string, force bool) error {
	sum, err := im.inputsHash()
	if err != nil {
		return err
	}
	hashFile := out + ".inputs"
	if !force && upToDate(out, hashFile, sum) {
		fmt.Printf("%s: up to date (%s)\n", out, im.ref)
		return nil
	}
	// Remove the stale hash first: a crash between the two writes below
	// must not leave an old archive that looks current.
	if err := os.Remove(hashFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", hashFile, err)
	}
	if err := imagebuild.WriteArchive(out, im.ref, im.files, im.cfg); err != nil {
		return err
	}
	if err := os.WriteFile(hashFile, []byte(sum+"\n"), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", hashFile, err)
	}
	fmt.Printf("%s: built %s\n", out, im.ref)
	return nil
}

func upToDate(out, hashFile, sum string) bool {
	if _, err := os.Stat(out); err != nil {
		return false
	}
	b, err := os.ReadFile(hashFile)
	return err == nil && strings.TrimSpace(string(b)) == sum
}

// inputsHash hashes everything the archive is made of: reference, config
// and every file's path, mode, link target and content.
func (im image) inputsHash() (string, error) {
	h := sha256.New()
	cfg, err := json.Marshal(im.cfg)
	if err != nil {
		return "", fmt.Errorf("hash config: %w", err)
	}
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", formatVersion, im.ref, cfg)
	files := append([]imagebuild.File(nil), im.files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%o\x00%s\x00%t\x00", f.Path, f.Mode, f.Linkname, f.Data != nil)
		h.Write(f.Data)
		if f.HostPath != "" {
			if err := hashFile(h, f.HostPath); err != nil {
				return "", err
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashFile(w io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("hash input: %w", err)
	}
	defer f.Close()
	if _, err := io.Copy(w, f); err != nil {
		return fmt.Errorf("hash input %s: %w", p, err)
	}
	return nil
}

const (
	// The user "grouped" (4242) is also in the group imgextra (4343), which
	// only the image gives it: supplementalGroupsPolicy Merge keeps it,
	// Strict drops it (TestSupplementalGroupsPolicy).
	passwd = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n" +
		"grouped:x:4242:4242:grouped:/tmp:/bin/sh\n"
	group = "root:x:0:\nnobody:x:65534:\ngrouped:x:4242:\nimgextra:x:4343:grouped\n"
	// defaultPath lists every directory busybox installs applets into.
	defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// busyboxFiles returns the busybox root filesystem: the binary at
// /bin/busybox, a symlink to it for every applet, and the few directories
// and files a shell expects.
func busyboxFiles(ctx context.Context, bin string) ([]imagebuild.File, error) {
	if err := checkStatic(bin); err != nil {
		return nil, err
	}
	applets, err := listApplets(ctx, bin)
	if err != nil {
		return nil, err
	}
	files := []imagebuild.File{
		{Path: "bin/busybox", Mode: 0o755, HostPath: bin},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Path: "etc/group", Mode: 0o644, Data: []byte(group)},
		{Path: "tmp", Mode: 0o1777},
		{Path: "root", Mode: 0o700},
	}
	dirs := map[string]bool{"bin": true, "etc": true, "tmp": true, "root": true}
	for _, d := range []string{"dev", "proc", "sys", "var", "usr", "usr/bin", "usr/sbin", "sbin", "home"} {
		dirs[d] = true
		files = append(files, imagebuild.File{Path: d, Mode: 0o755})
	}
	files = append(files, imagebuild.File{Path: "bin", Mode: 0o755}, imagebuild.File{Path: "etc", Mode: 0o755})
	for _, a := range applets {
		if a == "bin/busybox" {
			continue
		}
		if d := path.Dir(a); !dirs[d] {
			dirs[d] = true
			files = append(files, imagebuild.File{Path: d, Mode: 0o755})
		}
		files = append(files, imagebuild.File{Path: a, Mode: 0o777, Linkname: "/bin/busybox"})
	}
	return files, nil
}

// listApplets asks busybox where each applet lives ("usr/bin/awk"); older
// builds without --list-full get every applet in bin/.
func listApplets(ctx context.Context, bin string) ([]string, error) {
	out, err := exec.CommandContext(ctx, bin, "--list-full").Output()
	full := err == nil
	if !full {
		if out, err = exec.CommandContext(ctx, bin, "--list").Output(); err != nil {
			return nil, fmt.Errorf("list busybox applets: %w", err)
		}
	}
	var applets []string
	seen := map[string]bool{}
	for _, line := range strings.Fields(string(out)) {
		p := strings.TrimPrefix(line, "/")
		if !full {
			p = "bin/" + p
		}
		if !seen[p] && !strings.Contains(path.Base(p), "..") {
			seen[p] = true
			applets = append(applets, p)
		}
	}
	if len(applets) == 0 {
		return nil, fmt.Errorf("busybox %s lists no applets", bin)
	}
	return applets, nil
}

// checkStatic refuses a dynamically linked busybox (Debian's busybox
// package instead of busybox-static): it would not run in an image without
// a libc.
func checkStatic(bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return fmt.Errorf("open busybox (install busybox-static): %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; install busybox-static", bin)
		}
	}
	return nil
}

func busyboxConfig() imagebuild.Config {
	return imagebuild.Config{Cmd: []string{"sh"}, Env: []string{defaultPath}}
}

// testserverFiles is busybox plus the test server at /testserver.
func testserverFiles(busybox []imagebuild.File, bin string) []imagebuild.File {
	files := append([]imagebuild.File(nil), busybox...)
	return append(files, imagebuild.File{Path: "testserver", Mode: 0o755, HostPath: bin})
}

func testserverConfig() imagebuild.Config {
	return imagebuild.Config{Entrypoint: []string{"/testserver"}, Env: []string{defaultPath}}
}
