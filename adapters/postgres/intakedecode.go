package postgres

import (
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// The intake's lock batch (LockRunForIntake) is read from the rows' raw
// values, as the turn's view is (turnview.go): pgx's Rows.Scan plans a
// scan for every column of every query, and these rows come once per
// intake. Every column's type and format is checked first, so a changed
// statement fails loudly instead of misreading bytes.

// rawField is the type and format pgx asked for a column in.
type rawField struct {
	oid    uint32
	format int16
}

var (
	rawText        = rawField{pgtype.TextOID, pgtype.TextFormatCode}
	rawBool        = rawField{pgtype.BoolOID, pgtype.BinaryFormatCode}
	rawInt4        = rawField{pgtype.Int4OID, pgtype.BinaryFormatCode}
	rawInt8        = rawField{pgtype.Int8OID, pgtype.BinaryFormatCode}
	rawTimestamptz = rawField{pgtype.TimestamptzOID, pgtype.BinaryFormatCode}
	rawFloat8Array = rawField{pgtype.Float8ArrayOID, pgtype.BinaryFormatCode}
)

// checkRawFields reports a column whose type or format is not want's.
func checkRawFields(what string, fields []pgconn.FieldDescription, want []rawField) error {
	if len(fields) != len(want) {
		return fmt.Errorf("postgres: %s: %d columns, want %d", what, len(fields), len(want))
	}
	for i, f := range fields {
		if w := want[i]; f.DataTypeOID != w.oid || f.Format != w.format {
			return fmt.Errorf("postgres: %s: column %d (%s) is type %d in format %d, want %d in %d",
				what, i, f.Name, f.DataTypeOID, f.Format, w.oid, w.format)
		}
	}
	return nil
}

// lockRunFields are lockRunSQL's columns: runQueueColumns, then the
// queue's service times.
var lockRunFields = []rawField{
	rawText, rawText, rawText, rawText, // id, account_id, queue_id, status
	rawBool,                                        // intake_open
	rawTimestamptz, rawTimestamptz, rawTimestamptz, // opened_at, closed_at, created_at
	rawTimestamptz, // updated_at
	rawInt8,        // the queue's view version
	rawFloat8Array, // the service times
}

// readLockRun reads lockRunSQL's row, the next result of br: the run, its
// queue's version and its service times; pgx.ErrNoRows when the run does
// not exist.
func readLockRun(br pgx.BatchResults) (queues.Run, queueRef, []float64, error) {
	var (
		run     queues.Run
		ref     queueRef
		service []float64
	)
	rows, err := br.Query()
	if err != nil {
		return run, ref, nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return run, ref, nil, err
		}
		return run, ref, nil, pgx.ErrNoRows
	}
	if err := checkRawFields("lock run", rows.FieldDescriptions(), lockRunFields); err != nil {
		return run, ref, nil, err
	}
	if run, ref, service, err = decodeLockRun(rows.RawValues()); err != nil {
		return run, ref, nil, err
	}
	rows.Close()
	return run, ref, service, rows.Err()
}

// decodeLockRun decodes lockRunSQL's columns, the first of vals.
func decodeLockRun(vals [][]byte) (queues.Run, queueRef, []float64, error) {
	var (
		run queues.Run
		ref queueRef
	)
	d := rawDecoder{vals: vals}
	run.ID = d.text(0)
	run.AccountID = d.text(1)
	run.QueueID = d.text(2)
	run.Status = d.known(3, runStatusNames)
	run.IntakeOpen = d.bool(4)
	d.optionalTimes(5, &run.OpenedAt, &run.ClosedAt)
	run.CreatedAt = d.time(7)
	run.UpdatedAt = d.time(8)
	ref.version = d.int8(9)
	service := d.float8Array(10)
	if d.err != nil {
		return run, ref, nil, fmt.Errorf("postgres: lock run: %w", d.err)
	}
	return run, ref, service, nil
}

// lockRunEndpointsFields are lockRunEndpointsSQL's columns read raw:
// lockRunSQL's, then the endpoint's id (NULL when the account has none).
// The endpoint's other columns go through Scan, as in readLineEndpoints.
var lockRunEndpointsFields = append(slices.Clip(lockRunFields), rawText)

// readLockRunEndpoints reads lockRunEndpointsSQL's rows, the next result of
// br: the run, its queue's version and its service times from the first,
// and the account's endpoints, one a row; pgx.ErrNoRows when the run does
// not exist.
func readLockRunEndpoints(br pgx.BatchResults) (queues.Run, queueRef, []float64, []webhookEndpointRow, error) {
	var (
		run     queues.Run
		ref     queueRef
		service []float64
		eps     []webhookEndpointRow
	)
	rows, err := br.Query()
	if err != nil {
		return run, ref, nil, nil, err
	}
	defer rows.Close()
	first := true
	for rows.Next() {
		fields := rows.FieldDescriptions()
		if len(fields) != len(lockRunEndpointsFields)+4 {
			return run, ref, nil, nil, fmt.Errorf("postgres: lock run and endpoints: %d columns, want %d",
				len(fields), len(lockRunEndpointsFields)+4)
		}
		if err := checkRawFields("lock run and endpoints", fields[:len(lockRunEndpointsFields)], lockRunEndpointsFields); err != nil {
			return run, ref, nil, nil, err
		}
		vals := rows.RawValues()
		if first {
			first = false
			if run, ref, service, err = decodeLockRun(vals); err != nil {
				return run, ref, nil, nil, err
			}
		}
		e := len(lockRunFields)
		if vals[e] == nil {
			continue // no endpoint: the run's one row, with nulls
		}
		var (
			id, account, url string
			events           []string
			ep               webhookEndpointRow
		)
		dests := make([]any, e, e+5)
		dests = append(dests, &id, &account, &url, &events, &ep.CreatedAt)
		if err := rows.Scan(dests...); err != nil {
			return run, ref, nil, nil, err
		}
		ep.ID, ep.AccountID, ep.URL, ep.Events = id, account, url, events
		eps = append(eps, ep)
	}
	if err := rows.Err(); err != nil {
		return run, ref, nil, nil, err
	}
	if first {
		return run, ref, nil, nil, pgx.ErrNoRows
	}
	return run, ref, service, eps, nil
}

// runStatusNames are the spellings of a run's status, so decoding one
// allocates no string.
var runStatusNames = []string{queues.RunOpen, queues.RunClosed}

// lineEndpointsFields are runLineEndpointsSQL's columns read raw: the
// line version, and the endpoint's id (NULL when the account has none).
// The endpoint's other columns (account_id, url, events, created_at) go
// through Scan.
var lineEndpointsFields = []rawField{rawInt8, rawText}

// readLineEndpoints reads the rows of runLineEndpointsSQL or
// turnLineEndpointsSQL (the same columns), the next result of br; the
// endpoints' rows, rare, through Scan.
func readLineEndpoints(br pgx.BatchResults) (int64, []webhookEndpointRow, error) {
	rows, err := br.Query()
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	var (
		line int64
		eps  []webhookEndpointRow
	)
	for rows.Next() {
		fields := rows.FieldDescriptions()
		if len(fields) != 6 {
			return 0, nil, fmt.Errorf("postgres: line and endpoints: %d columns, want 6", len(fields))
		}
		if err := checkRawFields("line and endpoints", fields[:2], lineEndpointsFields); err != nil {
			return 0, nil, err
		}
		vals := rows.RawValues()
		if vals[1] == nil {
			// No endpoint: the row of nulls with the version.
			d := rawDecoder{vals: vals}
			line = d.int8(0)
			if d.err != nil {
				return 0, nil, fmt.Errorf("postgres: line and endpoints: %w", d.err)
			}
			continue
		}
		var (
			id, account, url string
			events           []string
			ep               webhookEndpointRow
		)
		if err := rows.Scan(&line, &id, &account, &url, &events, &ep.CreatedAt); err != nil {
			return 0, nil, err
		}
		ep.ID, ep.AccountID, ep.URL, ep.Events = id, account, url, events
		eps = append(eps, ep)
	}
	return line, eps, rows.Err()
}

// drawAheadFields are drawAheadSQL's columns: the number, whether its
// code is in use, the arrival sequence number, the line version.
var drawAheadFields = []rawField{rawInt4, rawBool, rawInt8, rawInt8}

// readDrawAhead reads drawAheadSQL's row, the next result of br; false
// when nothing was drawn (a replay, or not the account's run).
func readDrawAhead(br pgx.BatchResults) (turns.DrawnNumber, bool, error) {
	var drawn turns.DrawnNumber
	rows, err := br.Query()
	if err != nil {
		return drawn, false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return drawn, false, rows.Err()
	}
	if err := checkRawFields("draw ahead", rows.FieldDescriptions(), drawAheadFields); err != nil {
		return drawn, false, err
	}
	d := rawDecoder{vals: rows.RawValues()}
	drawn.Number = int(d.int4(0))
	drawn.CodeInUse = d.bool(1)
	drawn.Seq = d.int8(2)
	drawn.LineVersion = d.int8(3)
	if d.err != nil {
		return drawn, false, fmt.Errorf("postgres: draw ahead: %w", d.err)
	}
	rows.Close()
	return drawn, true, rows.Err()
}
