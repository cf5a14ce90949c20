package memory

import (
	"context"

	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/platform"
)

// Entities is the memory entities.Repository.
type Entities struct {
	s    *Store
	rows *table[entities.Entity]
}

// NewEntities builds the repository on s.
func NewEntities(s *Store) *Entities {
	r := &Entities{s: s, rows: newTable[entities.Entity](s)}
	s.branchZone = func(entityID string) *string {
		if e, ok := r.rows.rows[entityID]; ok && e.Location != nil {
			return e.Location.Timezone
		}
		return nil
	}
	return r
}

// Create stores a new entity.
func (r *Entities) Create(ctx context.Context, e entities.Entity) error {
	r.s.write(ctx, func() func() { return r.rows.put(e.ID, e) })
	return nil
}

// Get returns an entity.
func (r *Entities) Get(ctx context.Context, id string) (e entities.Entity, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if e, ok = r.rows.rows[id]; !ok {
			err = platform.NotFound("entity", id)
		}
	})
	return e, err
}

// Update replaces an entity.
func (r *Entities) Update(ctx context.Context, e entities.Entity) error {
	r.s.write(ctx, func() func() { return r.rows.put(e.ID, e) })
	return nil
}

// Delete removes an entity and, through the store's cascades, its queues
// and everything under them.
func (r *Entities) Delete(ctx context.Context, id string) error {
	r.s.write(ctx, func() func() { return r.rows.del(id) })
	r.s.cascade(ctx, "entity", id)
	return nil
}

// List pages the account's entities by id.
func (r *Entities) List(ctx context.Context, accountID string, page platform.PageRequest) (out []entities.Entity, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.rows.rows, page.After, page.Limit+1, func(e entities.Entity) bool { return e.AccountID == accountID })
	})
	return out, nil
}
