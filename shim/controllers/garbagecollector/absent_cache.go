package garbagecollector

import "k8s.io/utils/lru"

// referenceCache remembers owners verified absent, so that the dependents
// of one deleted owner do not each GET it (upstream's uid_cache.go). It is
// bounded (LRU) and safe for concurrent use.
type referenceCache struct {
	cache *lru.Cache
}

func newReferenceCache(size int) *referenceCache {
	return &referenceCache{cache: lru.New(size)}
}

func (c *referenceCache) add(ref objectReference) { c.cache.Add(ref, nil) }

func (c *referenceCache) has(ref objectReference) bool {
	_, ok := c.cache.Get(ref)
	return ok
}
