package tickethttp

import (
	"context"
	"sync"
	"time"

	"github.com/qms-dev/qms/core/ticket"
)

// linkCache remembers the ticket links this process's streams resolved.
// A link never changes once made (it has no revocation: it ends with its
// turn's expiry, which the run's view tells without a read), so a page
// that reconnects (a phone waking up, or the reconnect storm of a whole
// waiting room when a proxy restarts) finds its link here instead of
// reading it again. Only links found are kept, so values that match no
// link cannot fill it; it holds at most max links, each for ttl.
type linkCache struct {
	read func(ctx context.Context, value string) (ticket.Link, error)
	ttl  time.Duration
	max  int
	now  func() time.Time

	mu sync.Mutex
	m  map[string]cachedLink
}

type cachedLink struct {
	link ticket.Link
	at   time.Time
}

// Link cache bounds: ten minutes covers a storm and a phone's screen
// going dark for a while; 50,000 links are about 20 MB at most.
const (
	linkCacheTTL = 10 * time.Minute
	linkCacheMax = 50_000
)

// newLinkCache keeps what read (ticket.Service.ResolveLink) finds.
func newLinkCache(read func(ctx context.Context, value string) (ticket.Link, error)) *linkCache {
	return &linkCache{read: read, ttl: linkCacheTTL, max: linkCacheMax, now: time.Now, m: map[string]cachedLink{}}
}

// resolve is read through the cache.
func (c *linkCache) resolve(ctx context.Context, value string) (ticket.Link, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.m[value]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.link, nil
	}
	l, err := c.read(ctx, value)
	if err != nil {
		return l, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		c.evict(now)
	}
	c.m[value] = cachedLink{link: l, at: now}
	return l, nil
}

// evict drops the links kept for longer than ttl, and when that is not
// enough, half of the others (map order: any half).
func (c *linkCache) evict(now time.Time) {
	for v, e := range c.m {
		if now.Sub(e.at) >= c.ttl {
			delete(c.m, v)
		}
	}
	for v := range c.m {
		if len(c.m) < c.max/2 {
			return
		}
		delete(c.m, v)
	}
}
