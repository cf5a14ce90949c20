package postgres_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/pgtest"
)

// chainProbe runs three intakes of one run through RunIntake so that the
// second and third queue at the run's gate while the first holds it (the
// first waits until they are queued): they join its transaction.
func chainProbe(t *testing.T, db *postgres.DB, fns [3]func(ctx context.Context) error) [3]error {
	t.Helper()
	ctx := context.Background()
	turns := postgres.NewTurns(db)
	hold := make(chan struct{})
	var errs [3]error
	done := make(chan int, 3)
	run := func(i int, fn func(context.Context) error) {
		errs[i] = turns.RunIntake(ctx, "run_probe", func(ctx context.Context, _ any) (any, error) {
			if i == 0 {
				<-hold // closed: a rerun passes
			}
			return nil, fn(ctx)
		})
		done <- i
	}
	go run(0, fns[0])
	time.Sleep(30 * time.Millisecond)
	go run(1, fns[1])
	time.Sleep(30 * time.Millisecond)
	go run(2, fns[2])
	time.Sleep(30 * time.Millisecond)
	close(hold)
	for range 3 {
		<-done
	}
	return errs
}

func probeRows(t *testing.T, db *postgres.DB) []int {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT id FROM probe_chain ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestIntakeChainMemberFailsAlone: the second of three chained intakes
// fails with a domain error after its write was sent; its write is undone
// (ROLLBACK TO its savepoint), the first's and third's commit together.
// Then a member whose write fails in the database (a duplicate of a
// stored row: the
// transaction is lost) sinks the chain, and every member runs again alone:
// the first's and third's rows are stored, the duplicate fails alone.
func TestIntakeChainMemberFailsAlone(t *testing.T) {
	db := pgtest.New(t)
	defer postgres.ChainAgeForTest(time.Second)()
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE probe_chain (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	insert := func(id int, send bool) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			if err := db.DeferWriteForTest(ctx, `INSERT INTO probe_chain VALUES ($1)`, id); err != nil {
				return err
			}
			if !send {
				return nil
			}
			var n int // a statement of its own sends the queued writes
			return db.IDB(ctx).NewRaw(`SELECT count(*) FROM probe_chain`).Scan(ctx, &n)
		}
	}
	refused := errors.New("refused by the use case")
	before := db.IntakeChainStats()
	errs := chainProbe(t, db, [3]func(context.Context) error{
		insert(1, false),
		func(ctx context.Context) error {
			if err := insert(2, true)(ctx); err != nil {
				return err
			}
			return refused
		},
		insert(3, false),
	})
	if errs[0] != nil || !errors.Is(errs[1], refused) || errs[2] != nil {
		t.Fatalf("outcomes %v; want nil, the refusal, nil", errs)
	}
	if got := probeRows(t, db); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("rows %v; want [1 3]: the refused member's sent write undone, the others committed", got)
	}
	s := db.IntakeChainStats()
	if s.Joined-before.Joined != 2 || s.FailedAlone-before.FailedAlone != 1 || s.Reruns != before.Reruns {
		t.Fatalf("stats %+v (before %+v); want 2 joined, 1 failed alone, no rerun", s, before)
	}

	before = s
	errs = chainProbe(t, db, [3]func(context.Context) error{insert(10, false), insert(1, true), insert(11, false)})
	var pg *pgconn.PgError
	if errs[0] != nil || !errors.As(errs[1], &pg) || pg.Code != "23505" || errs[2] != nil {
		t.Fatalf("outcomes %v; want nil, a unique violation, nil", errs)
	}
	if got := probeRows(t, db); !slices.Equal(got, []int{1, 3, 10, 11}) {
		t.Fatalf("rows %v; want [1 3 10 11]", got)
	}
	if s := db.IntakeChainStats(); s.Reruns-before.Reruns < 2 {
		t.Fatalf("stats %+v (before %+v); want the sunk chain's members run again alone", s, before)
	}
}
