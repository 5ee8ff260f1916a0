package containerd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"

	"github.com/skiffnode/skiff/runtime"
)

var _ runtime.ImageImporter = (*Importer)(nil)

// Importer loads image archives into containerd's "k8s.io" namespace and
// unpacks them for the overlayfs snapshotter, so the CRI plugin sees them as
// ready to run. Safe for concurrent use; importing an archive twice is
// harmless (the image names are updated in place).
type Importer struct {
	client *containerd.Client
	logger *slog.Logger
}

// ImporterOption configures an Importer.
type ImporterOption func(*Importer)

// WithLogger sets the Importer's logger (default: discard).
func WithLogger(l *slog.Logger) ImporterOption {
	return func(i *Importer) { i.logger = l }
}

// NewImporter connects to containerd's gRPC socket at address (see
// Managed.Address). The caller must Close it.
func NewImporter(address string, opts ...ImporterOption) (*Importer, error) {
	client, err := containerd.New(address, containerd.WithDefaultNamespace(Namespace))
	if err != nil {
		return nil, fmt.Errorf("connect to containerd at %s: %w", address, err)
	}
	i := &Importer{client: client, logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(i)
	}
	return i, nil
}

// Close closes the connection to containerd.
func (i *Importer) Close() error { return i.client.Close() }

// ImportArchive imports every image of the docker-archive (`docker save`)
// or OCI-layout tarball at path, for the node's platform, unpacks each and
// returns their names (normalized, e.g. "docker.io/library/busybox:latest").
// Unnamed images and OCI entries named only by a tag are skipped.
func (i *Importer) ImportArchive(ctx context.Context, path string) ([]string, error) {
	ctx = namespaces.WithNamespace(ctx, Namespace)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("import image archive: %w", err)
	}
	defer f.Close()
	imgs, err := i.client.Import(ctx, f, containerd.WithImageRefTranslator(ociRefName))
	if err != nil {
		return nil, fmt.Errorf("import image archive %s: %w", path, err)
	}
	names := make([]string, 0, len(imgs))
	for _, img := range imgs {
		image := containerd.NewImage(i.client, img)
		unpacked, err := image.IsUnpacked(ctx, DefaultSnapshotter)
		if err != nil {
			return nil, fmt.Errorf("import image archive %s: check %s: %w", path, img.Name, err)
		}
		if !unpacked {
			if err := image.Unpack(ctx, DefaultSnapshotter); err != nil {
				return nil, fmt.Errorf("import image archive %s: unpack %s: %w", path, img.Name, err)
			}
		}
		names = append(names, img.Name)
	}
	i.logger.Info("imported image archive", "path", path, "images", names)
	return names, nil
}

// ociRefName turns an OCI index's org.opencontainers.image.ref.name into an
// image name: full references are normalized, bare tags ("latest") are
// dropped because they name no repository.
func ociRefName(ref string) string {
	if !strings.ContainsAny(ref, "/:@") {
		return ""
	}
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return ""
	}
	return named.String()
}

// HasImage reports whether containerd has the image ref (normalized like
// CRI does) and it is unpacked for the CRI snapshotter.
func (i *Importer) HasImage(ctx context.Context, ref string) (bool, error) {
	ctx = namespaces.WithNamespace(ctx, Namespace)
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return false, fmt.Errorf("image reference %q: %w", ref, err)
	}
	img, err := i.client.GetImage(ctx, named.String())
	if errdefs.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look up image %s: %w", ref, err)
	}
	unpacked, err := img.IsUnpacked(ctx, DefaultSnapshotter)
	if err != nil {
		return false, fmt.Errorf("look up image %s: %w", ref, err)
	}
	return unpacked, nil
}

// ImportDir imports every *.tar file of dir (not recursively, in name
// order) and returns all image names. Other entries are skipped with a log
// line. A missing dir is empty. Failing archives do not stop the others;
// the returned error joins one error per failed file, each naming it.
func (i *Importer) ImportDir(ctx context.Context, dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("import images from %s: %w", dir, err)
	}
	sort.Slice(entries, func(a, b int) bool { return entries[a].Name() < entries[b].Name() })
	var (
		names []string
		errs  []error
	)
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".tar") {
			i.logger.Info("skipping non-archive in image directory (want a regular *.tar file)", "path", path)
			continue
		}
		n, err := i.ImportArchive(ctx, path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		names = append(names, n...)
	}
	return names, errors.Join(errs...)
}
