package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/images"
	"github.com/skiffnode/skiff/runtime"
)

// Waiting reasons of image problems, as the kubelet's
// (pkg/kubelet/images/types.go).
const (
	reasonErrImagePull      = "ErrImagePull"
	reasonImagePullBackOff  = "ImagePullBackOff"
	reasonInvalidImageName  = "InvalidImageName"
	reasonErrImageNeverPull = "ErrImageNeverPull"
	reasonImageInspectError = "ImageInspectError"
)

// ImagePuller pulls images for the agent's pods; *images.Puller implements
// it (serialized or bounded pulls, one pull per image at a time).
type ImagePuller interface {
	// Pull makes ref present with the first of auths that works (none:
	// anonymous) and returns the image. Blocking; ctx bounds the wait.
	// Safe for concurrent use.
	Pull(ctx context.Context, ref string, auths []runtime.AuthConfig) (images.PullResult, error)
}

// PullCredentials finds the credentials to try when pulling an image for a
// pod. Safe for concurrent use.
type PullCredentials interface {
	// ForPod returns the credentials that match image (checklist E.14), in
	// the order to try them (E.16): the pod's imagePullSecrets first, then
	// the node's. missing names the pod's pull secrets that could not be
	// retrieved (the kubelet's FailedToRetrieveImagePullSecret event);
	// warnings are the other problems with them (wrong type, bad
	// content), one line each naming the secret, which the kubelet only
	// logs. The pull goes on with what is left, as in the kubelet.
	ForPod(pod *v1.Pod, image string) (auths []runtime.AuthConfig, missing, warnings []string)
}

// imageError is a container's image problem, shown as its Waiting reason.
type imageError struct {
	Reason, Message string
	Err             error
	// retry: when to look again (0: the worker's usual retry delay).
	retry time.Duration
}

func (e *imageError) Error() string { return e.Message }
func (e *imageError) Unwrap() error { return e.Err }

// pullBackoffKey names the pull back-off entry of image in the pod's
// worker: the kubelet keys it by pod UID and image, so containers of one
// pod with the same image share it.
func pullBackoffKey(image string) string { return "pull/" + image }

// ensureImage makes c's image present per its imagePullPolicy, as the
// kubelet's EnsureImageExists, recording its events, and returns the image
// ID to run. A bad reference is InvalidImageName without any runtime call;
// Always pulls at every launch (the runtime resolves the tag to a digest
// and fetches only what it lacks: E.4); IfNotPresent pulls an absent image;
// Never fails on one (ErrImageNeverPull). An empty policy (pods that were
// not defaulted) counts as IfNotPresent. Errors are *imageError, except a
// pull cancelled because the pod is being killed or the agent stops.
// Blocking: the worker goroutine holds no start slot while it pulls.
func (w *podWorker) ensureImage(ctx context.Context, c *v1.Container) (string, error) {
	if _, err := images.Normalize(c.Image); err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: %v", c.Image, err)
		w.event(c.Name, v1.EventTypeWarning, EventInspectFailed, msg)
		return "", &imageError{Reason: reasonInvalidImageName, Message: msg, Err: err}
	}
	if c.ImagePullPolicy != v1.PullAlways {
		img, err := w.d.rt.ImageStatus(ctx, c.Image)
		switch {
		case err == nil:
			w.event(c.Name, v1.EventTypeNormal, EventPulled, fmt.Sprintf("Container image %q already present on machine", c.Image))
			return img.ID, nil
		case ctx.Err() != nil:
			// The agent stops or the pod is killed: no inspect failure.
			return "", fmt.Errorf("image status of %s cancelled: %w", c.Image, err)
		case !errors.Is(err, runtime.ErrNotFound):
			msg := fmt.Sprintf("Failed to inspect image %q: %v", c.Image, err)
			w.event(c.Name, v1.EventTypeWarning, EventInspectFailed, msg)
			return "", &imageError{Reason: reasonImageInspectError, Message: msg, Err: err}
		case c.ImagePullPolicy == v1.PullNever:
			msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
			w.event(c.Name, v1.EventTypeWarning, EventErrImageNeverPull, msg)
			return "", &imageError{Reason: reasonErrImageNeverPull, Message: msg, Err: err}
		}
	}
	return w.pullImage(ctx, c)
}

// pullImage pulls c's image unless its pull back-off runs (10s doubling to
// 300s, E.8), as the kubelet's imageManager.pullImage.
func (w *podWorker) pullImage(ctx context.Context, c *v1.Container) (string, error) {
	key := pullBackoffKey(c.Image)
	now := w.d.clock.Now()
	if until, in := w.pulls.inBackOffSinceUpdate(key, now); in {
		msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
		w.event(c.Name, v1.EventTypeNormal, EventBackOff, msg)
		if prev, ok := w.pullErrs[key]; ok {
			msg += ": " + prev
		}
		return "", &imageError{Reason: reasonImagePullBackOff, Message: msg, retry: until.Sub(now)}
	}
	delete(w.pullErrs, key)
	auths := w.pullCredentials(c.Image)
	w.event(c.Name, v1.EventTypeNormal, EventPulling, fmt.Sprintf("Pulling image %q", c.Image))
	pctx, done := w.pullContext(ctx)
	defer done()
	w.start.pullStarted(w.d.clock.Now())
	res, err := w.d.puller.Pull(pctx, c.Image, auths)
	w.start.pullEnded(w.d.clock.Now())
	if err != nil {
		if pctx.Err() != nil {
			return "", fmt.Errorf("pull of %s cancelled: %w", c.Image, err)
		}
		w.event(c.Name, v1.EventTypeWarning, EventFailed, fmt.Sprintf("Failed to pull image %q: %v", c.Image, err))
		end := w.d.clock.Now()
		w.pulls.next(key, end, end)
		w.pullErrs[key] = reasonErrImagePull + ": " + err.Error()
		return "", &imageError{Reason: reasonErrImagePull, Message: err.Error(), Err: err}
	}
	w.event(c.Name, v1.EventTypeNormal, EventPulled, fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %v bytes.",
		c.Image, res.Took.Truncate(time.Millisecond), res.Waited.Truncate(time.Millisecond), res.Size))
	return res.ImageID, nil
}

// pullCredentials returns the credentials to try for image; pull secrets
// that cannot be retrieved become the kubelet's pod event, other problems
// with them are logged (as the kubelet logs them).
func (w *podWorker) pullCredentials(image string) []runtime.AuthConfig {
	if w.d.credentials == nil {
		return nil
	}
	auths, missing, warnings := w.d.credentials.ForPod(w.pod, image)
	if len(missing) > 0 {
		w.event("", v1.EventTypeWarning, EventFailedToRetrieveImagePullSecret,
			fmt.Sprintf("Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", ")))
	}
	for _, msg := range warnings {
		w.log.Warn("image pull secret ignored", "image", image, "problem", msg)
	}
	return auths
}

// pullContext returns ctx, also cancelled when the pod is killed (the
// kubelet cancels a sync in progress when its pod starts terminating), and
// the func to call once the pull returned.
func (w *podWorker) pullContext(ctx context.Context) (context.Context, func()) {
	pctx, cancel := context.WithCancel(ctx)
	w.req.pullStarted(cancel)
	return pctx, func() {
		w.req.pullDone()
		cancel()
	}
}

// setImageWaiting records an image problem of container name as its
// Waiting reason, with the kubelet's "Error: <reason>" event, and returns
// when to look again (0: the usual retry delay). A cancelled pull changes
// nothing.
func (w *podWorker) setImageWaiting(name string, err error) time.Duration {
	var ie *imageError
	if !errors.As(err, &ie) {
		w.log.Info("image pull cancelled", "container", name, "err", err)
		return 0
	}
	w.event(name, v1.EventTypeWarning, EventFailed, "Error: "+ie.Reason)
	w.waiting[name] = waitingState{Reason: ie.Reason, Message: ie.Message}
	w.log.Warn("image not available", "container", name, "reason", ie.Reason, "err", ie.Message)
	return ie.retry
}
