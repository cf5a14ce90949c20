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
	bg := context.Background()
	return chainProbeCtx(t, db, [3]context.Context{bg, bg, bg}, fns)
}

// chainProbeCtx is chainProbe with each intake's request context.
func chainProbeCtx(t *testing.T, db *postgres.DB, ctxs [3]context.Context, fns [3]func(ctx context.Context) error) [3]error {
	t.Helper()
	turns := postgres.NewTurns(db)
	hold := make(chan struct{})
	var errs [3]error
	done := make(chan int, 3)
	run := func(i int, fn func(context.Context) error) {
		errs[i] = turns.RunIntake(ctxs[i], "run_probe", func(ctx context.Context, _ any) (any, error) {
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

// TestIntakeChainMemberDeadline: a chained intake runs to its own
// request's deadline, not its chain's. The second of three is stuck in a
// statement past its deadline: the statement is cancelled at the deadline,
// the intake fails as its request would (the context's error, a 503), its
// write is undone, and the first's and third's commit together, the chain
// unbroken. Then a member whose deadline passes between statements fails
// the same way, and its statement after the deadline is never run.
func TestIntakeChainMemberDeadline(t *testing.T) {
	db := pgtest.New(t)
	defer postgres.ChainAgeForTest(10 * time.Second)()
	bg := context.Background()
	if _, err := db.Pool.Exec(bg, `CREATE TABLE probe_chain (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	insert := func(id int) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			return db.DeferWriteForTest(ctx, `INSERT INTO probe_chain VALUES ($1)`, id)
		}
	}
	const deadline = 400 * time.Millisecond
	ctx, cancel := context.WithTimeout(bg, deadline)
	defer cancel()
	var took time.Duration
	before := db.IntakeChainStats()
	errs := chainProbeCtx(t, db, [3]context.Context{bg, ctx, bg}, [3]func(context.Context) error{
		insert(1),
		func(ctx context.Context) error {
			if err := insert(2)(ctx); err != nil {
				return err
			}
			start := time.Now()
			defer func() { took = time.Since(start) }()
			return db.ExecPgxForTest(ctx, `SELECT pg_sleep(30)`)
		},
		insert(3),
	})
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("outcomes %v; want the first and third committed", errs)
	}
	if !errors.Is(errs[1], context.DeadlineExceeded) || !postgres.Unavailable(errs[1]) {
		t.Fatalf("stuck member: %v; want its deadline's error, a 503 (Unavailable)", errs[1])
	}
	if took > deadline+2*time.Second {
		t.Fatalf("the stuck statement ran %v; want it cancelled at the member's deadline", took)
	}
	if got := probeRows(t, db); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("rows %v; want [1 3]: the timed-out member undone, the others committed", got)
	}
	s := db.IntakeChainStats()
	if s.Joined-before.Joined != 2 || s.FailedAlone-before.FailedAlone != 1 || s.Reruns != before.Reruns {
		t.Fatalf("stats %+v (before %+v); want 2 joined, 1 failed alone, no rerun", s, before)
	}

	ctx, cancel = context.WithTimeout(bg, deadline)
	defer cancel()
	errs = chainProbeCtx(t, db, [3]context.Context{bg, ctx, bg}, [3]func(context.Context) error{
		insert(10),
		func(ctx context.Context) error {
			if err := insert(11)(ctx); err != nil {
				return err
			}
			// A statement of its own sends its write, behind its savepoint.
			if err := db.ExecPgxForTest(ctx, `SELECT 1`); err != nil {
				return err
			}
			time.Sleep(deadline + 100*time.Millisecond) // busy elsewhere past its deadline
			return db.ExecPgxForTest(ctx, `INSERT INTO probe_chain VALUES (12)`)
		},
		insert(13),
	})
	if errs[0] != nil || errs[2] != nil || !errors.Is(errs[1], context.DeadlineExceeded) || !postgres.Unavailable(errs[1]) {
		t.Fatalf("outcomes %v; want nil, the deadline's error, nil", errs)
	}
	if got := probeRows(t, db); !slices.Equal(got, []int{1, 3, 10, 13}) {
		t.Fatalf("rows %v; want [1 3 10 13]: nothing of the member past its deadline", got)
	}
}

// TestIntakeChainMemberStatementFails: a chained intake whose own
// statement fails in PostgreSQL (which aborts the transaction) fails
// alone: its ROLLBACK TO goes at once, so the next member's batch can be
// prepared behind it, and the first's and third's writes commit together
// with no member run again.
func TestIntakeChainMemberStatementFails(t *testing.T) {
	db := pgtest.New(t)
	defer postgres.ChainAgeForTest(10 * time.Second)()
	if _, err := db.Pool.Exec(context.Background(), `CREATE TABLE probe_chain (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	insert := func(id int) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			return db.DeferWriteForTest(ctx, `INSERT INTO probe_chain VALUES ($1)`, id)
		}
	}
	before := db.IntakeChainStats()
	errs := chainProbe(t, db, [3]func(context.Context) error{
		insert(1),
		func(ctx context.Context) error {
			if err := insert(2)(ctx); err != nil {
				return err
			}
			return db.ExecPgxForTest(ctx, `SELECT 1 / (SELECT count(*) FROM probe_chain WHERE id < 0)`)
		},
		insert(3),
	})
	var pg *pgconn.PgError
	if errs[0] != nil || !errors.As(errs[1], &pg) || pg.Code != "22012" || errs[2] != nil {
		t.Fatalf("outcomes %v; want nil, a division by zero, nil", errs)
	}
	if got := probeRows(t, db); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("rows %v; want [1 3]", got)
	}
	s := db.IntakeChainStats()
	if s.Joined-before.Joined != 2 || s.FailedAlone-before.FailedAlone != 1 || s.Reruns != before.Reruns {
		t.Fatalf("stats %+v (before %+v); want 2 joined, 1 failed alone, no member run again", s, before)
	}
}
