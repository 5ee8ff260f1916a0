package vm

import (
	"context"
	"fmt"
	"path"
	"sort"

	"github.com/skiffnode/skiff/internal/imagebuild"
)

// The same host tree that becomes the VM's initramfs also becomes the node
// container image (test/images/build -node-image): the programs and their
// shared libraries are found the same way, and the tree is written as an
// image layer instead of a cpio archive.

// NodeCNIPlugins are the CNI plugins skiff's managed containerd runs:
// bridge, host-local and portmap from network.BridgeConflist, and loopback,
// which the CRI plugin sets up itself. The rest of Debian's
// containernetworking-plugins (34 MB) is left out of the node image.
var NodeCNIPlugins = []string{"bridge", "host-local", "loopback", "portmap"}

// AddNodeRuntime adds what a node container takes from the host besides
// skiff and its runtime (AddBundledRuntime): a static busybox with its
// applet links (a shell for debugging), the CNI plugins named in plugins
// (from /usr/lib/cni; nil: all), and iptables with its extensions (the
// bridge plugin's masquerading and the portmap plugin), each with its
// shared libraries. The host's containerd and runc stay out.
func AddNodeRuntime(ctx context.Context, r *Rootfs, plugins []string) error {
	steps := []func(context.Context, *Rootfs, Image) error{addBusybox, addIptables}
	for _, step := range steps {
		if err := step(ctx, r, Image{}); err != nil {
			return fmt.Errorf("node runtime: %w", err)
		}
	}
	if plugins == nil {
		return addCNI(ctx, r, Image{})
	}
	for _, name := range plugins {
		p := path.Join(cniDir, name)
		if err := r.AddExecutable(ctx, p, p); err != nil {
			return fmt.Errorf("CNI plugin %s (package containernetworking-plugins): %w", name, err)
		}
	}
	return nil
}

// ImageFiles returns the tree as the entries of an image layer, sorted by
// path. Device nodes are left out: the container runtime provides /dev.
func (r *Rootfs) ImageFiles() []imagebuild.File {
	names := make([]string, 0, len(r.entries))
	for name, e := range r.entries {
		if e.kind != kindCharDev {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	files := make([]imagebuild.File, 0, len(names))
	for _, name := range names {
		e := r.entries[name]
		f := imagebuild.File{Path: name, Mode: int64(e.perm)}
		switch e.kind {
		case kindSymlink:
			f.Linkname = e.target
		case kindFile:
			f.HostPath = e.host
			if e.host == "" {
				// A non-nil Data marks a regular file, even an empty one.
				f.Data = append([]byte{}, e.data...)
			}
		}
		files = append(files, f)
	}
	return files
}
