package agent

import "context"

// objectSubscriber is implemented by object stores that announce changes
// (objects.Store).
type objectSubscriber interface {
	Subscribe() <-chan struct{}
}

// wakeOnObjectChanges wakes every worker after each change of the
// ConfigMaps and Secrets (Config.Objects), until ctx is done, so that a
// container waiting with CreateContainerConfigError for an object or key
// starts as soon as its manifest is written rather than at the next retry.
// Object edits are rare (a file written), so waking all workers is cheap.
// It returns at once if the store announces nothing.
func (a *Agent) wakeOnObjectChanges(ctx context.Context) {
	sub, ok := a.cfg.Objects.(objectSubscriber)
	if !ok {
		return
	}
	changes := sub.Subscribe()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
			a.WakeAll()
		}
	}
}
