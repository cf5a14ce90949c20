package postgres

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrateLockKey is the pg_advisory_lock key that serialises Migrate across
// processes ("qms:migr" in ASCII).
const migrateLockKey int64 = 0x716d733a6d696772

// migrationName is NNNN_description.up.sql; the number orders the files.
var migrationName = regexp.MustCompile(`^(\d+)_([a-z0-9_]+)\.up\.sql$`)

// migration is one embedded SQL file.
type migration struct {
	version  int64
	name     string
	sql      string
	checksum string
}

// loadMigrations reads every file of migrations/, ordered by version. A
// file that does not follow the naming rule is an error rather than
// silently skipped, so a typo cannot leave a table out.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	paths, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	seen := map[int64]string{}
	for _, p := range paths {
		base := path.Base(p)
		if strings.HasSuffix(base, ".down.sql") {
			continue // down files are for people, not for the runner
		}
		m := migrationName.FindStringSubmatch(base)
		if m == nil {
			return nil, fmt.Errorf("postgres: migration %q: name must be NNNN_description.up.sql", base)
		}
		version, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("postgres: migration %q: %w", base, err)
		}
		if other, ok := seen[version]; ok {
			return nil, fmt.Errorf("postgres: migrations %q and %q share version %d", other, base, version)
		}
		seen[version] = base
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(body)
		out = append(out, migration{version: version, name: base, sql: string(body), checksum: hex.EncodeToString(sum[:])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// SchemaFingerprint identifies the schema Migrate builds: a hash of qms's
// migration files and of River's migrations. Test helpers name template
// databases by it, so a changed migration yields a fresh template.
func SchemaFingerprint() string {
	h := sha256.New()
	migs, err := loadMigrations(migrationFiles)
	if err != nil {
		// An invalid set fingerprints as such; Migrate reports the error.
		fmt.Fprintf(h, "invalid:%v", err)
	}
	for _, m := range migs {
		fmt.Fprintf(h, "qms:%d:%s:%s\n", m.version, m.name, m.checksum)
	}
	if migrator, err := rivermigrate.New(riverpgxv5.New(nil), &rivermigrate.Config{Logger: discardLogger}); err == nil {
		for _, m := range migrator.AllVersions() {
			fmt.Fprintf(h, "river:%d:%s\n", m.Version, m.SQLUp)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

var discardLogger = slog.New(slog.DiscardHandler)

// Migrate brings the schema up to date: River's migrations, then every
// embedded qms migration not yet applied, each in its own transaction and
// recorded in schema_migrations. It holds a session advisory lock the whole
// time, so processes starting together migrate one after the other (the
// second finds nothing to do); a crash releases the lock with its session.
// A recorded migration whose file has since changed is an error: applied
// migrations are history, changes go in a new file.
func (db *DB) Migrate(ctx context.Context) error { return db.migrateUpTo(ctx, -1) }

// migrateUpTo is Migrate stopping after qms's migration upTo (every one
// when upTo is negative): a test builds an older schema with it, fills it,
// then migrates the rest.
func (db *DB) migrateUpTo(ctx context.Context, upTo int64) error {
	migs, err := loadMigrations(migrationFiles)
	if err != nil {
		return err
	}
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: get connection: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLockKey); err != nil {
		return fmt.Errorf("postgres: migrate: take lock: %w", err)
	}
	defer func() {
		// With ctx possibly cancelled, unlock on a fresh context; if even that
		// fails, closing the session is what releases the lock.
		if _, err := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLockKey); err != nil {
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()

	logger := db.Logger
	if logger == nil {
		logger = discardLogger
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(db.Pool), &rivermigrate.Config{Logger: logger})
	if err != nil {
		return fmt.Errorf("postgres: migrate river: %w", err)
	}
	res, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return fmt.Errorf("postgres: migrate river: %w", err)
	}
	for _, v := range res.Versions {
		logger.InfoContext(ctx, "applied river migration", slog.Int("version", v.Version), slog.String("name", v.Name))
	}

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    bigint PRIMARY KEY,
		name       text NOT NULL,
		checksum   text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return fmt.Errorf("postgres: migrate: create schema_migrations: %w", err)
	}
	applied, err := appliedMigrations(ctx, conn.Conn())
	if err != nil {
		return err
	}
	for _, m := range migs {
		if upTo >= 0 && m.version > upTo {
			break
		}
		if sum, ok := applied[m.version]; ok {
			if sum != m.checksum {
				return fmt.Errorf("postgres: migration %s was applied with different content; add a new migration instead of editing it", m.name)
			}
			continue
		}
		if err := applyMigration(ctx, conn.Conn(), m); err != nil {
			return err
		}
		logger.InfoContext(ctx, "applied migration", slog.String("name", m.name))
	}
	return nil
}

func appliedMigrations(ctx context.Context, conn *pgx.Conn) (map[int64]string, error) {
	rows, err := conn.Query(ctx, "SELECT version, checksum FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("postgres: migrate: read schema_migrations: %w", err)
	}
	applied := map[int64]string{}
	var (
		version int64
		sum     string
	)
	_, err = pgx.ForEachRow(rows, []any{&version, &sum}, func() error {
		applied[version] = sum
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: migrate: read schema_migrations: %w", err)
	}
	return applied, nil
}

func applyMigration(ctx context.Context, conn *pgx.Conn, m migration) error {
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// No arguments: pgx sends the file with the simple protocol, which
		// accepts several statements.
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
			m.version, m.name, m.checksum)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: migration %s: %w", m.name, err)
	}
	return nil
}
