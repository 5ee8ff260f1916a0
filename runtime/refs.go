package runtime

import "context"

// ContainerRef is a listed container reduced to what tells a change apart:
// its IDs, its state and the value of one label. Nothing to act on.
type ContainerRef struct {
	ID, SandboxID string
	State         ContainerState
	// Label is the value of the label key the listing was asked for ("" if
	// the container has none).
	Label string
}

// SandboxRef is a listed sandbox reduced like a ContainerRef.
type SandboxRef struct {
	ID    string
	State SandboxState
	// Label is the value of the label key the listing was asked for.
	Label string
}

// RefLister is implemented by a Runtime that lists refs more cheaply than
// ListContainers and ListSandboxes: runtime/cri decodes only the fields of
// a ref from the CRI reply, and none of its labels and annotations maps,
// which were most of the agent's relist cost (issue 13).
type RefLister interface {
	// ListContainerRefs lists the containers that carry all of labels, as
	// ListContainers does, appending their refs (Label: the value of key)
	// to into[:0]. Blocking; safe for concurrent use.
	ListContainerRefs(ctx context.Context, labels map[string]string, key string, into []ContainerRef) ([]ContainerRef, error)
	// ListSandboxRefs is ListContainerRefs for sandboxes.
	ListSandboxRefs(ctx context.Context, labels map[string]string, key string, into []SandboxRef) ([]SandboxRef, error)
}

// ListContainerRefs lists the refs of rt's containers that carry all of
// labels through RefLister if rt implements it, else through
// ListContainers; both give the same refs. It appends to into[:0].
// Blocking; safe for concurrent use if rt is.
func ListContainerRefs(ctx context.Context, rt Runtime, labels map[string]string, key string, into []ContainerRef) ([]ContainerRef, error) {
	if rl, ok := rt.(RefLister); ok {
		return rl.ListContainerRefs(ctx, labels, key, into)
	}
	cs, err := rt.ListContainers(ctx, ContainerFilter{Labels: labels})
	if err != nil {
		return nil, err
	}
	into = into[:0]
	for _, c := range cs {
		into = append(into, ContainerRef{ID: c.ID, SandboxID: c.SandboxID, State: c.State, Label: c.Labels[key]})
	}
	return into, nil
}

// ListSandboxRefs is ListContainerRefs for sandboxes.
func ListSandboxRefs(ctx context.Context, rt Runtime, labels map[string]string, key string, into []SandboxRef) ([]SandboxRef, error) {
	if rl, ok := rt.(RefLister); ok {
		return rl.ListSandboxRefs(ctx, labels, key, into)
	}
	sbs, err := rt.ListSandboxes(ctx, labels)
	if err != nil {
		return nil, err
	}
	into = into[:0]
	for _, sb := range sbs {
		into = append(into, SandboxRef{ID: sb.ID, State: sb.State, Label: sb.Labels[key]})
	}
	return into, nil
}
