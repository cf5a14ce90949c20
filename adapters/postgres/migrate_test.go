package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/pgtest"
)

// openDB opens a pool on url (one process), closed when t ends.
func openDB(t *testing.T, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

func TestMigrateConcurrentlyAndIdempotently(t *testing.T) {
	ctx := context.Background()
	url := pgtest.EmptyURL(t)
	// Two handles stand for two processes starting at once.
	dbs := []*postgres.DB{openDB(t, url), openDB(t, url), openDB(t, url)}
	var wg sync.WaitGroup
	errs := make([]error, len(dbs))
	for i, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.Migrate(ctx)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migrate %d: %v", i, err)
		}
	}
	if err := dbs[0].Migrate(ctx); err != nil {
		t.Fatalf("second migrate: %v", err)
	}

	var applied, distinct int
	if err := dbs[0].Pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT version) FROM schema_migrations").Scan(&applied, &distinct); err != nil {
		t.Fatal(err)
	}
	if applied == 0 || applied != distinct {
		t.Fatalf("schema_migrations has %d rows, %d versions", applied, distinct)
	}
	for _, table := range []string{"rate_limits", "river_job", "river_leader"} {
		var ok bool
		if err := dbs[0].Pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&ok); err != nil || !ok {
			t.Errorf("table %s missing (%v)", table, err)
		}
	}
}

func TestMigrateRefusesAnEditedMigration(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	if _, err := db.Pool.Exec(ctx, "UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1"); err != nil {
		t.Fatal(err)
	}
	err := db.Migrate(ctx)
	if err == nil || !strings.Contains(err.Error(), "different content") {
		t.Fatalf("Migrate = %v, want a changed-migration error", err)
	}
}
