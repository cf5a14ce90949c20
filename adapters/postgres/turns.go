package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

type turnRow struct {
	bun.BaseModel  `bun:"table:turns"`
	ID             string     `bun:"id,pk"`
	AccountID      string     `bun:"account_id"`
	QueueID        string     `bun:"queue_id"`
	RunID          string     `bun:"run_id"`
	Number         int        `bun:"number"`
	DisplayCode    string     `bun:"display_code"`
	Status         string     `bun:"status"`
	Priority       string     `bun:"priority"`
	PriorityRank   int        `bun:"priority_rank"`
	Seq            int64      `bun:"seq"`
	PeopleCount    int        `bun:"people_count"`
	Phone          *string    `bun:"phone"`
	NotifyWhatsapp bool       `bun:"notify_whatsapp"`
	FormResponse   jsonb      `bun:"form_response,type:jsonb"`
	StationID      *string    `bun:"station_id"`
	CallCount      int        `bun:"call_count"`
	Reentries      int        `bun:"reentries"`
	HeldFrom       string     `bun:"held_from"`
	ReopenTo       string     `bun:"reopen_to"`
	ServiceSeconds *float64   `bun:"service_seconds"`
	IdempotencyKey *string    `bun:"idempotency_key"`
	RequestHash    string     `bun:"request_hash"`
	ArrivedAt      *time.Time `bun:"arrived_at"`
	CalledAt       *time.Time `bun:"called_at"`
	StartedAt      *time.Time `bun:"started_at"`
	FinishedAt     *time.Time `bun:"finished_at"`
	CreatedAt      time.Time  `bun:"created_at"`
	UpdatedAt      time.Time  `bun:"updated_at"`
	AppointmentID  *string    `bun:"appointment_id"`
}

func turnToRow(t turns.Turn) (*turnRow, error) {
	// No answers, the usual intake: the empty object without the encoder.
	doc := jsonb("{}")
	if len(t.FormResponse) > 0 {
		var err error
		if doc, err = json.Marshal(t.FormResponse); err != nil {
			return nil, wrap(err, "encode turn form response")
		}
	}
	return &turnRow{
		ID: t.ID, AccountID: t.AccountID, QueueID: t.QueueID, RunID: t.RunID, Number: t.Number,
		DisplayCode: t.DisplayCode, Status: string(t.Status), Priority: string(t.Priority), PriorityRank: t.Rank(),
		Seq: t.Seq, PeopleCount: t.PeopleCount, Phone: t.Phone, NotifyWhatsapp: t.NotifyWhatsapp, FormResponse: doc,
		StationID: t.StationID, CallCount: t.CallCount, Reentries: t.Reentries, HeldFrom: t.HeldFrom,
		ReopenTo: string(t.ReopenTo), ServiceSeconds: t.ServiceSeconds, IdempotencyKey: t.IdempotencyKey,
		RequestHash: t.RequestHash, ArrivedAt: t.ArrivedAt, CalledAt: t.CalledAt, StartedAt: t.StartedAt,
		FinishedAt: t.FinishedAt, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, AppointmentID: t.AppointmentID,
	}, nil
}

func (row *turnRow) domain() (turns.Turn, error) {
	t := turns.Turn{
		ID: row.ID, AccountID: row.AccountID, QueueID: row.QueueID, RunID: row.RunID, Number: row.Number,
		DisplayCode: row.DisplayCode, Status: turns.Status(row.Status), Priority: queues.Priority(row.Priority),
		Seq: row.Seq, PeopleCount: row.PeopleCount, Phone: row.Phone, NotifyWhatsapp: row.NotifyWhatsapp,
		StationID: row.StationID, CallCount: row.CallCount, Reentries: row.Reentries, HeldFrom: row.HeldFrom,
		ReopenTo: turns.Status(row.ReopenTo), ServiceSeconds: row.ServiceSeconds, IdempotencyKey: row.IdempotencyKey,
		RequestHash: row.RequestHash, ArrivedAt: utcPtr(row.ArrivedAt), CalledAt: utcPtr(row.CalledAt),
		StartedAt: utcPtr(row.StartedAt), FinishedAt: utcPtr(row.FinishedAt),
		CreatedAt: row.CreatedAt.UTC(), UpdatedAt: row.UpdatedAt.UTC(), AppointmentID: row.AppointmentID,
	}
	if err := json.Unmarshal(row.FormResponse, &t.FormResponse); err != nil {
		return t, wrap(err, "decode turn "+row.ID)
	}
	return t, nil
}

func turnsOf(rows []turnRow) ([]turns.Turn, error) {
	out := make([]turns.Turn, 0, len(rows))
	for i := range rows {
		t, err := rows[i].domain()
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// The unique indexes whose violations mean something to the domain.
const (
	turnsIdempotencyIndex = "turns_idempotency_idx"
	turnsStationIndex     = "turns_station_busy_idx"
)

// uniqueIndexViolated returns the index a unique violation names.
func uniqueIndexViolated(err error) (string, bool) {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "23505" {
		return pg.ConstraintName, true
	}
	return "", false
}

// turnWriteError maps the unique indexes behind the turn rules to their
// domain errors.
func turnWriteError(err error, t turns.Turn, what string) error {
	switch idx, _ := uniqueIndexViolated(err); idx {
	case turnsIdempotencyIndex:
		return turns.ErrDuplicateKey
	case turnsStationIndex:
		stationID := ""
		if t.StationID != nil {
			stationID = *t.StationID
		}
		return platform.Conflict(turns.CodeStationBusy, "the station is serving another turn",
			map[string]any{"stationId": stationID})
	}
	return wrap(err, what)
}

// Turns is the Postgres turns.Repository.
type Turns struct{ db *DB }

// NewTurns builds the repository.
func NewTurns(db *DB) *Turns { return &Turns{db: db} }

// Create stores a new turn.
func (r *Turns) Create(ctx context.Context, t turns.Turn) error {
	row, err := turnToRow(t)
	if err != nil {
		return err
	}
	// Deferred: sent with the transaction's next statement (deferred.go).
	return r.db.deferWrite(ctx, func(err error) error { return turnWriteError(err, t, "insert turn") },
		insertTurnSQL, row.values()...)
}

// The hot statements on turns run through pgx with parameters (withPgx):
// prepared once per connection instead of planned on every execution.
const (
	insertTurnSQL = `INSERT INTO turns (id, account_id, queue_id, run_id, number, display_code, status, priority, priority_rank, seq, people_count, phone, notify_whatsapp, form_response, station_id, call_count, reentries, held_from, reopen_to, service_seconds, idempotency_key, request_hash, arrived_at, called_at, started_at, finished_at, created_at, updated_at, appointment_id)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29)`
	updateTurnSQL = `UPDATE turns SET account_id = $2, queue_id = $3, run_id = $4, number = $5, display_code = $6, status = $7, priority = $8, priority_rank = $9, seq = $10, people_count = $11, phone = $12, notify_whatsapp = $13, form_response = $14, station_id = $15, call_count = $16, reentries = $17, held_from = $18, reopen_to = $19, service_seconds = $20, idempotency_key = $21, request_hash = $22, arrived_at = $23, called_at = $24, started_at = $25, finished_at = $26, created_at = $27, updated_at = $28, appointment_id = $29 WHERE id = $1`
)

// values are the row's columns in turnColumns' order.
func (row *turnRow) values() []any {
	return []any{row.ID, row.AccountID, row.QueueID, row.RunID, row.Number, row.DisplayCode, row.Status,
		row.Priority, row.PriorityRank, row.Seq, row.PeopleCount, row.Phone, row.NotifyWhatsapp, row.FormResponse,
		row.StationID, row.CallCount, row.Reentries, row.HeldFrom, row.ReopenTo, row.ServiceSeconds,
		row.IdempotencyKey, row.RequestHash, row.ArrivedAt, row.CalledAt, row.StartedAt, row.FinishedAt,
		row.CreatedAt, row.UpdatedAt, row.AppointmentID}
}

// queryTurn reads one turn with sql ($1 and on as args); false when none.
func (r *Turns) queryTurn(ctx context.Context, sql string, args ...any) (turns.Turn, bool, error) {
	var row turnRow
	err := r.db.withPgx(ctx, func(q pgxQuerier) error {
		return q.QueryRow(ctx, sql, args...).Scan(row.dests()...)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return turns.Turn{}, false, nil
	}
	if err != nil {
		return turns.Turn{}, false, err
	}
	if strings.Contains(sql, lockTurnRow) {
		r.db.foldLockedTurn(ctx, &row)
	}
	t, err := row.domain()
	return t, err == nil, err
}

// lockTurnRow is how a turn's row is locked for a change: NO KEY UPDATE,
// never UPDATE. A turn's update never changes its key (the id; its unique
// indexes are partial), and the rows written about a waiting turn (a ticket
// link, the access-code use, a forward) take KEY SHARE on it through their
// foreign key until their transaction commits. FOR UPDATE conflicts with
// KEY SHARE, so next's SKIP LOCKED passed such a turn by and called the one
// behind it; NO KEY UPDATE does not, and still conflicts with every other
// lock taken to change a turn (docs/turns.md, the lock order).
const lockTurnRow = `FOR NO KEY UPDATE`

func (r *Turns) get(ctx context.Context, id string, lock bool) (turns.Turn, error) {
	sql := `SELECT ` + turnColumns + ` FROM turns AS t WHERE t.id = $1`
	if lock {
		sql += ` ` + lockTurnRow
	}
	t, ok, err := r.queryTurn(ctx, sql, id)
	if err == nil && !ok {
		return turns.Turn{}, platform.NotFound("turn", id)
	}
	return t, notFound(err, "turn", id)
}

// Get returns a turn.
func (r *Turns) Get(ctx context.Context, id string) (turns.Turn, error) { return r.get(ctx, id, false) }

// GetForUpdate returns a turn and locks it until the unit of work ends.
func (r *Turns) GetForUpdate(ctx context.Context, id string) (turns.Turn, error) {
	return r.get(ctx, id, true)
}

// Update stores every field of a turn.
func (r *Turns) Update(ctx context.Context, t turns.Turn) error {
	row, err := turnToRow(t)
	if err != nil {
		return err
	}
	// Deferred: sent with the transaction's next statement (deferred.go).
	err = r.db.deferWrite(ctx, func(err error) error { return turnWriteError(err, t, "update turn") },
		updateTurnSQL, row.values()...)
	if err == nil {
		r.db.foldTurnUpdate(ctx, row)
	}
	return err
}

// ByIdempotencyKey finds the account's turn created with key.
func (r *Turns) ByIdempotencyKey(ctx context.Context, accountID, key string) (turns.Turn, error) {
	t, ok, err := r.queryTurn(ctx, `SELECT `+turnColumns+` FROM turns AS t
		WHERE t.account_id = $1 AND t.idempotency_key = $2`, accountID, key)
	if err == nil && !ok {
		return turns.Turn{}, platform.NotFound("turn", key)
	}
	return t, notFound(err, "turn", key)
}

// NextNumber increments the run's counter in period, in one upsert. The
// row lock it takes is held to the end of the transaction, so concurrent
// intakes of a run number one after the other, and a rollback gives the
// number back.
func (r *Turns) NextNumber(ctx context.Context, runID, period string) (int, error) {
	var n int
	err := r.db.withPgx(ctx, func(q pgxQuerier) error {
		return q.QueryRow(ctx, `INSERT INTO turn_counters AS c (run_id, period, last_number, line_version) VALUES ($1, $2, 1, 0)
		ON CONFLICT (run_id) DO UPDATE SET
			last_number = CASE WHEN c.period = EXCLUDED.period OR c.period = '' OR EXCLUDED.period = ''
				THEN c.last_number + 1 ELSE 1 END,
			period = EXCLUDED.period
		RETURNING last_number`, runID, period).Scan(&n)
	})
	return n, wrap(err, "next turn number")
}

// DrawNumber is NextNumber, CodeInUse of the number's display code and
// NextSeq in one statement. The code is spelled as turns' displayCode
// does: the prefix, then the number zero-padded to padding digits, never
// cut (lpad alone would cut a longer number).
func (r *Turns) DrawNumber(ctx context.Context, runID, period, prefix string, padding int, since time.Time) (int, bool, int64, error) {
	var (
		n    int
		held bool
		seq  int64
	)
	err := r.db.withPgx(ctx, func(q pgxQuerier) error {
		return q.QueryRow(ctx, drawNumberSQL, runID, period, prefix, padding, since).Scan(&n, &held, &seq)
	})
	return n, held, seq, wrap(err, "draw turn number")
}

// drawNumberSQL is DrawNumber's statement: the counter's upsert for run
// $1 in period $2, the code of its number (prefix $3, padding $4), whether
// a turn still holding that code finished after $5, and the arrival seq.
const drawNumberSQL = `WITH c AS (
	INSERT INTO turn_counters AS c (run_id, period, last_number, line_version) VALUES ($1, $2, 1, 0)` + drawNumberTail

// drawAheadSQL is drawNumberSQL drawn only when run $1 is account $6's and
// none of the account's turns has idempotency key $7 (null: none asked):
// otherwise no row is proposed, nothing is drawn and nothing is returned.
// An intake sends it with its run's lock (Turns.LockRunForIntake). It also
// makes the run's next line version, on the same row, and returns it
// (turns.DrawnNumber.LineVersion): the intake records its line change
// under it, so the line needs no upsert of its own and its version no read
// (migration 0250; docs/scaling.md, one row per intake).
const drawAheadSQL = `WITH c AS (
	INSERT INTO turn_counters AS c (run_id, period, last_number, line_version)
	SELECT $1::text, $2::text, 1, 1
	WHERE EXISTS (SELECT 1 FROM queue_runs WHERE id = $1 AND account_id = $6::text)
	AND NOT EXISTS (SELECT 1 FROM turns WHERE account_id = $6 AND idempotency_key = $7::text)` + drawAheadTail

// drawAheadNoKeySQL is drawAheadSQL for an intake without an idempotency
// key ($7 null): no turn has a null key (idempotency_key = NULL is never
// true), so its look-up is left out rather than run. The look-up was an
// InitPlan of its own, about 30,000 of PostgreSQL's 1.2 million
// instructions per intake (issue 30, fourth session: callgrind, pgs).
const drawAheadNoKeySQL = `WITH c AS (
	INSERT INTO turn_counters AS c (run_id, period, last_number, line_version)
	SELECT $1::text, $2::text, 1, 1
	WHERE EXISTS (SELECT 1 FROM queue_runs WHERE id = $1 AND account_id = $6::text)` + drawAheadTail

// The code is a MATERIALIZED CTE so that the look-up below compares
// display_code with a plain value: inlined, the code is an expression of
// the counter's row, and a generic plan made while turns was small (pgx
// prepares the statement once per connection) checked it as a filter over
// every turn of the run, found through an index on run_id alone, not as
// turns_code_idx's index condition. The intake's cost then grew with its run, and P3h
// halved (issue 16).
const drawNumberTail = drawCounterUpdate + `
	RETURNING last_number),
code AS MATERIALIZED (SELECT c.last_number AS n, ` + drawCode + ` AS code FROM c)
SELECT code.n, ` + drawCodeHeld + `, nextval('turn_seq')
FROM code`

// drawAheadTail is drawNumberTail bumping the run's line version too, and
// returning it last.
const drawAheadTail = drawCounterUpdate + `,
		line_version = c.line_version + 1
	RETURNING last_number, line_version),
code AS MATERIALIZED (SELECT c.last_number AS n, c.line_version AS v, ` + drawCode + ` AS code FROM c)
SELECT code.n, ` + drawCodeHeld + `, nextval('turn_seq'), code.v
FROM code`

// drawCounterUpdate is the draws' increment of the counter: a new period
// starts again at 1; the empty period (a queue without a daily restart, or a row
// a line bump made before any number, migration 0250) goes on.
const drawCounterUpdate = `
	ON CONFLICT (run_id) DO UPDATE SET
		last_number = CASE WHEN c.period = EXCLUDED.period OR c.period = '' OR EXCLUDED.period = ''
			THEN c.last_number + 1 ELSE 1 END,
		period = EXCLUDED.period`

// drawCode spells the drawn number's (c) display code; drawCodeHeld is
// whether a turn of the run still holds it.
const (
	drawCode = `$3::text || CASE WHEN length(c.last_number::text) >= $4::int
	THEN c.last_number::text ELSE lpad(c.last_number::text, $4::int, '0') END`
	drawCodeHeld = `EXISTS (SELECT 1 FROM turns
	WHERE run_id = $1 AND display_code = code.code
	AND (status NOT IN ('COMPLETED', 'CANCELLED') OR finished_at > $5))`
)

// CodeInUse reports whether a turn of the run that is or may come back in
// the line shows code (turns_code_idx finds the run's turns with the code).
func (r *Turns) CodeInUse(ctx context.Context, runID, code string, since time.Time) (bool, error) {
	var held bool
	err := r.db.withPgx(ctx, func(q pgxQuerier) error {
		return q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM turns
		WHERE run_id = $1 AND display_code = $2
		AND (status NOT IN ('COMPLETED', 'CANCELLED') OR finished_at > $3))`, runID, code, since).Scan(&held)
	})
	return held, wrap(err, "display code in use")
}

// NextSeq draws an arrival sequence number.
func (r *Turns) NextSeq(ctx context.Context) (int64, error) {
	var n int64
	err := r.db.withPgx(ctx, func(q pgxQuerier) error {
		return q.QueryRow(ctx, `SELECT nextval('turn_seq')`).Scan(&n)
	})
	return n, wrap(err, "next turn seq")
}

// take locks the run's first turn in status in line order, skipping rows
// other transactions hold, so concurrent dispatchers take different turns
// without waiting for each other.
func (r *Turns) take(ctx context.Context, runID string, status turns.Status) (turns.Turn, bool, error) {
	t, ok, err := r.queryTurn(ctx, takeSQL, runID, string(status))
	return t, ok, wrap(err, "take turn")
}

// takeSQL locks run $1's first turn in status $2 in line order
// (turns_line_idx), skipping rows other dispatchers hold. Only those: a
// row's KEY SHARE, taken by the foreign key of a row written about the turn,
// does not conflict with lockTurnRow, so it hides no turn from next.
const takeSQL = `SELECT ` + turnColumns + ` FROM turns AS t
	WHERE t.run_id = $1 AND t.status = $2 ORDER BY t.priority_rank, t.seq LIMIT 1 ` + lockTurnRow + ` SKIP LOCKED`

// TakeNext locks the run's first WAITING turn in line order.
func (r *Turns) TakeNext(ctx context.Context, runID string) (turns.Turn, bool, error) {
	return r.take(ctx, runID, turns.Waiting)
}

// TakeWaitlisted locks the run's first WAITLISTED turn in line order.
func (r *Turns) TakeWaitlisted(ctx context.Context, runID string) (turns.Turn, bool, error) {
	return r.take(ctx, runID, turns.Waitlisted)
}

var (
	activeStatuses     = []string{string(turns.Waiting), string(turns.Held), string(turns.Called), string(turns.InService)}
	unfinishedStatuses = append([]string{string(turns.Waitlisted)}, activeStatuses...)
	finishedStatuses   = []string{string(turns.Completed), string(turns.NoShow), string(turns.Cancelled)}
)

// Occupancy counts the run's active and waitlisted turns, in one index
// scan of the line index.
func (r *Turns) Occupancy(ctx context.Context, runID string) (turns.Occupancy, error) {
	var occ turns.Occupancy
	err := r.db.IDB(ctx).NewRaw(`SELECT count(*) FILTER (WHERE status <> 'WAITLISTED'), count(*) FILTER (WHERE status = 'WAITLISTED')
		FROM turns WHERE run_id = ? AND status IN (?)`, runID, bun.List(unfinishedStatuses)).Scan(ctx, &occ.Active, &occ.Waitlisted)
	return occ, wrap(err, "count the run's turns")
}

// AtStation returns the turn the station is serving.
func (r *Turns) AtStation(ctx context.Context, stationID string) (turns.Turn, bool, error) {
	var rows []turnRow
	err := r.db.IDB(ctx).NewSelect().Model(&rows).Where("station_id = ?", stationID).
		Where("status IN (?)", bun.List([]string{string(turns.Called), string(turns.InService)})).Limit(1).Scan(ctx)
	if err != nil {
		return turns.Turn{}, false, wrap(err, "turn at station")
	}
	if len(rows) == 0 {
		return turns.Turn{}, false, nil
	}
	t, err := rows[0].domain()
	return t, err == nil, err
}

func (r *Turns) page(ctx context.Context, q *bun.SelectQuery, page platform.PageRequest) ([]turns.Turn, error) {
	var rows []turnRow
	q = q.Model(&rows).Order("id").Limit(int64(page.Limit + 1))
	if page.After != "" {
		q = q.Where("id > ?", page.After)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "list turns")
	}
	return turnsOf(rows)
}

// List pages a run's turns by id.
func (r *Turns) List(ctx context.Context, runID string, statuses []turns.Status, page platform.PageRequest) ([]turns.Turn, error) {
	q := r.db.IDB(ctx).NewSelect().Where("run_id = ?", runID)
	if len(statuses) > 0 {
		names := make([]string, len(statuses))
		for i, s := range statuses {
			names[i] = string(s)
		}
		q = q.Where("status IN (?)", bun.List(names))
	}
	return r.page(ctx, q, page)
}

// ListArrivals pages the run's unfinished turns that have arrived.
func (r *Turns) ListArrivals(ctx context.Context, runID string, page platform.PageRequest) ([]turns.Turn, error) {
	q := r.db.IDB(ctx).NewSelect().Where("run_id = ?", runID).Where("arrived_at IS NOT NULL").
		Where("status NOT IN (?)", bun.List(finishedStatuses))
	return r.page(ctx, q, page)
}

// BumpLine increments the run's line version and records the change under
// the new version, or, when the change carries the version its intake's
// number was drawn with, records it under that. The row lock the increment
// (or the draw) takes is held to the end of the transaction, which orders
// versions as the changes commit. Every
// lineChangesPruneEvery versions, changes older than the kept window are
// deleted.
func (r *Turns) BumpLine(ctx context.Context, runID string, change turns.LineChange) (int64, error) {
	removed, added := encodeKeys(change.Removed), encodeKeys(change.Added)
	var v int64
	if change.Version > 0 {
		// The intake's draw made the version (drawAheadSQL), under the
		// run's lock: the change is only recorded, with the COMMIT.
		if err := r.db.keepDrawnLineVersion(ctx, runID, change.Version); err != nil {
			return 0, err
		}
		err := r.db.deferWrite(ctx, func(err error) error { return wrap(err, "record line change") },
			recordLineSQL, runID, removed, added, change.Reset, change.Version)
		if err != nil {
			return 0, err
		}
		v = change.Version
	} else if next, ok := r.db.nextLineVersion(ctx, runID); ok {
		// The run was locked by a statement that read its line version, and
		// only a holder of that lock bumps it: the new version is known, so
		// the bump waits and goes out with the transaction's next statement
		// (for an intake, its COMMIT).
		err := r.db.deferWrite(ctx, func(err error) error { return wrap(err, "bump line version") },
			bumpLineSQL, runID, removed, added, change.Reset, next)
		if err != nil {
			return 0, err
		}
		v = next
	} else {
		err := r.db.withPgx(ctx, func(q pgxQuerier) error {
			return q.QueryRow(ctx, bumpLineSQL, runID, removed, added, change.Reset, nil).Scan(&v)
		})
		if err != nil {
			return 0, wrap(err, "bump line version")
		}
	}
	if v%lineChangesPruneEvery == 0 {
		_, err := r.db.IDB(ctx).NewRaw(`DELETE FROM turn_line_changes WHERE run_id = ? AND version <= ?`,
			runID, v-turns.LineChangesKept).Exec(ctx)
		return v, wrap(err, "prune line changes")
	}
	return v, nil
}

// bumpLineSQL increments the run's ($1) line version and records the change
// under it, in one statement (the version's upsert feeds the change's
// insert). $5, when not null, is the version the bump must make (foretold
// under the run's lock); any other leaves the change's NOT NULL version
// empty, which fails the transaction instead of recording it.
const bumpLineSQL = `WITH v AS (
	INSERT INTO turn_counters AS c (run_id, period, last_number, line_version) VALUES ($1, '', 0, 1)
	ON CONFLICT (run_id) DO UPDATE SET line_version = c.line_version + 1 RETURNING line_version AS version)
INSERT INTO turn_line_changes (run_id, version, removed, added, reset)
SELECT $1, CASE WHEN $5::bigint IS NULL OR v.version = $5 THEN v.version END, $2, $3, $4 FROM v
RETURNING version`

// recordLineSQL records run $1's line change under version $5, which the
// draw of the intake's number made (drawAheadSQL).
const recordLineSQL = `INSERT INTO turn_line_changes (run_id, version, removed, added, reset) VALUES ($1, $5, $2, $3, $4)`

// lineChangesPruneEvery spaces the pruning of turn_line_changes, so a run
// keeps between LineChangesKept and LineChangesKept+lineChangesPruneEvery
// changes.
const lineChangesPruneEvery = 256

// A line key as one bigint: the rank in the top byte, seq below it,
// biased by seqBias so that the negative seqs of turns put back at the head
// of the line encode too (a sequence would need 2^55 turns to reach the
// bias).
const seqBias = 1 << 55

func encodeKeys(keys []turns.LineKey) []int64 {
	out := make([]int64, len(keys))
	for i, k := range keys {
		out[i] = int64(k.Rank)<<56 | (k.Seq + seqBias)
	}
	return out
}

func decodeKeys(codes []int64) []turns.LineKey {
	out := make([]turns.LineKey, len(codes))
	for i, c := range codes {
		out[i] = turns.LineKey{Rank: int(c >> 56), Seq: c&(1<<56-1) - seqBias}
	}
	return out
}

// LineChanges returns the run's recorded changes in (after, upTo]. Sent
// through pgx, it carries the unit's deferred writes in its batch: a
// change's answer reads the changes another process made before the run's
// lock (turns' txSnapshot) in the round trip of the change's own writes.
func (r *Turns) LineChanges(ctx context.Context, runID string, after, upTo int64) ([]turns.LineChange, error) {
	if out, ok := r.db.foldedLineChanges(ctx, runID, after, upTo); ok {
		return out, nil
	}
	var out []turns.LineChange
	err := r.db.withPgx(ctx, func(q pgxQuerier) error {
		rows, err := q.Query(ctx, `SELECT version, removed, added, reset FROM turn_line_changes
			WHERE run_id = $1 AND version > $2 AND version <= $3 ORDER BY version`, runID, after, upTo)
		if err != nil {
			return err
		}
		out, err = scanLineChanges(rows, nil)
		return err
	})
	if err != nil {
		return nil, wrap(err, "line changes")
	}
	return out, nil
}

// scanLineChanges reads rows of (version, removed, added, reset) and
// closes them.
func scanLineChanges(rows pgx.Rows, err error) ([]turns.LineChange, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []turns.LineChange
	for rows.Next() {
		var (
			c              turns.LineChange
			removed, added []int64
		)
		if err := rows.Scan(&c.Version, &removed, &added, &c.Reset); err != nil {
			return nil, err
		}
		c.Removed, c.Added = decodeKeys(removed), decodeKeys(added)
		out = append(out, c)
	}
	return out, rows.Err()
}

// LineVersion returns the run's line version.
func (r *Turns) LineVersion(ctx context.Context, runID string) (int64, error) {
	var v int64
	err := r.db.IDB(ctx).NewRaw(`SELECT coalesce((SELECT line_version FROM turn_counters WHERE run_id = ?), 0)`, runID).Scan(ctx, &v)
	return v, wrap(err, "line version")
}

// WaitingLine returns the version and the line in one statement, so both
// come from one snapshot.
func (r *Turns) WaitingLine(ctx context.Context, runID string) (int64, []turns.LineKey, error) {
	var (
		v     int64
		ranks []int64
		seqs  []int64
	)
	err := r.db.IDB(ctx).NewRaw(`SELECT coalesce((SELECT line_version FROM turn_counters WHERE run_id = ?0), 0),
		coalesce(array_agg(priority_rank ORDER BY priority_rank, seq), '{}'),
		coalesce(array_agg(seq ORDER BY priority_rank, seq), '{}')
		FROM turns WHERE run_id = ?0 AND status = 'WAITING'`, runID).
		Scan(ctx, &v, pgdialect.Array(&ranks), pgdialect.Array(&seqs))
	if err != nil {
		return 0, nil, wrap(err, "waiting line")
	}
	keys := make([]turns.LineKey, len(seqs))
	for i := range seqs {
		keys[i] = turns.LineKey{Rank: int(ranks[i]), Seq: seqs[i]}
	}
	return v, keys, nil
}

// RecentServiceSeconds returns the queue's latest service times, newest
// first: from the running summary (migration 0095) up to the
// turns.ServiceSamples it keeps, sorted out of the turns beyond.
func (r *Turns) RecentServiceSeconds(ctx context.Context, queueID string, n int) ([]float64, error) {
	var out []float64
	if n <= turns.ServiceSamples {
		err := r.db.IDB(ctx).NewRaw(`SELECT coalesce((SELECT samples[1:?] FROM queue_service_times WHERE queue_id = ?), '{}')`,
			n, queueID).Scan(ctx, pgdialect.Array(&out))
		return out, wrap(err, "recent service times")
	}
	err := r.db.IDB(ctx).NewSelect().Model((*turnRow)(nil)).Column("service_seconds").
		Where("queue_id = ?", queueID).Where("service_seconds IS NOT NULL").
		OrderExpr("finished_at DESC").Limit(int64(n)).Scan(ctx, &out)
	return out, wrap(err, "recent service times")
}

// turnColumns are a turn's columns (alias t) in the order scanTurn reads.
const turnColumns = `t.id, t.account_id, t.queue_id, t.run_id, t.number, t.display_code, t.status, t.priority,
	t.priority_rank, t.seq, t.people_count, t.phone, t.notify_whatsapp, t.form_response, t.station_id, t.call_count,
	t.reentries, t.held_from, t.reopen_to, t.service_seconds, t.idempotency_key, t.request_hash, t.arrived_at,
	t.called_at, t.started_at, t.finished_at, t.created_at, t.updated_at, t.appointment_id`

// turnDests are the scan destinations of turnColumns.
func (row *turnRow) dests() []any {
	return []any{&row.ID, &row.AccountID, &row.QueueID, &row.RunID, &row.Number, &row.DisplayCode, &row.Status,
		&row.Priority, &row.PriorityRank, &row.Seq, &row.PeopleCount, &row.Phone, &row.NotifyWhatsapp, &row.FormResponse,
		&row.StationID, &row.CallCount, &row.Reentries, &row.HeldFrom, &row.ReopenTo, &row.ServiceSeconds,
		&row.IdempotencyKey, &row.RequestHash, &row.ArrivedAt, &row.CalledAt, &row.StartedAt, &row.FinishedAt,
		&row.CreatedAt, &row.UpdatedAt, &row.AppointmentID}
}

// queueNowSQL reads what names a queue's ($1) definition (its
// view_version) and its latest service times (the running summary of
// migration 0095).
const queueNowSQL = `SELECT q.view_version, ` + queueServiceColumn + `
FROM queues AS q WHERE q.id = $1`

// stationJSON is a station as json_build_object spells it.
type stationJSON struct {
	ID          string    `json:"id"`
	AccountID   string    `json:"account_id"`
	QueueID     string    `json:"queue_id"`
	Label       string    `json:"label"`
	Description *string   `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
}

// GetForView reads a turn, its run's status and line version, the
// queue's version and latest service times in one statement (GET
// /turns/{id}; turnview.go), coalesced with the reads asked for at the
// same time (viewbatch.go); the queue and its stations come from
// queueViews, or from a second read when this process has not seen that
// version yet. id may alias the caller's request (fiber's path buffer):
// the turn's ID and a not-found error's details are id itself, fine to
// answer with and not to keep past the request; a read that waits for a
// round trip copies it (roundTrips.keep).
func (r *Turns) GetForView(ctx context.Context, id string) (turns.Turn, turns.ViewContext, error) {
	row, err := r.db.turnView(ctx, id)
	if err == nil && !row.hasQueue {
		// The join this subquery replaced found no row either (and the
		// foreign key's cascade makes it impossible).
		err = pgx.ErrNoRows
	}
	if err != nil {
		return turns.Turn{}, turns.ViewContext{}, notFound(err, "turn", id)
	}
	q, sts, err := r.db.queueAt(ctx, row.turn.QueueID, row.queueVer)
	if err != nil {
		return turns.Turn{}, turns.ViewContext{}, err
	}
	return row.turn, turns.ViewContext{Queue: q, Stations: sts, LineVersion: row.lineVersion,
		RunOpen: row.runOpen, ServiceSeconds: row.service}, nil
}

// QueueForView returns a queue's stations and its latest service times
// (the answer of a change, inside its transaction): what the run lock read,
// or one read of the queue's version and summary.
func (r *Turns) QueueForView(ctx context.Context, queueID string) ([]queues.Station, []float64, error) {
	if stations, service, ok := r.db.foldedQueueView(ctx, queueID); ok {
		return stations, service, nil
	}
	var (
		ref     queueRef
		service []float64
	)
	err := r.db.withPgx(ctx, func(q pgxQuerier) error {
		return q.QueryRow(ctx, queueNowSQL, queueID).Scan(&ref.version, &service)
	})
	if err != nil {
		return nil, nil, notFound(err, "queue", queueID)
	}
	_, sts, err := r.db.queueAt(ctx, queueID, ref.version)
	return sts, service, err
}

// decodeStations decodes the stations json_agg built (stationJSON).
func decodeStations(doc json.RawMessage, queueID string) ([]queues.Station, error) {
	var sts []stationJSON
	if err := json.Unmarshal(doc, &sts); err != nil {
		return nil, wrap(err, "decode stations of queue "+queueID)
	}
	out := make([]queues.Station, len(sts))
	for i, s := range sts {
		out[i] = stationRow{ID: s.ID, AccountID: s.AccountID, QueueID: s.QueueID, Label: s.Label,
			Description: s.Description, CreatedAt: s.CreatedAt}.domain()
	}
	return out, nil
}
