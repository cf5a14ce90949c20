// Package memory implements every storage port in process memory: the
// embedded default of `make run` and the backend of the fast tests.
//
// One Store holds all tables behind one read-write lock. A unit of work takes
// the write lock for its whole duration, which makes every use case
// serializable, the strongest guarantee the Postgres adapter gives, and
// keeps an undo log so a failed use case leaves nothing behind.
package memory

import (
	"context"
	"sort"
	"sync"
)

// Store is the in-memory database shared by the memory repositories.
type Store struct {
	mu       sync.RWMutex
	cascades map[string][]func(ctx context.Context, parentID string)
	// branchZone reads an entity's location.timezone for the queues
	// repository (a join, in SQL terms); called with the lock held.
	branchZone func(entityID string) *string
	// queues is the queues repository on this store, for the turns
	// repository's reads that join its tables (GetForView); nil until
	// NewQueues.
	queues *Queues
	// turns is the turns repository on this store, for the ticket links'
	// prune (a join on the turn); nil until NewTurns.
	turns *Turns
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{cascades: map[string][]func(context.Context, string){}}
}

// OnDelete registers what deleting a parent ("entity", "queue", ...) must
// delete with it: the memory counterpart of ON DELETE CASCADE. Register
// while wiring, before use.
func (s *Store) OnDelete(parent string, fn func(ctx context.Context, parentID string)) {
	s.cascades[parent] = append(s.cascades[parent], fn)
}

// cascade runs the registered deletes of a parent; called inside a write.
func (s *Store) cascade(ctx context.Context, parent, id string) {
	for _, fn := range s.cascades[parent] {
		fn(ctx, id)
	}
}

type txKey struct{}

// tx is the state of one unit of work.
type tx struct {
	store       *Store
	undo        []func()
	afterCommit []func()
}

// Do runs fn in a transaction: serialised with every other write, undone
// when fn fails, its after-commit hooks run once it succeeds. A nested Do
// joins the outer transaction.
func (s *Store) Do(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	if t, ok := ctx.Value(txKey{}).(*tx); ok && t.store == s {
		return fn(ctx)
	}
	t := &tx{store: s}
	s.mu.Lock()
	committed := false
	defer func() {
		if r := recover(); r != nil {
			t.rollback()
			s.mu.Unlock()
			panic(r)
		}
		if !committed {
			t.rollback()
		}
		s.mu.Unlock()
		if committed {
			for _, f := range t.afterCommit {
				f()
			}
		}
	}()
	if err = fn(context.WithValue(ctx, txKey{}, t)); err != nil {
		return err
	}
	committed = true
	return nil
}

func (t *tx) rollback() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
	t.undo = nil
	t.afterCommit = nil
}

// Ping always succeeds: memory is always reachable.
func (s *Store) Ping(context.Context) error { return nil }

// write runs a mutation. Inside a unit of work it records undo so the
// mutation rolls back with the transaction; outside one it takes the write
// lock for just this mutation (an autocommit statement).
func (s *Store) write(ctx context.Context, apply func() (undo func())) {
	if t, ok := ctx.Value(txKey{}).(*tx); ok && t.store == s {
		if u := apply(); u != nil {
			t.undo = append(t.undo, u)
		}
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	apply()
}

// read runs a query under the read lock, or directly inside a unit of work
// (which already holds the write lock).
func (s *Store) read(ctx context.Context, query func()) {
	if t, ok := ctx.Value(txKey{}).(*tx); ok && t.store == s {
		query()
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	query()
}

// AfterCommit registers f to run once the unit of work in ctx commits, after
// the store's lock is released; outside a unit of work f runs at once. The
// in-process job runner and event fan-out use it so that a rolled-back
// change never starts its jobs.
func (s *Store) AfterCommit(ctx context.Context, f func()) {
	if t, ok := ctx.Value(txKey{}).(*tx); ok && t.store == s {
		t.afterCommit = append(t.afterCommit, f)
		return
	}
	f()
}

// InTx reports whether ctx carries a unit of work of this store.
func (s *Store) InTx(ctx context.Context) bool {
	t, ok := ctx.Value(txKey{}).(*tx)
	return ok && t.store == s
}

// table is a generic keyed table with undo-aware writes.
type table[T any] struct {
	store *Store
	rows  map[string]T
}

func newTable[T any](s *Store) *table[T] { return &table[T]{store: s, rows: map[string]T{}} }

// put inserts or replaces a row; must be called through Store.write.
func (tb *table[T]) put(id string, row T) func() {
	old, existed := tb.rows[id]
	tb.rows[id] = row
	return func() {
		if existed {
			tb.rows[id] = old
		} else {
			delete(tb.rows, id)
		}
	}
}

// del removes a row; must be called through Store.write.
func (tb *table[T]) del(id string) func() {
	old, existed := tb.rows[id]
	if !existed {
		return nil
	}
	delete(tb.rows, id)
	return func() { tb.rows[id] = old }
}

// sorted returns the rows that keep passes, ordered by id, after the given
// id, at most limit (limit <= 0: all).
func sorted[T any](rows map[string]T, after string, limit int, keep func(T) bool) []T {
	ids := make([]string, 0, len(rows))
	for id, r := range rows {
		if id > after && (keep == nil || keep(r)) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	out := make([]T, len(ids))
	for i, id := range ids {
		out[i] = rows[id]
	}
	return out
}

// Unavailable implements ports.FaultClassifier: memory is never out of
// reach.
func (s *Store) Unavailable(error) bool { return false }
