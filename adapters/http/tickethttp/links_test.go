package tickethttp

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/ticket"
)

// TestLinkCacheKeepsFoundLinksForAWhileAndBounded: a link found is not
// read again within the TTL, is read again after it; a value that matches
// no link is read every time (never kept); the cache never holds more
// than its bound.
func TestLinkCacheKeepsFoundLinksForAWhileAndBounded(t *testing.T) {
	reads := map[string]int{}
	c := newLinkCache(func(_ context.Context, v string) (ticket.Link, error) {
		reads[v]++
		if v == "unknown" {
			return ticket.Link{}, errors.New("not a link")
		}
		return ticket.Link{ID: "tkl_" + v}, nil
	})
	now := time.Unix(1_000_000, 0)
	c.now = func() time.Time { return now }
	c.max = 10
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if l, err := c.resolve(ctx, "a"); err != nil || l.ID != "tkl_a" {
			t.Fatalf("resolve: %+v %v", l, err)
		}
		if _, err := c.resolve(ctx, "unknown"); err == nil {
			t.Fatal("an unknown value resolved")
		}
	}
	if reads["a"] != 1 || reads["unknown"] != 3 {
		t.Fatalf("reads %v: want a once, the unknown value each time", reads)
	}
	now = now.Add(c.ttl)
	c.resolve(ctx, "a")
	if reads["a"] != 2 {
		t.Fatalf("a link past its TTL was not read again: %v", reads)
	}
	for i := 0; i < 100; i++ {
		c.resolve(ctx, fmt.Sprint(i))
		if len(c.m) > c.max {
			t.Fatalf("%d links kept, bound %d", len(c.m), c.max)
		}
	}
}
