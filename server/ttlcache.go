package server

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// maxCacheEntries bounds the authentication and authorization caches.
const maxCacheEntries = 4096

// ttlCache is a map whose entries expire, bounded in size: when full, the
// expired entries are dropped, then an arbitrary one. Safe for concurrent
// use.
type ttlCache[V any] struct {
	mu      sync.Mutex
	clock   clock.PassiveClock
	max     int
	entries map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v       V
	expires time.Time
}

func newTTLCache[V any](c clock.PassiveClock, maxEntries int) *ttlCache[V] {
	return &ttlCache[V]{clock: c, max: maxEntries, entries: map[string]ttlEntry[V]{}}
}

// get returns the value of key if it has not expired.
func (c *ttlCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !c.clock.Now().Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// add sets key to v for ttl.
func (c *ttlCache[V]) add(key string, v V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < c.max {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[key] = ttlEntry[V]{v: v, expires: now.Add(ttl)}
}
