// Package objects holds the namespaced API objects that pods may reference
// besides themselves: ConfigMaps and Secrets. Sources fill a Store (the
// static-pod source from ConfigMap and Secret documents in the manifest
// directory; an API source later); the volume manager and the container
// environment read it through Getter and learn of changes through
// Subscribe.
package objects

import (
	"errors"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// ErrNotFound is wrapped by Getter errors for an object that does not exist.
var ErrNotFound = errors.New("not found")

// Getter reads ConfigMaps and Secrets. Implementations are safe for
// concurrent use and never block on I/O, but for a bounded wait for the
// first listing of an object an API server watches (apisource's object
// manager). Returned objects are shared: callers must not modify them.
type Getter interface {
	// ConfigMap returns the ConfigMap namespace/name, or an error wrapping
	// ErrNotFound.
	ConfigMap(namespace, name string) (*v1.ConfigMap, error)
	// Secret returns the Secret namespace/name, or an error wrapping
	// ErrNotFound.
	Secret(namespace, name string) (*v1.Secret, error)
}

// Store is an in-memory Getter that a source replaces wholesale
// (level-triggered: every Replace is the complete set). The zero value is
// not usable; use NewStore. It is safe for concurrent use.
type Store struct {
	mu         sync.RWMutex
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
	gen        uint64
	subs       []chan struct{}
}

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{configMaps: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}}
}

func key(namespace, name string) string { return namespace + "/" + name }

// ConfigMap implements Getter.
func (s *Store) ConfigMap(namespace, name string) (*v1.ConfigMap, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if cm, ok := s.configMaps[key(namespace, name)]; ok {
		return cm, nil
	}
	return nil, fmt.Errorf("configmap %q in namespace %q: %w", name, namespace, ErrNotFound)
}

// Secret implements Getter.
func (s *Store) Secret(namespace, name string) (*v1.Secret, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sec, ok := s.secrets[key(namespace, name)]; ok {
		return sec, nil
	}
	return nil, fmt.Errorf("secret %q in namespace %q: %w", name, namespace, ErrNotFound)
}

// Replace makes cms and secrets the complete content of the store and, when
// anything changed, wakes every subscriber. The store keeps the slices'
// objects; the caller must not modify them afterwards.
func (s *Store) Replace(cms []*v1.ConfigMap, secrets []*v1.Secret) {
	nextCM := make(map[string]*v1.ConfigMap, len(cms))
	for _, cm := range cms {
		nextCM[key(cm.Namespace, cm.Name)] = cm
	}
	nextSec := make(map[string]*v1.Secret, len(secrets))
	for _, sec := range secrets {
		nextSec[key(sec.Namespace, sec.Name)] = sec
	}
	s.mu.Lock()
	changed := !sameObjects(s.configMaps, nextCM, equalConfigMap) || !sameObjects(s.secrets, nextSec, equalSecret)
	s.configMaps, s.secrets = nextCM, nextSec
	if changed {
		s.gen++
		for _, ch := range s.subs {
			select {
			case ch <- struct{}{}:
			default: // a wake-up is already pending
			}
		}
	}
	s.mu.Unlock()
}

// Generation counts the Replace calls that changed something; it lets a
// reader tell whether what it derived is current.
func (s *Store) Generation() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.gen
}

// Subscribe returns a channel that receives a value (coalesced, never
// blocking the store) after each change. There is no unsubscribe: a
// subscriber lives as long as the store, as the agent's parts do.
func (s *Store) Subscribe() <-chan struct{} {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs = append(s.subs, ch)
	s.mu.Unlock()
	return ch
}

// Chain reads from each getter in turn: the first that has the object
// (does not answer ErrNotFound) wins, e.g. the static objects of the
// manifest directory, then the API server's.
func Chain(gs ...Getter) Getter { return chain(gs) }

type chain []Getter

func (c chain) ConfigMap(namespace, name string) (*v1.ConfigMap, error) {
	var err error
	for _, g := range c {
		var cm *v1.ConfigMap
		if cm, err = g.ConfigMap(namespace, name); !errors.Is(err, ErrNotFound) {
			return cm, err
		}
	}
	if err == nil {
		err = fmt.Errorf("configmap %s/%s: %w", namespace, name, ErrNotFound)
	}
	return nil, err
}

func (c chain) Secret(namespace, name string) (*v1.Secret, error) {
	var err error
	for _, g := range c {
		var s *v1.Secret
		if s, err = g.Secret(namespace, name); !errors.Is(err, ErrNotFound) {
			return s, err
		}
	}
	if err == nil {
		err = fmt.Errorf("secret %s/%s: %w", namespace, name, ErrNotFound)
	}
	return nil, err
}
