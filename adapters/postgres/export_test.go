package postgres

import (
	"context"
	"fmt"
	"time"
)

// DeferWriteForTest queues a write as the repositories' deferred writes
// are (deferred.go), its failure wrapped as "probe".
func (db *DB) DeferWriteForTest(ctx context.Context, sql string, args ...any) error {
	return db.deferWrite(ctx, func(err error) error { return fmt.Errorf("probe: %w", err) }, sql, args...)
}

// ExecPgxForTest runs sql through pgx as the hot statements do (withPgx),
// in the unit of work in ctx, if any.
func (db *DB) ExecPgxForTest(ctx context.Context, sql string, args ...any) error {
	return db.withPgx(ctx, func(q pgxQuerier) error {
		_, err := q.Exec(ctx, sql, args...)
		return err
	})
}

// LeasesForTest is how many lease statements the limiter has sent.
func (l *RateLimiter) LeasesForTest() int64 { return l.leases.Load() }

// LeaseStatementsForTest is how many statements sent those leases.
func (l *RateLimiter) LeaseStatementsForTest() int64 { return l.statements.Load() }

// LeasingForTest reports whether a lease of key is on its way.
func (l *RateLimiter) LeasingForTest(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.keys[key]
	return k != nil && k.inflight != nil
}

// CoalescedViewsForTest is how many turn views were read in a batch with
// others (viewbatch.go).
func (db *DB) CoalescedViewsForTest() int64 { return db.viewBatches.shared.Load() }

// The hot routes' statements, for the test of their plans.
const (
	DrawNumberSQLForTest        = drawNumberSQL
	DrawAheadSQLForTest         = drawAheadSQL
	DrawAheadNoKeySQLForTest    = drawAheadNoKeySQL
	LockRunSQLForTest           = lockRunSQL
	LockRunEndpointsSQLForTest  = lockRunEndpointsSQL
	RunLineEndpointsSQLForTest  = runLineEndpointsSQL
	TurnLineEndpointsSQLForTest = turnLineEndpointsSQL
	TurnViewSQLForTest          = turnViewSQL
	TakeSQLForTest              = takeSQL
	BumpLineSQLForTest          = bumpLineSQL
	RecordSuccessSQLForTest     = recordSuccessSQL
	InsertDeliveriesSQLForTest  = insertDeliveriesSQL
	LocateEventSQLForTest       = locateEventSQL
	SuccessIndexOnlySQLForTest  = successIndexOnlySQL
	GetDeliveryToSendSQLForTest = getDeliveryToSendSQL
)

// SettleForTest waits for the limiter's leases ahead on their way.
func (l *RateLimiter) SettleForTest() {
	l.mu.Lock()
	if l.gathering {
		l.hurryAhead()
	}
	l.mu.Unlock()
	l.aheads.Wait()
}

// WaitsForTest is how many requests waited for the database: sent a
// lease or waited for one on its way.
func (l *RateLimiter) WaitsForTest() int64 { return l.waits.Load() }

// ChainAgeForTest sets the intake chains' age cap (intakechain.go) until
// the returned restore: a test on a busy machine keeps its chain whole.
func ChainAgeForTest(age time.Duration) (restore func()) {
	old := maxChainAge
	maxChainAge = age
	return func() { maxChainAge = old }
}

// MigrateUpToForTest applies the migrations up to version upTo.
func (db *DB) MigrateUpToForTest(ctx context.Context, upTo int64) error {
	return db.migrateUpTo(ctx, upTo)
}
