package postgres

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// GET /turns/{id} is the route customers poll, and in postgres mode most
// of its cost is the one statement below: PostgreSQL's per relation it
// reads, and pgx's per column it scans (Rows.Scan plans a scan for every
// column of every query: a sixth of the process's CPU on this route,
// issue 16 P2). So the statement reads no column the view does without,
// and its row is decoded from the raw values by decoders fixed for its
// fixed columns.

// turnViewColumns are the turn's columns the view reads, in
// decodeTurnView's order. Not read: the id, which equals $1 (the column
// is text under a deterministic collation, so = means the same bytes),
// and priority_rank, which the domain derives from the priority.
const turnViewColumns = `t.account_id, t.queue_id, t.run_id, t.number, t.display_code, t.status, t.priority,
	t.seq, t.people_count, t.phone, t.notify_whatsapp, t.form_response, t.station_id, t.call_count,
	t.reentries, t.held_from, t.reopen_to, t.service_seconds, t.idempotency_key, t.request_hash, t.arrived_at,
	t.called_at, t.started_at, t.finished_at, t.created_at, t.updated_at, t.appointment_id`

// turnViewLinked is what a turn's (t) view reads besides the turn's
// columns: everything but the queue's definition, which queueViews keeps
// per version, one row of each table, by key. The queue's version is a
// subquery rather than a join (the queue always exists: deleting it
// deletes its turns), which PostgreSQL runs for less.
const turnViewLinked = `,
	(SELECT q.view_version FROM queues AS q WHERE q.id = t.queue_id),
	coalesce((SELECT l.line_version FROM turn_counters AS l WHERE l.run_id = t.run_id), 0),
	(SELECT r.status FROM queue_runs AS r WHERE r.id = t.run_id),
	coalesce((SELECT st.samples FROM queue_service_times AS st WHERE st.queue_id = t.queue_id), '{}')`

// turnViewSQL reads a turn's ($1) view row, from one snapshot.
const turnViewSQL = `SELECT ` + turnViewColumns + turnViewLinked + `
FROM turns AS t WHERE t.id = $1`

// turnViewsSQL returns the statement that reads the view rows of up to n
// distinct turns ($1 to $n; the unused ones NULL) in one statement, so
// that one executor and one snapshot serve them all (viewbatch.go), and
// n: a batch's size rounded up to a power of two, from 2 to
// maxViewBatchSize, so that a few statements serve every batch. Each row
// is led by its turn's id, which routes it back to its readers; a missing
// turn (or a NULL) has no row.
//
// Each id is looked up as turnViewSQL looks up its one: a lateral
// subquery the planner may not flatten (OFFSET 0), so that every plan,
// the generic one made on empty tables included, reaches each turn
// through its primary key (TestHotStatementPlansUseTheirIndexes; "t.id =
// ANY($1)" and a join on unnest's ids were planned as sequential scans
// there). And the ids are n parameters rather than one array: PostgreSQL
// estimates an array parameter at 10 elements, so the generic plan of a
// batch of fewer looked dearer than a custom one, and PostgreSQL planned
// the statement afresh on every execution (200 µs of its CPU each); n
// parameters are n rows in every plan, and the generic plan is kept.
func turnViewsSQL(n int) (string, int) {
	i := max(1, bits.Len(uint(n-1)))
	return turnViewsSQLs[i], 1 << i
}

// turnViewsSQLs are turnViewsSQL's statements, for 1<<i ids at index i
// (index 0 unused: one id is turnViewSQL's).
var turnViewsSQLs = func() []string {
	out := make([]string, bits.Len(maxViewBatchSize-1)+1)
	for i := 1; i < len(out); i++ {
		params := make([]string, 1<<i)
		for j := range params {
			params[j] = "$" + strconv.Itoa(j+1)
		}
		out[i] = `SELECT k.id, ` + turnViewColumns + turnViewLinked + `
FROM unnest(ARRAY[` + strings.Join(params, ", ") + `]::text[]) AS k (id),
	LATERAL (SELECT * FROM turns WHERE turns.id = k.id OFFSET 0) AS t`
	}
	return out
}()

// turnViewFields are turnViewSQL's result columns as pgx asks for them:
// each type in its codec's preferred format (text and jsonb as text, the
// others binary). decodeTurnView checks a row's fields against them
// before reading any value, so a schema or pgx change that moves them
// fails loudly instead of misreading bytes.
var turnViewFields = [...]struct {
	oid    uint32
	format int16
}{
	{pgtype.TextOID, pgtype.TextFormatCode},          // account_id
	{pgtype.TextOID, pgtype.TextFormatCode},          // queue_id
	{pgtype.TextOID, pgtype.TextFormatCode},          // run_id
	{pgtype.Int4OID, pgtype.BinaryFormatCode},        // number
	{pgtype.TextOID, pgtype.TextFormatCode},          // display_code
	{pgtype.TextOID, pgtype.TextFormatCode},          // status
	{pgtype.TextOID, pgtype.TextFormatCode},          // priority
	{pgtype.Int8OID, pgtype.BinaryFormatCode},        // seq
	{pgtype.Int4OID, pgtype.BinaryFormatCode},        // people_count
	{pgtype.TextOID, pgtype.TextFormatCode},          // phone
	{pgtype.BoolOID, pgtype.BinaryFormatCode},        // notify_whatsapp
	{pgtype.JSONBOID, pgtype.TextFormatCode},         // form_response
	{pgtype.TextOID, pgtype.TextFormatCode},          // station_id
	{pgtype.Int4OID, pgtype.BinaryFormatCode},        // call_count
	{pgtype.Int4OID, pgtype.BinaryFormatCode},        // reentries
	{pgtype.TextOID, pgtype.TextFormatCode},          // held_from
	{pgtype.TextOID, pgtype.TextFormatCode},          // reopen_to
	{pgtype.Float8OID, pgtype.BinaryFormatCode},      // service_seconds
	{pgtype.TextOID, pgtype.TextFormatCode},          // idempotency_key
	{pgtype.TextOID, pgtype.TextFormatCode},          // request_hash
	{pgtype.TimestamptzOID, pgtype.BinaryFormatCode}, // arrived_at
	{pgtype.TimestamptzOID, pgtype.BinaryFormatCode}, // called_at
	{pgtype.TimestamptzOID, pgtype.BinaryFormatCode}, // started_at
	{pgtype.TimestamptzOID, pgtype.BinaryFormatCode}, // finished_at
	{pgtype.TimestamptzOID, pgtype.BinaryFormatCode}, // created_at
	{pgtype.TimestamptzOID, pgtype.BinaryFormatCode}, // updated_at
	{pgtype.TextOID, pgtype.TextFormatCode},          // appointment_id
	{pgtype.Int8OID, pgtype.BinaryFormatCode},        // the queue's view version
	{pgtype.Int8OID, pgtype.BinaryFormatCode},        // the line version
	{pgtype.TextOID, pgtype.TextFormatCode},          // the run's status
	{pgtype.Float8ArrayOID, pgtype.BinaryFormatCode}, // the service times
}

// turnViewRow is a decoded row of turnViewSQL.
type turnViewRow struct {
	turn        turns.Turn
	queueVer    int64
	hasQueue    bool
	lineVersion int64
	runOpen     bool
	service     []float64
}

// decodeTurnView decodes a row of turnViewSQL for the turn id from its
// raw values (valid only until the next row is read: every value kept is
// copied).
func decodeTurnView(id string, fields []pgconn.FieldDescription, vals [][]byte) (turnViewRow, error) {
	var out turnViewRow
	if len(fields) != len(turnViewFields) || len(vals) != len(turnViewFields) {
		return out, fmt.Errorf("postgres: turn view: %d columns, want %d", len(fields), len(turnViewFields))
	}
	for i, f := range fields {
		if want := turnViewFields[i]; f.DataTypeOID != want.oid || f.Format != want.format {
			return out, fmt.Errorf("postgres: turn view: column %d (%s) is type %d in format %d, want %d in %d",
				i, f.Name, f.DataTypeOID, f.Format, want.oid, want.format)
		}
	}
	d := rawDecoder{vals: vals}
	t := &out.turn
	t.ID = id
	t.AccountID = d.text(0)
	t.QueueID = d.text(1)
	t.RunID = d.text(2)
	t.Number = int(d.int4(3))
	t.DisplayCode = d.text(4)
	t.Status = turns.Status(d.known(5, turnStatusNames))
	t.Priority = queues.Priority(d.known(6, priorityNames))
	t.Seq = d.int8(7)
	t.PeopleCount = int(d.int4(8))
	t.Phone = d.textPtr(9)
	t.NotifyWhatsapp = d.bool(10)
	form := vals[11]
	t.StationID = d.textPtr(12)
	t.CallCount = int(d.int4(13))
	t.Reentries = int(d.int4(14))
	t.HeldFrom = d.known(15, turnStatusNames)
	t.ReopenTo = turns.Status(d.known(16, turnStatusNames))
	t.ServiceSeconds = d.float8Ptr(17)
	t.IdempotencyKey = d.textPtr(18)
	t.RequestHash = d.text(19)
	d.optionalTimes(20, &t.ArrivedAt, &t.CalledAt, &t.StartedAt, &t.FinishedAt)
	t.CreatedAt = d.time(24)
	t.UpdatedAt = d.time(25)
	t.AppointmentID = d.textPtr(26)
	if vals[27] != nil {
		out.queueVer, out.hasQueue = d.int8(27), true
	}
	if vals[28] != nil {
		out.lineVersion = d.int8(28)
	}
	out.runOpen = vals[29] != nil && string(vals[29]) == queues.RunOpen
	if vals[30] != nil {
		out.service = d.float8Array(30)
	}
	if d.err != nil {
		return out, fmt.Errorf("postgres: turn view %s: %w", id, d.err)
	}
	// As the scan into a map did: a JSON object, "{}" without the decoder.
	if string(form) == "{}" {
		t.FormResponse = map[string]string{}
	} else if err := json.Unmarshal(form, &t.FormResponse); err != nil {
		return out, wrap(err, "decode turn "+id)
	}
	return out, nil
}

// turnStatusNames are the spellings of the status-valued columns (status,
// held_from, reopen_to), so decoding one allocates no string.
var turnStatusNames = func() []string {
	names := make([]string, len(turns.Statuses))
	for i, s := range turns.Statuses {
		names[i] = string(s)
	}
	return names
}()

var priorityNames = []string{string(queues.PriorityVeryHigh), string(queues.PriorityHigh),
	string(queues.PriorityNormal), string(queues.PriorityLow)}

// rawDecoder reads raw values of known types and formats: text as its
// bytes, the rest in PostgreSQL's binary send formats. The first error
// sticks, and later reads return zero values.
type rawDecoder struct {
	vals [][]byte
	err  error
}

func (d *rawDecoder) fail(i int, what string) {
	if d.err == nil {
		d.err = fmt.Errorf("column %d: %s", i, what)
	}
}

// fixed returns column i's value, which must be n bytes.
func (d *rawDecoder) fixed(i, n int) []byte {
	b := d.vals[i]
	if b == nil {
		d.fail(i, "unexpected NULL")
		return nil
	}
	if len(b) != n {
		d.fail(i, fmt.Sprintf("%d bytes, want %d", len(b), n))
		return nil
	}
	return b
}

func (d *rawDecoder) text(i int) string {
	if d.vals[i] == nil {
		d.fail(i, "unexpected NULL")
	}
	return string(d.vals[i])
}

func (d *rawDecoder) textPtr(i int) *string {
	if d.vals[i] == nil {
		return nil
	}
	s := string(d.vals[i])
	return &s
}

// known is text, the shared string when it is one of names (the empty
// string included).
func (d *rawDecoder) known(i int, names []string) string {
	b := d.vals[i]
	if b == nil {
		d.fail(i, "unexpected NULL")
		return ""
	}
	for _, n := range names {
		if string(b) == n {
			return n
		}
	}
	return string(b)
}

func (d *rawDecoder) int4(i int) int32 {
	if b := d.fixed(i, 4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (d *rawDecoder) int8(i int) int64 {
	if b := d.fixed(i, 8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (d *rawDecoder) bool(i int) bool {
	if b := d.fixed(i, 1); b != nil {
		return b[0] != 0
	}
	return false
}

func (d *rawDecoder) float8Ptr(i int) *float64 {
	if d.vals[i] == nil {
		return nil
	}
	if b := d.fixed(i, 8); b != nil {
		f := math.Float64frombits(binary.BigEndian.Uint64(b))
		return &f
	}
	return nil
}

// pgEpochMicros is 2000-01-01 UTC, PostgreSQL's epoch, in microseconds
// since the Unix epoch.
const pgEpochMicros = 946684800 * 1000000

// time decodes a timestamptz, in UTC (as the domain keeps times). The
// infinities, which pgx also refuses to scan into a time.Time, are an
// error.
// optionalTimes reads columns from, from+1, ... into at, in order: nil
// for a NULL column. The times read share one allocation.
func (d *rawDecoder) optionalTimes(from int, at ...**time.Time) {
	var times []time.Time
	for i, p := range at {
		if d.vals[from+i] == nil {
			continue
		}
		if times == nil {
			times = make([]time.Time, len(at))
		}
		times[i] = d.time(from + i)
		*p = &times[i]
	}
}

func (d *rawDecoder) time(i int) time.Time {
	b := d.fixed(i, 8)
	if b == nil {
		return time.Time{}
	}
	us := int64(binary.BigEndian.Uint64(b))
	if us == math.MaxInt64 || us == math.MinInt64 {
		d.fail(i, "infinite timestamp")
		return time.Time{}
	}
	us += pgEpochMicros
	return time.Unix(us/1000000, us%1000000*1000).UTC()
}

// float8Array decodes a float8[] of at most one dimension and no NULLs
// (array_send: dimensions, a has-null flag, the element type, then per
// dimension its length and lower bound, then each element's length and
// bytes).
func (d *rawDecoder) float8Array(i int) []float64 {
	b := d.vals[i]
	if len(b) < 12 {
		d.fail(i, "short array header")
		return nil
	}
	ndim := binary.BigEndian.Uint32(b[0:4])
	if ndim == 0 {
		return []float64{}
	}
	if ndim != 1 || len(b) < 20 {
		d.fail(i, fmt.Sprintf("array of %d dimensions", ndim))
		return nil
	}
	n := int(int32(binary.BigEndian.Uint32(b[12:16])))
	rest := b[20:]
	if n < 0 || len(rest) != n*12 {
		d.fail(i, "array length does not match its elements")
		return nil
	}
	out := make([]float64, n)
	for j := range out {
		e := rest[j*12:]
		if int32(binary.BigEndian.Uint32(e[0:4])) != 8 {
			d.fail(i, "array element is NULL or not 8 bytes")
			return nil
		}
		out[j] = math.Float64frombits(binary.BigEndian.Uint64(e[4:12]))
	}
	return out
}
