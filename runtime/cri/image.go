package cri

import (
	"context"
	"fmt"
	"strconv"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/runtime"
)

// ImageStatus returns the image for ref, or an error wrapping
// runtime.ErrNotFound (CRI reports a missing image as an empty status).
func (r *Runtime) ImageStatus(ctx context.Context, ref string) (*runtime.Image, error) {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	resp, err := r.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		return nil, wrap(err, "image status %s", ref)
	}
	if resp.Image == nil || resp.Image.Id == "" {
		return nil, fmt.Errorf("image %s: %w", ref, runtime.ErrNotFound)
	}
	return imageFromCRI(resp.Image), nil
}

// PullImage pulls ref and returns the image ID (CRI's image ref). Pulls can
// be slow, so only the caller's context bounds the call. A failure is the
// runtime's gRPC error as is (never runtime.ErrNotFound): the kubelet shows
// it verbatim in the Failed event and the ErrImagePull message
// (`rpc error: code = NotFound desc = failed to pull and unpack image ...`).
func (r *Runtime) PullImage(ctx context.Context, ref string, auth *runtime.AuthConfig) (string, error) {
	req := &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}
	if auth != nil {
		req.Auth = &runtimeapi.AuthConfig{
			Username: auth.Username, Password: auth.Password, Auth: auth.Auth,
			ServerAddress: auth.ServerAddress, IdentityToken: auth.IdentityToken, RegistryToken: auth.RegistryToken,
		}
	}
	resp, err := r.img.PullImage(ctx, req)
	if err != nil {
		return "", err
	}
	return resp.ImageRef, nil
}

// ListImages lists all images.
func (r *Runtime) ListImages(ctx context.Context) ([]*runtime.Image, error) {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	resp, err := r.img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return nil, wrap(err, "list images")
	}
	out := make([]*runtime.Image, 0, len(resp.Images))
	for _, img := range resp.Images {
		out = append(out, imageFromCRI(img))
	}
	return out, nil
}

// RemoveImage removes an image. Idempotent.
func (r *Runtime) RemoveImage(ctx context.Context, ref string) error {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	_, err := r.img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil && !isNotFound(err) {
		return wrap(err, "remove image %s", ref)
	}
	return nil
}

// ImageFsInfo reports the image filesystems' use.
func (r *Runtime) ImageFsInfo(ctx context.Context) ([]runtime.FilesystemUsage, error) {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	resp, err := r.img.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return nil, wrap(err, "image fs info")
	}
	out := make([]runtime.FilesystemUsage, 0, len(resp.ImageFilesystems))
	for _, fs := range resp.ImageFilesystems {
		u := runtime.FilesystemUsage{Mountpoint: fs.GetFsId().GetMountpoint()}
		u.UsedBytes = fs.GetUsedBytes().GetValue()
		u.InodesUsed = fs.GetInodesUsed().GetValue()
		out = append(out, u)
	}
	return out, nil
}

// imageFromCRI maps an image; User is the user name, else the numeric UID.
func imageFromCRI(img *runtimeapi.Image) *runtime.Image {
	out := &runtime.Image{ID: img.Id, RepoTags: img.RepoTags, RepoDigests: img.RepoDigests, Size: img.Size, User: img.Username, Pinned: img.Pinned}
	if out.User == "" && img.Uid != nil {
		out.User = strconv.FormatInt(img.Uid.Value, 10)
	}
	return out
}
