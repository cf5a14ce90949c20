package postgres

import (
	"context"
	"fmt"
)

// DeferWriteForTest queues a write as the repositories' deferred writes
// are (deferred.go), its failure wrapped as "probe".
func (db *DB) DeferWriteForTest(ctx context.Context, sql string, args ...any) error {
	return db.deferWrite(ctx, func(err error) error { return fmt.Errorf("probe: %w", err) }, sql, args...)
}
