package main

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/skiffnode/skiff/internal/imagebuild"
	"github.com/skiffnode/skiff/internal/testregistry"
)

// The e2e images the NodeConformance focus uses, as
// k8s.io/kubernetes/test/utils/image names them at the release
// test/conformance/k8s pins (TestHarnessImagesMatchUpstream checks; repository
// under registry.k8s.io, and tag). Each is rebuilt here from local
// binaries: the busybox archive of `make images` (Debian's busybox-static)
// as the base layer, plus agnhost, skiff-pause or nnp built from the
// pinned Kubernetes sources. Images not listed (sample-apiserver, etcd,
// ...) are missing: their tests fail pulling, and the summary says so.
const (
	agnhostRepo = "e2e-test-images/agnhost:2.66.1"
	// agnhostPrev (AgnhostPrev): the StatefulSet, Deployment and
	// DaemonSet update tests switch between two agnhost tags and compare
	// the names only; the same build with another digest.
	agnhostPrevRepo = "e2e-test-images/agnhost:2.55"
	busyboxRepo     = "e2e-test-images/busybox:1.37.0-2"
	pauseRepo       = "pause:3.10.2"
	nonrootRepo     = "e2e-test-images/nonroot:1.5"
	nonewprivsRepo  = "e2e-test-images/nonewprivs:1.4"
	kittenRepo      = "e2e-test-images/kitten:1.8"
	nautilusRepo    = "e2e-test-images/nautilus:1.8"
	// glibc-dns-testing: busybox (Debian's busybox-static is built with
	// glibc); the hostnameOverride tests run sh, hostname and hostname -f.
	glibcDNSRepo = "e2e-test-images/glibc-dns-testing:2.1.1"
	// nginx: busybox's httpd serving /usr/share/nginx/html on :80, as
	// the tests use it (a web server on 80, or only its name).
	nginxRepo = "e2e-test-images/nginx:1.27.0-2"
)

// imageInputs are the local files the images are made of.
type imageInputs struct {
	busyboxTar string // _output/images/busybox.tar
	agnhost    string // static agnhost binary
	pause      string // static pause binary (bin/skiff-pause)
	nnp        string // static nnp binary (test/images/nonewprivs)
	k8sSrc     string // k8s.io/kubernetes module directory (agnhost's porter certs, kitten/nautilus pages)
	curl       string // the host's curl, for agnhost ("" or missing: none)
	nc         string // the host's nc.openbsd, for agnhost ("" or missing: busybox's)
	sh         string // the host's dash, agnhost's /bin/sh ("" or missing: busybox's)
	bash       string // the host's bash, agnhost's /bin/bash ("" or missing: none)
	// The host's dig (Debian's bind9-dnsutils) and getent (libc-bin), which
	// the DNS tests' probes run in agnhost and glibc-dns-testing ("" or
	// missing: none; those tests fail).
	dig, getent string
	// The add-ons' (addons.go; all empty without -addons): static
	// kube-proxy and coredns binaries, and the host's nft (Debian's
	// nftables), which kube-proxy's nftables mode runs.
	kubeProxy, coredns, nft string
}

const (
	defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// agnhost's upstream image (alpine) has these users and groups; tests
	// look for user-defined-in-image and group-defined-in-image.
	agnhostPasswd = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n" +
		"user-defined-in-image:x:1000:1000:Linux User,,,:/home/user-defined-in-image:/bin/sh\n"
	agnhostGroup = "root:x:0:\nnobody:x:65534:\nuser-defined-in-image:x:1000:\n" +
		"group-defined-in-image:x:50000:user-defined-in-image\n"
	// agnhostOSRelease: upstream agnhost and the images built on it
	// (kitten, nautilus) are alpine; the image volume tests read
	// /etc/os-release of kitten and look for "Alpine Linux".
	agnhostOSRelease = "NAME=\"Alpine Linux\"\nID=alpine\nPRETTY_NAME=\"Alpine Linux (skiff's conformance harness: Debian's busybox-static base)\"\n"
)

// buildAndPush builds every image and pushes it to reg under its upstream
// repository path, and returns the upstream references pushed.
func buildAndPush(ctx context.Context, in imageInputs, reg *testregistry.Registry) ([]string, error) {
	base, err := tarball.ImageFromPath(in.busyboxTar, nil)
	if err != nil {
		return nil, fmt.Errorf("busybox archive (make images): %w", err)
	}
	// Upstream's busybox image has every applet in /bin (tests run
	// /bin/sysctl, ...); Debian's puts some in /sbin, /usr/bin...
	links, err := binLinks(base)
	if err != nil {
		return nil, err
	}
	busybox, err := extend(base, links, func(*v1.Config) {})
	if err != nil {
		return nil, err
	}
	porter := filepath.Join(in.k8sSrc, "test/images/agnhost/porter")
	// Upstream agnhost (alpine) has curl and netcat-openbsd, which the
	// networking tests run in it; the host's go in with their shared
	// libraries.
	curl, err := hostBinary(ctx, in.curl, "usr/bin/curl")
	if err != nil {
		return nil, err
	}
	// And OpenBSD's nc: busybox's has no -u, which the UDP tests use.
	nc, err := hostBinary(ctx, in.nc, "usr/bin/nc")
	if err != nil {
		return nil, err
	}
	// Debian's static busybox runs its applets in preference to PATH
	// (FEATURE_SH_STANDALONE): under its sh, "nc" is busybox's whatever
	// PATH says. Alpine's busybox (upstream agnhost) does not, so
	// agnhost's /bin/sh is the host's dash, which looks commands up in PATH.
	sh, err := hostBinary(ctx, in.sh, "bin/sh")
	if err != nil {
		return nil, err
	}
	// Upstream agnhost has bash too: probe tests run /bin/bash -c.
	bash, err := hostBinary(ctx, in.bash, "bin/bash")
	if err != nil {
		return nil, err
	}
	pause, err := imagebuild.Build([]imagebuild.File{{Path: "pause", Mode: 0o755, HostPath: in.pause}},
		imagebuild.Config{Entrypoint: []string{"/pause"}})
	if err != nil {
		return nil, err
	}
	// Upstream agnhost serves pause:<tag> "testing" from /var/registry
	// (fake-registry-server, the private-registry tests' registry pod).
	registry, err := fakeRegistryFiles(pause, "pause", "testing")
	if err != nil {
		return nil, err
	}
	// The DNS tests' probes run dig and getent in agnhost (upstream's
	// alpine has bind-tools) and in glibc-dns-testing (debian + dnsutils).
	dig, err := hostBinary(ctx, in.dig, "usr/bin/dig")
	if err != nil {
		return nil, err
	}
	getent, err := hostBinary(ctx, in.getent, "usr/bin/getent")
	if err != nil {
		return nil, err
	}
	dnsTools := append(dig, getent...)
	glibcDNS, err := extend(busybox, dnsTools, func(*v1.Config) {})
	if err != nil {
		return nil, err
	}
	tools := append(append(append(append(append(curl, nc...), sh...), bash...), registry...), dnsTools...)
	agnhost, err := extend(busybox, append(tools, []imagebuild.File{
		{Path: "agnhost", Mode: 0o755, HostPath: in.agnhost},
		{Path: "agnhost-2", Linkname: "agnhost"},
		{Path: "uploads", Mode: 0o755},
		{Path: "localhost.crt", Mode: 0o644, HostPath: filepath.Join(porter, "localhost.crt")},
		{Path: "localhost.key", Mode: 0o644, HostPath: filepath.Join(porter, "localhost.key")},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte(agnhostPasswd)},
		{Path: "etc/group", Mode: 0o644, Data: []byte(agnhostGroup)},
		{Path: "home/user-defined-in-image", Mode: 0o755},
		{Path: "etc/os-release", Mode: 0o644, Data: []byte(agnhostOSRelease)},
	}...), func(c *v1.Config) { c.Entrypoint, c.Cmd = []string{"/agnhost"}, []string{"pause"} })
	if err != nil {
		return nil, err
	}
	page := func(name string) (v1.Image, error) {
		html := filepath.Join(in.k8sSrc, "test/images", name, "html")
		return extend(agnhost, []imagebuild.File{
			{Path: name + ".jpg", Mode: 0o644, HostPath: filepath.Join(html, name+".jpg")},
			{Path: "data.json", Mode: 0o644, HostPath: filepath.Join(html, "data.json")},
		}, func(c *v1.Config) { c.Cmd = []string{"test-webserver"} })
	}
	kitten, err := page("kitten")
	if err != nil {
		return nil, err
	}
	nautilus, err := page("nautilus")
	if err != nil {
		return nil, err
	}
	agnhostPrev, err := mutateConfig(agnhost, func(c *v1.Config) {
		c.Labels = map[string]string{"io.skiff.conformance": "agnhost 2.55 (the 2.66.1 build)"}
	})
	if err != nil {
		return nil, err
	}
	nonroot, err := mutateConfig(busybox, func(c *v1.Config) { c.User = "1234" })
	if err != nil {
		return nil, err
	}
	nonewprivs, err := extend(busybox, []imagebuild.File{
		{Path: "usr/local/bin/nnp", Mode: 0o4755, HostPath: in.nnp},
	}, func(c *v1.Config) { c.Cmd = []string{"nnp"} })
	if err != nil {
		return nil, err
	}
	nginx, err := extend(busybox, []imagebuild.File{
		{Path: "usr/share/nginx/html/index.html", Mode: 0o644, Data: []byte("<h1>Welcome to nginx!</h1>\n")},
	}, func(c *v1.Config) { c.Cmd = []string{"httpd", "-f", "-p", "80", "-h", "/usr/share/nginx/html"} })
	if err != nil {
		return nil, err
	}
	images := []repoImage{
		{agnhostRepo, agnhost}, {agnhostPrevRepo, agnhostPrev}, {busyboxRepo, busybox}, {pauseRepo, pause}, {nonrootRepo, nonroot},
		{nonewprivsRepo, nonewprivs}, {kittenRepo, kitten}, {nautilusRepo, nautilus}, {glibcDNSRepo, glibcDNS}, {nginxRepo, nginx},
	}
	if in.kubeProxy != "" {
		addons, err := addonImages(ctx, in, busybox)
		if err != nil {
			return nil, err
		}
		images = append(images, addons...)
	}
	var refs []string
	for _, im := range images {
		// An index (amd64 and arm64 entries), as registry.k8s.io serves
		// its images.
		if _, err := reg.PushIndex(ctx, im.img, im.repo); err != nil {
			return nil, err
		}
		refs = append(refs, "registry.k8s.io/"+im.repo)
	}
	return refs, nil
}

// repoImage is an image and its repository path under registry.k8s.io.
type repoImage struct {
	repo string
	img  v1.Image
}

// addonImages builds kube-proxy's image (busybox, the binary at
// /usr/local/bin/kube-proxy as kubeadm runs it, the host's nft with its
// libraries) and CoreDNS's (the static binary as /coredns, its
// entrypoint, as upstream's).
func addonImages(ctx context.Context, in imageInputs, busybox v1.Image) ([]repoImage, error) {
	if in.nft == "" {
		return nil, fmt.Errorf("-addons: kube-proxy's nftables mode needs nft (-nft; Debian's nftables package)")
	}
	if _, err := os.Stat(in.nft); err != nil {
		return nil, fmt.Errorf("-addons: kube-proxy's nftables mode needs nft (Debian's nftables package): %w", err)
	}
	nft, err := hostBinary(ctx, in.nft, "usr/sbin/nft")
	if err != nil {
		return nil, err
	}
	kubeProxy, err := extend(busybox, append(nft, imagebuild.File{Path: "usr/local/bin/kube-proxy", Mode: 0o755, HostPath: in.kubeProxy}), func(*v1.Config) {})
	if err != nil {
		return nil, err
	}
	coredns, err := imagebuild.Build([]imagebuild.File{{Path: "coredns", Mode: 0o755, HostPath: in.coredns}},
		imagebuild.Config{Entrypoint: []string{"/coredns"}})
	if err != nil {
		return nil, err
	}
	return []repoImage{{kubeProxyRepo, kubeProxy}, {corednsRepo, coredns}}, nil
}

// extend adds a layer of files on top of base and edits its config.
func extend(base v1.Image, all []imagebuild.File, edit func(*v1.Config)) (v1.Image, error) {
	var files []imagebuild.File
	seen := map[string]bool{}
	for _, f := range all {
		if seen[f.Path] {
			continue // a shared library two host binaries need
		}
		seen[f.Path] = true
		files = append(files, f)
		if f.HostPath != "" {
			if _, err := os.Stat(f.HostPath); err != nil {
				return nil, fmt.Errorf("image input: %w", err)
			}
		}
	}
	layerImg, err := imagebuild.Build(files, imagebuild.Config{})
	if err != nil {
		return nil, err
	}
	layers, err := layerImg.Layers()
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(base, layers...)
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	return mutateConfig(img, edit)
}

// mutateConfig returns img with edit applied to its runtime config (and
// the base's PATH when the image has no environment).
func mutateConfig(img v1.Image, edit func(*v1.Config)) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	cf = cf.DeepCopy()
	if len(cf.Config.Env) == 0 {
		cf.Config.Env = []string{defaultPath}
	}
	edit(&cf.Config)
	out, err := mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("set image config: %w", err)
	}
	return out, nil
}

// hostBinary returns the files that put the host's dynamically linked
// executable bin at path in an image: the executable and every shared
// object ldd lists (the dynamic loader included), at their host paths.
// An empty bin, or one that does not exist, gives no files.
func hostBinary(ctx context.Context, bin, path string) ([]imagebuild.File, error) {
	if bin == "" {
		return nil, nil
	}
	if _, err := os.Stat(bin); err != nil {
		logf("no %s on this host (%v): images that need it go without", bin, err)
		return nil, nil
	}
	out, err := exec.CommandContext(ctx, "ldd", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", bin, err)
	}
	files := []imagebuild.File{{Path: path, Mode: 0o755, HostPath: bin}}
	seen := map[string]bool{}
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "/") && !seen[f] {
			seen[f] = true
			files = append(files, imagebuild.File{Path: strings.TrimPrefix(f, "/"), Mode: 0o755, HostPath: f})
		}
	}
	return files, nil
}

// binLinks returns a /bin/<applet> symlink to /bin/busybox for every
// busybox applet of img that lives elsewhere.
func binLinks(img v1.Image) ([]imagebuild.File, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	inBin := map[string]bool{}
	var others []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read busybox image: %w", err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		if path.Dir(name) == "bin" {
			inBin[path.Base(name)] = true
		} else if h.Typeflag == tar.TypeSymlink && h.Linkname == "/bin/busybox" {
			others = append(others, path.Base(name))
		}
	}
	var files []imagebuild.File
	for _, a := range others {
		if !inBin[a] {
			inBin[a] = true
			files = append(files, imagebuild.File{Path: "bin/" + a, Linkname: "/bin/busybox"})
		}
	}
	return files, nil
}
