package postgres_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/pgtest"
)

// recordingCache records what the listener tells the cache.
type recordingCache struct {
	mu       sync.Mutex
	forgets  int
	notified []bool
}

func (c *recordingCache) ForgetAuth() { c.mu.Lock(); c.forgets++; c.mu.Unlock() }
func (c *recordingCache) SetNotified(on bool) {
	c.mu.Lock()
	c.notified = append(c.notified, on)
	c.mu.Unlock()
}

func (c *recordingCache) state() (forgets int, notified []bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.forgets, append([]bool(nil), c.notified...)
}

// TestAuthListenerSaysWhenItHears: the cache is told it is notified only
// while the listening connection is alive: a killed connection turns it
// off (so the short TTL applies) until the listener is back, and every
// committed change to a key clears the cache.
func TestAuthListenerSaysWhenItHears(t *testing.T) {
	db := pgtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cache := &recordingCache{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		postgres.NewAuthListener(db, slog.New(slog.NewTextHandler(io.Discard, nil))).Run(ctx, cache)
	}()
	defer func() { cancel(); <-done }()

	waitFor := func(what string, ok func(forgets int, notified []bool) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if ok(cache.state()) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		f, n := cache.state()
		t.Fatalf("%s: never happened (forgets %d, notified %v)", what, f, n)
	}
	last := func(n []bool) (bool, bool) {
		if len(n) == 0 {
			return false, false
		}
		return n[len(n)-1], true
	}
	waitFor("notified once listening", func(_ int, n []bool) bool { v, ok := last(n); return ok && v })

	before, _ := cache.state()
	if _, err := db.Pool.Exec(context.Background(), `UPDATE api_keys SET name = name`); err != nil {
		t.Fatal(err)
	}
	waitFor("a change clears the cache", func(f int, _ []bool) bool { return f > before })

	// Kill the listening connection: the cache must stop trusting it.
	_, n := cache.state()
	from := len(n)
	var killed int
	err := db.Pool.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminate the listener: %d killed, %v", killed, err)
	}
	waitFor("not notified once the connection died", func(_ int, n []bool) bool {
		for _, v := range n[from:] {
			if !v {
				return true
			}
		}
		return false
	})
	waitFor("notified again after reconnecting", func(_ int, n []bool) bool { v, ok := last(n); return ok && v && len(n) > from+1 })
}
