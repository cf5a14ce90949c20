package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

type queueRow struct {
	bun.BaseModel `bun:"table:queues"`
	ID            string    `bun:"id,pk"`
	AccountID     string    `bun:"account_id"`
	EntityID      string    `bun:"entity_id"`
	Name          string    `bun:"name"`
	Type          string    `bun:"type"`
	Doc           jsonb     `bun:"doc,type:jsonb"`
	CreatedAt     time.Time `bun:"created_at"`
	// ViewVersion names this state of the queue's definition (migration
	// 0095); the database sets it, so writes leave it out.
	ViewVersion int64 `bun:"view_version,scanonly"`
	// BranchTimezone is read with the queue from its entity (branchZone).
	BranchTimezone *string `bun:"branch_timezone,scanonly"`
}

// branchZone selects the queue's entity's time zone beside the queue.
const branchZone = `(SELECT e.doc->'location'->>'timezone' FROM entities AS e WHERE e.id = "queue_row"."entity_id") AS branch_timezone`

type stationRow struct {
	bun.BaseModel `bun:"table:stations"`
	ID            string    `bun:"id,pk"`
	AccountID     string    `bun:"account_id"`
	QueueID       string    `bun:"queue_id"`
	Label         string    `bun:"label"`
	Description   *string   `bun:"description"`
	CreatedAt     time.Time `bun:"created_at"`
}

type runRow struct {
	bun.BaseModel `bun:"table:queue_runs"`
	ID            string     `bun:"id,pk"`
	AccountID     string     `bun:"account_id"`
	QueueID       string     `bun:"queue_id"`
	Status        string     `bun:"status"`
	IntakeOpen    bool       `bun:"intake_open"`
	OpenedAt      *time.Time `bun:"opened_at"`
	ClosedAt      *time.Time `bun:"closed_at"`
	CreatedAt     time.Time  `bun:"created_at"`
	UpdatedAt     time.Time  `bun:"updated_at"`
}

// Queues is the Postgres queues.Repository.
type Queues struct{ db *DB }

// NewQueues builds the repository.
func NewQueues(db *DB) *Queues { return &Queues{db: db} }

func queueToRow(q queues.Queue) (*queueRow, error) {
	doc, err := json.Marshal(q)
	if err != nil {
		return nil, wrap(err, "encode queue")
	}
	return &queueRow{ID: q.ID, AccountID: q.AccountID, EntityID: q.EntityID, Name: q.Name, Type: q.Type, Doc: doc, CreatedAt: q.CreatedAt}, nil
}

func (row queueRow) domain() (queues.Queue, error) {
	var q queues.Queue
	if err := json.Unmarshal(row.Doc, &q); err != nil {
		return q, wrap(err, "decode queue "+row.ID)
	}
	q.AccountID = row.AccountID
	q.BranchTimezone = row.BranchTimezone
	q.ResolveZone()
	return q, nil
}

// CreateQueue stores a new queue.
func (r *Queues) CreateQueue(ctx context.Context, q queues.Queue) error {
	row, err := queueToRow(q)
	if err != nil {
		return err
	}
	_, err = r.db.IDB(ctx).NewInsert().Model(row).Exec(ctx)
	return wrap(err, "insert queue")
}

func (r *Queues) getQueue(ctx context.Context, id string, lock bool) (queues.Queue, error) {
	var row queueRow
	q := r.db.IDB(ctx).NewSelect().Model(&row).ColumnExpr(`"queue_row".*`).ColumnExpr(branchZone).Where("id = ?", id)
	if lock {
		// NO KEY UPDATE: a settings change must not hold up the intakes
		// whose new turns' foreign key takes KEY SHARE on the queue.
		q = q.For("NO KEY UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return queues.Queue{}, notFound(err, "queue", id)
	}
	return row.domain()
}

// GetQueue returns a queue.
func (r *Queues) GetQueue(ctx context.Context, id string) (queues.Queue, error) {
	return r.getQueue(ctx, id, false)
}

// GetQueueForUpdate returns a queue and locks its row until the unit of
// work ends.
func (r *Queues) GetQueueForUpdate(ctx context.Context, id string) (queues.Queue, error) {
	return r.getQueue(ctx, id, true)
}

// UpdateQueue replaces a queue's settings.
func (r *Queues) UpdateQueue(ctx context.Context, q queues.Queue) error {
	row, err := queueToRow(q)
	if err != nil {
		return err
	}
	_, err = r.db.IDB(ctx).NewUpdate().Model(row).Column("name", "doc").WherePK().Exec(ctx)
	return wrap(err, "update queue")
}

// ListQueues pages the account's queues by id.
func (r *Queues) ListQueues(ctx context.Context, accountID, entityID string, page platform.PageRequest) ([]queues.Queue, error) {
	var rows []queueRow
	q := r.db.IDB(ctx).NewSelect().Model(&rows).ColumnExpr(`"queue_row".*`).ColumnExpr(branchZone).
		Where("account_id = ?", accountID).Order("id").Limit(int64(page.Limit + 1))
	if entityID != "" {
		q = q.Where("entity_id = ?", entityID)
	}
	if page.After != "" {
		q = q.Where("id > ?", page.After)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "list queues")
	}
	out := make([]queues.Queue, 0, len(rows))
	for _, row := range rows {
		qu, err := row.domain()
		if err != nil {
			return nil, err
		}
		out = append(out, qu)
	}
	return out, nil
}

// CreateStation stores a new station.
func (r *Queues) CreateStation(ctx context.Context, s queues.Station) error {
	row := &stationRow{ID: s.ID, AccountID: s.AccountID, QueueID: s.QueueID, Label: s.Label, Description: s.Description, CreatedAt: s.CreatedAt}
	_, err := r.db.IDB(ctx).NewInsert().Model(row).Exec(ctx)
	return wrap(err, "insert station")
}

func (row stationRow) domain() queues.Station {
	return queues.Station{ID: row.ID, AccountID: row.AccountID, QueueID: row.QueueID, Label: row.Label, Description: row.Description, CreatedAt: row.CreatedAt}
}

// GetStation returns a station.
func (r *Queues) GetStation(ctx context.Context, id string) (queues.Station, error) {
	var row stationRow
	if err := r.db.IDB(ctx).NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return queues.Station{}, notFound(err, "station", id)
	}
	return row.domain(), nil
}

// DeleteStation removes a station.
func (r *Queues) DeleteStation(ctx context.Context, id string) error {
	_, err := r.db.IDB(ctx).NewDelete().TableExpr("stations").Where("id = ?", id).Exec(ctx)
	return wrap(err, "delete station")
}

// ListStations lists a queue's stations, oldest first.
func (r *Queues) ListStations(ctx context.Context, queueID string) ([]queues.Station, error) {
	var rows []stationRow
	if err := r.db.IDB(ctx).NewSelect().Model(&rows).Where("queue_id = ?", queueID).Order("id").Scan(ctx); err != nil {
		return nil, wrap(err, "list stations")
	}
	out := make([]queues.Station, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

func runToRow(run queues.Run) *runRow {
	return &runRow{ID: run.ID, AccountID: run.AccountID, QueueID: run.QueueID, Status: run.Status, IntakeOpen: run.IntakeOpen,
		OpenedAt: run.OpenedAt, ClosedAt: run.ClosedAt, CreatedAt: run.CreatedAt, UpdatedAt: run.UpdatedAt}
}

func (row runRow) domain() queues.Run {
	return queues.Run{ID: row.ID, AccountID: row.AccountID, QueueID: row.QueueID, Status: row.Status, IntakeOpen: row.IntakeOpen,
		OpenedAt: row.OpenedAt, ClosedAt: row.ClosedAt, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt}
}

// CreateRun stores a new run.
func (r *Queues) CreateRun(ctx context.Context, run queues.Run) error {
	_, err := r.db.IDB(ctx).NewInsert().Model(runToRow(run)).Exec(ctx)
	return wrap(err, "insert run")
}

func (r *Queues) getRun(ctx context.Context, id string, lock bool) (queues.Run, error) {
	var row runRow
	q := r.db.IDB(ctx).NewSelect().Model(&row).Where("id = ?", id)
	if lock {
		// NO KEY UPDATE, not UPDATE: the foreign keys of the rows a locked
		// run's transaction and its neighbours insert (turns,
		// turn_line_changes, turn_counters) take KEY SHARE on the run,
		// which FOR UPDATE would block (docs/turns.md, the lock order).
		q = q.For("NO KEY UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return queues.Run{}, notFound(err, "queue run", id)
	}
	return row.domain(), nil
}

// GetRun returns a run.
func (r *Queues) GetRun(ctx context.Context, id string) (queues.Run, error) {
	return r.getRun(ctx, id, false)
}

// GetRunForUpdate returns a run and locks its row until the unit of work
// ends.
func (r *Queues) GetRunForUpdate(ctx context.Context, id string) (queues.Run, error) {
	return r.getRun(ctx, id, true)
}

// UpdateRun replaces a run.
func (r *Queues) UpdateRun(ctx context.Context, run queues.Run) error {
	_, err := r.db.IDB(ctx).NewUpdate().Model(runToRow(run)).WherePK().Exec(ctx)
	return wrap(err, "update run")
}

// ListRuns returns a queue's newest runs first.
func (r *Queues) ListRuns(ctx context.Context, queueID string, limit int) ([]queues.Run, error) {
	var rows []runRow
	q := r.db.IDB(ctx).NewSelect().Model(&rows).Where("queue_id = ?", queueID).Order("id DESC")
	if limit > 0 {
		q = q.Limit(int64(limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "list runs")
	}
	out := make([]queues.Run, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// runQueueColumns are a run's columns (alias r) and what names its queue's
// definition (alias q): the queue's view_version (which covers its
// stations and its branch's time zone, migrations 0095 and 0097), in the
// order scanRunQueue reads. The definition itself comes from the
// process's queueViews, read only when that version is new to it.
const runQueueColumns = `r.id, r.account_id, r.queue_id, r.status, r.intake_open, r.opened_at, r.closed_at,
	r.created_at, r.updated_at, q.view_version`

// runLineEndpointsSQL reads, after the run's ($1) lock in the same batch,
// the run's line version, then all the webhook endpoints of its account in
// the order the deliveries are made (for the events of the transaction,
// Events.Append): one row per endpoint, the version in each, and one row of
// nulls with the version when there is none. A plain read, no lock.
//
// It is a statement of its own, after the lock's: a statement that waited
// for a row lock sees the locked row as committed, but its subqueries keep
// the snapshot taken before the wait, which would miss the bump of the
// transaction it waited for. The next statement takes a new snapshot. The
// two reads share one statement because each statement costs PostgreSQL
// its executor's start and end whatever it reads (issue 16, P3).
const runLineEndpointsSQL = `SELECT l.version, e.id, e.account_id, e.url, e.events, e.created_at
	FROM (SELECT coalesce((SELECT line_version FROM turn_counters WHERE run_id = $1), 0) AS version) AS l
	LEFT JOIN webhook_endpoints AS e ON e.account_id = (SELECT account_id FROM queue_runs WHERE id = $1)
	ORDER BY e.id`

// turnLineEndpointsSQL is runLineEndpointsSQL for the run and account of
// turn $1.
const turnLineEndpointsSQL = `SELECT l.version, e.id, e.account_id, e.url, e.events, e.created_at
	FROM (SELECT coalesce((SELECT l.line_version FROM turns AS t JOIN turn_counters AS l ON l.run_id = t.run_id
		WHERE t.id = $1), 0) AS version) AS l
	LEFT JOIN webhook_endpoints AS e ON e.account_id = (SELECT account_id FROM turns WHERE id = $1)
	ORDER BY e.id`

// queueServiceColumn reads, next to the run lock, the queue's (q) latest
// service times for the change's answer (QueueForView): the running
// summary of migration 0095, one row by key, no sort.
const queueServiceColumn = `coalesce((SELECT st.samples FROM queue_service_times AS st WHERE st.queue_id = q.id), '{}')`

// queueRef is what a hot statement read of a queue: enough to find its
// definition in queueViews.
type queueRef struct {
	version int64
	// line is the run's line version, read after the run's lock
	// (runLineEndpointsSQL), or made by the intake's draw (drawAheadSQL),
	// when lineKnown.
	line      int64
	lineKnown bool
}

// scanRunQueue reads runQueueColumns, then extra.
func scanRunQueue(row pgx.Row, extra ...any) (queues.Run, queueRef, error) {
	var (
		rr  runRow
		ref queueRef
	)
	dests := append([]any{&rr.ID, &rr.AccountID, &rr.QueueID, &rr.Status, &rr.IntakeOpen, &rr.OpenedAt, &rr.ClosedAt,
		&rr.CreatedAt, &rr.UpdatedAt, &ref.version}, extra...)
	if err := row.Scan(dests...); err != nil {
		return queues.Run{}, ref, err
	}
	return rr.domain(), ref, nil
}

// lockedQueue finishes a run lock: the run's queue and stations at the
// version the lock's statement read (from queueViews, or read through the
// unit of work on a miss), kept with the service times for the answer, and
// the run's line version, when known, kept for the transaction's bumps.
func (r *Turns) lockedQueue(ctx context.Context, run queues.Run, ref queueRef, service []float64) (queues.Queue, error) {
	if ref.lineKnown {
		r.db.foldLineVersion(ctx, run.ID, ref.line)
	}
	r.db.views.putRun(run.ID, run.QueueID)
	q, sts, err := r.db.queueAt(ctx, run.QueueID, ref.version)
	if err != nil {
		return queues.Queue{}, err
	}
	r.db.foldQueueView(ctx, q.ID, sts, service)
	return q, nil
}

// LockRunWithQueue locks a run as GetRunForUpdate does and names its
// queue's version in the same statement (the queue itself from queueViews),
// then reads the run's line version and its account's webhook endpoints,
// in one batch: LockRunForIntake with nothing more asked.
func (r *Turns) LockRunWithQueue(ctx context.Context, runID string) (queues.Run, queues.Queue, error) {
	got, err := r.LockRunForIntake(ctx, turns.IntakeLock{RunID: runID})
	if err == nil {
		err = got.RunErr
	}
	if err != nil {
		return queues.Run{}, queues.Queue{}, err
	}
	return got.Run, got.Queue, nil
}

// lineChangesAfterLockSQL reads, after the run's ($1) lock in the same
// batch, the changes of its line after version $2 (the process's cached
// line), at most $3 of them: those other processes committed before the
// lock, which the change's answer patches its cached line with
// (LineChanges, from the transaction's fold). Its own statement, after the
// lock's, for the snapshot (runLineEndpointsSQL).
const lineChangesAfterLockSQL = `SELECT version, removed, added, reset FROM turn_line_changes
	WHERE run_id = $1 AND version > $2 ORDER BY version LIMIT $3`

// maxPrefetchedLineChanges bounds lineChangesAfterLockSQL: a cached line
// further behind than this is read whole (core's maxLinePatch).
const maxPrefetchedLineChanges = 256

// lockRunSQL locks run $1 (FOR NO KEY UPDATE, only the run) and reads its
// queue's version and service summary.
const lockRunSQL = `SELECT ` + runQueueColumns + `, ` + queueServiceColumn + `
	FROM queue_runs AS r JOIN queues AS q ON q.id = r.queue_id
	WHERE r.id = $1 FOR NO KEY UPDATE OF r`

// lockRunEndpointsSQL is lockRunSQL reading, in the same statement, the
// webhook endpoints of the run's account as runLineEndpointsSQL does (one
// row per endpoint, in delivery order; one with nulls when there is none),
// without the line version: an intake that draws its number ahead learns
// the version from the draw (drawAheadSQL), so the line and endpoints'
// statement goes (issue 30: a statement less, about 5 % of PostgreSQL's
// instructions per intake). The endpoints are read with the snapshot the
// statement took before it waited for the run, as a read just before the
// lock would; nothing orders an endpoint's change with a run's lock. An
// endpoint deleted during the wait gets no delivery (insertDeliveriesSQL
// skips it rather than fail the intake on its foreign key).
const lockRunEndpointsSQL = `SELECT ` + runQueueColumns + `, ` + queueServiceColumn + `,
	e.id, e.account_id, e.url, e.events, e.created_at
	FROM queue_runs AS r JOIN queues AS q ON q.id = r.queue_id
	LEFT JOIN webhook_endpoints AS e ON e.account_id = r.account_id
	WHERE r.id = $1 ORDER BY e.id FOR NO KEY UPDATE OF r`

// CachedQueueOfRun is the run's queue as this process last read it
// (queueViews), with no round trip.
func (r *Turns) CachedQueueOfRun(runID string) (queues.Queue, bool) {
	return r.db.views.latestOfRun(runID)
}

// LockRunForIntake locks the run (lockRunSQL) and reads, after the lock,
// the account's turn made with the key, the run's line version, its
// account's webhook endpoints (kept for the event's insert, Events.Append)
// and the number drawn ahead, in one batch: one round trip,
// BEGIN included when it is the unit's first. Everything after the lock
// runs after it, so the look-up sees a create with the key that committed
// while this one waited for the run, and the draw takes the number that
// follows the last committed one. With a draw, the lock's statement reads
// the endpoints (lockRunEndpointsSQL) and the draw makes the run's next
// line version: no statement reads the line version (unknown when nothing
// was drawn: a replay, or not the account's run, which write no line).
func (r *Turns) LockRunForIntake(ctx context.Context, in turns.IntakeLock) (turns.IntakeLocked, error) {
	var (
		out     turns.IntakeLocked
		ref     queueRef
		service []float64
		row     turnRow
		found   bool
		eps     []webhookEndpointRow
		drawn   turns.DrawnNumber
		isDrawn bool
		changes []turns.LineChange
	)
	b := &pgx.Batch{}
	withEndpoints := in.Draw != nil
	if withEndpoints {
		b.Queue(lockRunEndpointsSQL, in.RunID)
	} else {
		b.Queue(lockRunSQL, in.RunID)
	}
	if in.Key != nil {
		b.Queue(`SELECT `+turnColumns+` FROM turns AS t WHERE t.account_id = $1 AND t.idempotency_key = $2`, in.AccountID, *in.Key)
	}
	if !withEndpoints {
		b.Queue(runLineEndpointsSQL, in.RunID)
	}
	if in.LineAfter > 0 {
		b.Queue(lineChangesAfterLockSQL, in.RunID, in.LineAfter, maxPrefetchedLineChanges)
	}
	switch d := in.Draw; {
	case d == nil:
	case in.Key == nil:
		b.Queue(drawAheadNoKeySQL, in.RunID, d.Period, d.Prefix, d.Padding, d.Since, in.AccountID)
	default:
		b.Queue(drawAheadSQL, in.RunID, d.Period, d.Prefix, d.Padding, d.Since, in.AccountID, in.Key)
	}
	err := r.db.withPgxBatch(ctx, b, func(br pgx.BatchResults) error {
		if withEndpoints {
			out.Run, ref, service, eps, out.RunErr = readLockRunEndpoints(br)
		} else {
			out.Run, ref, service, out.RunErr = readLockRun(br)
		}
		if out.RunErr != nil && !errors.Is(out.RunErr, pgx.ErrNoRows) {
			return out.RunErr
		}
		if in.Key != nil {
			switch err := br.QueryRow().Scan(row.dests()...); {
			case errors.Is(err, pgx.ErrNoRows):
			case err != nil:
				return err
			default:
				found = true
			}
		}
		var err error
		if !withEndpoints {
			if ref.line, eps, err = readLineEndpoints(br); err != nil {
				return err
			}
			ref.lineKnown = true
		}
		if in.LineAfter > 0 {
			if changes, err = scanLineChanges(br.Query()); err != nil {
				return err
			}
		}
		if in.Draw == nil {
			return nil
		}
		// Nothing drawn: a replay, or not the account's run.
		if drawn, isDrawn, err = readDrawAhead(br); err != nil || !isDrawn {
			return err
		}
		// The transaction's line is at the version the draw made; the
		// changes read before it end just below.
		ref.line, ref.lineKnown = drawn.LineVersion, true
		return nil
	})
	if err != nil {
		return out, wrap(err, "lock run "+in.RunID)
	}
	if out.RunErr != nil {
		out.RunErr = notFound(out.RunErr, "queue run", in.RunID)
	} else {
		r.db.foldAccountEndpoints(ctx, out.Run.AccountID, eps)
		if in.LineAfter > 0 && ref.lineKnown {
			upTo := ref.line
			if isDrawn {
				upTo--
			}
			r.db.foldLineChanges(ctx, in.RunID, in.LineAfter, upTo, changes)
		}
		if out.Queue, err = r.lockedQueue(ctx, out.Run, ref, service); err != nil {
			return out, err
		}
	}
	if found {
		t, err := row.domain()
		if err != nil {
			return out, err
		}
		out.Replay = &t
	}
	if isDrawn {
		out.Drawn = &drawn
	}
	return out, nil
}

// LockRunOfTurn locks the run of a turn (only the run: the turn's lock
// comes next, in the lock order) and reads the turn's account and its
// queue's version in the same statement, then the run's line version, in
// one batch.
func (r *Turns) LockRunOfTurn(ctx context.Context, turnID string) (string, queues.Run, queues.Queue, error) {
	var (
		owner   string
		run     queues.Run
		ref     queueRef
		service []float64
		runErr  error
	)
	b := &pgx.Batch{}
	b.Queue(`SELECT `+runQueueColumns+`, t.account_id, `+queueServiceColumn+`
			FROM turns AS t JOIN queue_runs AS r ON r.id = t.run_id JOIN queues AS q ON q.id = r.queue_id
			WHERE t.id = $1 FOR NO KEY UPDATE OF r`, turnID)
	b.Queue(turnLineEndpointsSQL, turnID)
	var eps []webhookEndpointRow
	err := r.db.withPgxBatch(ctx, b, func(br pgx.BatchResults) error {
		run, ref, runErr = scanRunQueue(br.QueryRow(), &owner, &service)
		if runErr != nil && !errors.Is(runErr, pgx.ErrNoRows) {
			return runErr
		}
		var err error
		ref.line, eps, err = readLineEndpoints(br)
		ref.lineKnown = true
		return err
	})
	if err == nil {
		err = runErr
	}
	if err != nil {
		return "", queues.Run{}, queues.Queue{}, notFound(err, "turn", turnID)
	}
	r.db.foldAccountEndpoints(ctx, owner, eps)
	q, err := r.lockedQueue(ctx, run, ref, service)
	if err != nil {
		return "", queues.Run{}, queues.Queue{}, err
	}
	return owner, run, q, nil
}
