package memory

import (
	"context"

	"github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/platform"
)

// DisplayTokens is the memory display.Repository.
type DisplayTokens struct {
	s    *Store
	rows *table[display.Token]
}

// NewDisplayTokens builds the repository on s; a run's tokens go with it.
func NewDisplayTokens(s *Store) *DisplayTokens {
	r := &DisplayTokens{s: s, rows: newTable[display.Token](s)}
	s.OnDelete("run", func(ctx context.Context, runID string) {
		for id, t := range r.rows.rows {
			if t.RunID == runID {
				r.s.write(ctx, func() func() { return r.rows.del(id) })
			}
		}
	})
	return r
}

// Create stores a new token.
func (r *DisplayTokens) Create(ctx context.Context, t display.Token) error {
	r.s.write(ctx, func() func() { return r.rows.put(t.ID, t) })
	return nil
}

// Get returns a token by id.
func (r *DisplayTokens) Get(ctx context.Context, id string) (t display.Token, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if t, ok = r.rows.rows[id]; !ok {
			err = platform.NotFound("display token", id)
		}
	})
	return t, err
}

// GetByHash returns the token with the hash.
func (r *DisplayTokens) GetByHash(ctx context.Context, hash string) (t display.Token, err error) {
	err = platform.NotFound("display token", "")
	r.s.read(ctx, func() {
		for _, row := range r.rows.rows {
			if row.Hash == hash {
				t, err = row, nil
				return
			}
		}
	})
	return t, err
}

// Update replaces a token.
func (r *DisplayTokens) Update(ctx context.Context, t display.Token) error {
	r.s.write(ctx, func() func() { return r.rows.put(t.ID, t) })
	return nil
}

// ListByRun pages a run's tokens by id.
func (r *DisplayTokens) ListByRun(ctx context.Context, runID string, page platform.PageRequest) (out []display.Token, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.rows.rows, page.After, page.Limit+1, func(t display.Token) bool { return t.RunID == runID })
	})
	return out, nil
}

// CountLive counts a run's unrevoked tokens.
func (r *DisplayTokens) CountLive(ctx context.Context, runID string) (n int, err error) {
	r.s.read(ctx, func() {
		for _, t := range r.rows.rows {
			if t.RunID == runID && !t.Revoked() {
				n++
			}
		}
	})
	return n, nil
}
