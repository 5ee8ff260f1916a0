package testregistry

import (
	"context"
	"fmt"
	"runtime"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Pushed describes an image or index in the registry.
type Pushed struct {
	// Ref is the reference it was pushed as ("127.0.0.1:port/name:tag").
	Ref string
	// Digest is the manifest's (or index's) digest, "sha256:...";
	// Ref's repository + "@" + Digest pulls the same content.
	Digest string
	// ImageID is the config digest of the image a runtime on this
	// machine's platform gets, which CRI reports as the image ID.
	ImageID string
}

// ByDigest is the reference by digest ("127.0.0.1:port/name@sha256:...").
func (p Pushed) ByDigest() string {
	ref, err := name.ParseReference(p.Ref, name.Insecure)
	if err != nil {
		return ""
	}
	return ref.Context().Name() + "@" + p.Digest
}

// remoteOptions are the options every push uses: the registry's CA and
// its credentials.
func (r *Registry) remoteOptions(ctx context.Context) []remote.Option {
	opts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(r.Transport())}
	if r.opts.Username != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: r.opts.Username, Password: r.opts.Password}))
	}
	return opts
}

// parseRef parses repo (a "name:tag") in this registry.
func (r *Registry) parseRef(repo string) (name.Tag, error) {
	opts := []name.Option{name.StrictValidation}
	if r.opts.PlainHTTP {
		opts = append(opts, name.Insecure)
	}
	tag, err := name.NewTag(r.Ref(repo), opts...)
	if err != nil {
		return name.Tag{}, fmt.Errorf("testregistry: reference %q: %w", repo, err)
	}
	return tag, nil
}

// PushImage pushes img as repo ("name:tag").
func (r *Registry) PushImage(ctx context.Context, img v1.Image, repo string) (Pushed, error) {
	tag, err := r.parseRef(repo)
	if err != nil {
		return Pushed{}, err
	}
	if err := remote.Write(tag, img, r.remoteOptions(ctx)...); err != nil {
		return Pushed{}, fmt.Errorf("testregistry: push %s: %w", tag, err)
	}
	return describe(tag.String(), img)
}

// PushArchive pushes the image of a docker-save archive (as
// internal/imagebuild and test/images/build write them; one image per
// archive) as repo ("name:tag").
func (r *Registry) PushArchive(ctx context.Context, archive, repo string) (Pushed, error) {
	img, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		return Pushed{}, fmt.Errorf("testregistry: read %s: %w", archive, err)
	}
	return r.PushImage(ctx, img, repo)
}

// PushArchiveIndex is PushIndex of the image of a docker-save archive.
func (r *Registry) PushArchiveIndex(ctx context.Context, archive, repo string) (Pushed, error) {
	img, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		return Pushed{}, fmt.Errorf("testregistry: read %s: %w", archive, err)
	}
	return r.PushIndex(ctx, img, repo)
}

// PushIndex pushes a multi-arch index of img as repo: a linux/amd64 and a
// linux/arm64 entry. The entry of this machine's architecture is img
// itself; the other is a copy whose config names the other architecture
// (so it has another digest and image ID). ImageID in the result is img's.
func (r *Registry) PushIndex(ctx context.Context, img v1.Image, repo string) (Pushed, error) {
	tag, err := r.parseRef(repo)
	if err != nil {
		return Pushed{}, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.DockerManifestList)
	for _, arch := range []string{"amd64", "arm64"} {
		entry := img
		if arch != runtime.GOARCH {
			if entry, err = withArch(img, arch); err != nil {
				return Pushed{}, err
			}
		}
		mt, err := entry.MediaType()
		if err != nil {
			return Pushed{}, fmt.Errorf("testregistry: media type: %w", err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: entry, Descriptor: v1.Descriptor{
			MediaType: mt, Platform: &v1.Platform{OS: "linux", Architecture: arch},
		}})
	}
	if err := remote.WriteIndex(tag, idx, r.remoteOptions(ctx)...); err != nil {
		return Pushed{}, fmt.Errorf("testregistry: push index %s: %w", tag, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return Pushed{}, fmt.Errorf("testregistry: index digest: %w", err)
	}
	id, err := img.ConfigName()
	if err != nil {
		return Pushed{}, fmt.Errorf("testregistry: config digest: %w", err)
	}
	return Pushed{Ref: tag.String(), Digest: d.String(), ImageID: id.String()}, nil
}

// withArch returns img with its config's architecture set to arch.
func withArch(img v1.Image, arch string) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("testregistry: image config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture = arch
	out, err := mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("testregistry: set architecture: %w", err)
	}
	return out, nil
}

// describe returns the Pushed of img pushed as ref.
func describe(ref string, img v1.Image) (Pushed, error) {
	d, err := img.Digest()
	if err != nil {
		return Pushed{}, fmt.Errorf("testregistry: manifest digest: %w", err)
	}
	id, err := img.ConfigName()
	if err != nil {
		return Pushed{}, fmt.Errorf("testregistry: config digest: %w", err)
	}
	return Pushed{Ref: ref, Digest: d.String(), ImageID: id.String()}, nil
}
