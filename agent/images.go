package agent

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/runtime"
)

// imageError is a container's image problem, shown as its Waiting reason.
type imageError struct {
	Reason, Message string
	Err             error
}

func (e *imageError) Error() string { return e.Message }
func (e *imageError) Unwrap() error { return e.Err }

// ensureImage makes c's image present per its imagePullPolicy and returns
// the image ID to run. Image archives were imported at start, so the common
// air-gapped case is a present image.
// rec receives the kubelet's image events (Pulled, Pulling, Failed ...).
func ensureImage(ctx context.Context, rt runtime.Images, c *v1.Container, clk clock.PassiveClock, rec func(typ, reason, msg string)) (string, error) {
	img, err := rt.ImageStatus(ctx, c.Image)
	present := err == nil
	if err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return "", fmt.Errorf("image status %s: %w", c.Image, err)
	}
	switch {
	case c.ImagePullPolicy == v1.PullNever && !present:
		rec(v1.EventTypeWarning, EventErrImageNeverPull, fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image))
		return "", &imageError{
			Reason:  "ErrImageNeverPull",
			Message: fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image),
			Err:     runtime.ErrNotFound,
		}
	case present && c.ImagePullPolicy != v1.PullAlways:
		rec(v1.EventTypeNormal, EventPulled, fmt.Sprintf("Container image %q already present on machine", c.Image))
		return img.ID, nil
	}
	rec(v1.EventTypeNormal, EventPulling, fmt.Sprintf("Pulling image %q", c.Image))
	start := clk.Now()
	id, err := rt.PullImage(ctx, c.Image, nil)
	if err != nil {
		rec(v1.EventTypeWarning, EventFailed, fmt.Sprintf("Failed to pull image %q: %v", c.Image, err))
		rec(v1.EventTypeWarning, EventFailed, "Error: ErrImagePull")
		return "", &imageError{
			Reason:  "ErrImagePull",
			Message: fmt.Sprintf("failed to pull image %q: %v", c.Image, err),
			Err:     err,
		}
	}
	took := clk.Since(start)
	rec(v1.EventTypeNormal, EventPulled, fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting)", c.Image, took, took))
	return id, nil
}

// PullCredentials finds the credentials to try when pulling an image for a
// pod. Safe for concurrent use.
type PullCredentials interface {
	// ForPod returns the credentials that match image (checklist E.14), in
	// the order to try them (E.16): the pod's imagePullSecrets first, then
	// the node's. Problems with the pod's secrets (missing, wrong type,
	// bad content) come back as warnings, one line each naming the
	// secret; the pull goes on with what is left, as in the kubelet.
	ForPod(pod *v1.Pod, image string) (auths []runtime.AuthConfig, warnings []string)
}
