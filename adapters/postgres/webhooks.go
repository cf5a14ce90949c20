package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/webhooks"
)

type webhookEndpointRow struct {
	bun.BaseModel `bun:"table:webhook_endpoints"`
	ID            string    `bun:"id,pk"`
	AccountID     string    `bun:"account_id"`
	URL           string    `bun:"url"`
	Events        []string  `bun:"events,array"`
	Secret        string    `bun:"secret"`
	CreatedAt     time.Time `bun:"created_at"`
}

type webhookDeliveryRow struct {
	bun.BaseModel      `bun:"table:webhook_deliveries"`
	ID                 string     `bun:"id,pk"`
	AccountID          string     `bun:"account_id"`
	EndpointID         string     `bun:"endpoint_id"`
	EventID            string     `bun:"event_id"`
	Event              string     `bun:"event"`
	Body               []byte     `bun:"body,type:bytea"`
	Status             string     `bun:"status"`
	Attempts           int        `bun:"attempts"`
	LastResponseStatus *int       `bun:"last_response_status"`
	LastError          *string    `bun:"last_error"`
	LastAttemptAt      *time.Time `bun:"last_attempt_at"`
	NextAttemptAt      *time.Time `bun:"next_attempt_at"`
	RetryToken         string     `bun:"retry_token"`
	CreatedAt          time.Time  `bun:"created_at"`
}

// Webhooks is the Postgres webhooks.Repository. With a key, signing
// secrets are sealed with AES-256-GCM before they reach the database, so a
// dump of it alone does not hand them out.
type Webhooks struct {
	db        *DB
	box       secretBox // secretbox.go; no key: clear
	successes *successBatch
	reads     *roundTrips[string, deliveryToSendRow] // webhooks_reads.go
}

// Prefixes of the stored secret, naming how it is stored.
const (
	secretSealedV1 = "v1:"
	secretPlain    = "plain:"
)

// NewWebhooks builds the repository. key is webhooks.secret_key
// (QMS_WEBHOOKS_SECRET_KEY): when not empty, secrets written are sealed
// with an AES-256 key derived from it; when empty (tests of the adapter
// only: configuration requires a key in postgres mode) they are written in
// clear. oldKeys (webhooks.old_secret_keys) open secrets sealed before a
// rotation. Secrets written in clear stay readable after a key is set.
func NewWebhooks(db *DB, key string, oldKeys ...string) (*Webhooks, error) {
	box, err := newSecretBox("qms webhook signing secrets v1", key, oldKeys...)
	if err != nil {
		return nil, fmt.Errorf("postgres: webhooks: %w", err)
	}
	return &Webhooks{db: db, box: box, successes: &successBatch{db: db}, reads: newDeliveryReads(db)}, nil
}

// seal stores secret for endpoint id. The id is the additional data of the
// seal, so a sealed secret copied onto another endpoint's row fails to
// open.
func (r *Webhooks) seal(id string, secret webhooks.Secret) string {
	return r.box.seal(id, secret.Reveal())
}

// open reads a stored secret back.
func (r *Webhooks) open(id, stored string) (webhooks.Secret, error) {
	s, _, err := r.openWith(id, stored)
	return s, err
}

// openWith reads a stored secret back and says which key opened it: 0 for
// the current one, -1 for a secret stored in clear.
func (r *Webhooks) openWith(id, stored string) (webhooks.Secret, int, error) {
	s, by, err := r.box.open(id, stored)
	if err != nil {
		return "", 0, fmt.Errorf("postgres: webhook endpoint %s: %v: %w", id, err, webhooks.ErrSecretUnavailable)
	}
	return webhooks.Secret(s), by, nil
}

// ResealSecrets seals under the current key every stored secret that is in
// clear or, with all, sealed under an older key. It returns how many it
// rewrote; a secret no configured key opens is left as is and reported.
func (r *Webhooks) ResealSecrets(ctx context.Context, all bool) (int, error) {
	if !r.box.sealing() {
		return 0, fmt.Errorf("postgres: reseal: QMS_WEBHOOKS_SECRET_KEY is not set")
	}
	rows, err := r.db.Pool.Query(ctx, `SELECT id, secret FROM webhook_endpoints`)
	if err != nil {
		return 0, wrap(err, "reseal: list secrets")
	}
	type item struct{ id, stored string }
	var items []item
	for rows.Next() {
		var it item
		if err := rows.Scan(&it.id, &it.stored); err != nil {
			rows.Close()
			return 0, wrap(err, "reseal: list secrets")
		}
		items = append(items, it)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, wrap(err, "reseal: list secrets")
	}
	done := 0
	var failed []string
	for _, it := range items {
		secret, by, err := r.openWith(it.id, it.stored)
		if err != nil {
			failed = append(failed, it.id)
			continue
		}
		if by == 0 || (by > 0 && !all) {
			continue
		}
		// Only the row as read is replaced: a concurrent change wins.
		tag, err := r.db.Pool.Exec(ctx, `UPDATE webhook_endpoints SET secret = $1 WHERE id = $2 AND secret = $3`,
			r.seal(it.id, secret), it.id, it.stored)
		if err != nil {
			return done, wrap(err, "reseal: update secret")
		}
		done += int(tag.RowsAffected())
	}
	if len(failed) > 0 {
		return done, fmt.Errorf("postgres: reseal: %d secret(s) no configured key opens (endpoints %s): %w",
			len(failed), strings.Join(failed, ", "), webhooks.ErrSecretUnavailable)
	}
	return done, nil
}

func (row webhookEndpointRow) domain() webhooks.Endpoint {
	return webhooks.Endpoint{ID: row.ID, AccountID: row.AccountID, URL: row.URL, Events: row.Events, CreatedAt: row.CreatedAt}
}

// CreateEndpoint stores a new endpoint, its secret sealed.
func (r *Webhooks) CreateEndpoint(ctx context.Context, e webhooks.Endpoint) error {
	row := &webhookEndpointRow{ID: e.ID, AccountID: e.AccountID, URL: e.URL, Events: e.Events,
		Secret: r.seal(e.ID, e.Secret), CreatedAt: e.CreatedAt}
	_, err := r.db.IDB(ctx).NewInsert().Model(row).Exec(ctx)
	return wrap(err, "insert webhook endpoint")
}

// GetEndpoint returns an endpoint with its secret. When the secret cannot
// be opened the endpoint comes back without it, with an error wrapping
// webhooks.ErrSecretUnavailable.
func (r *Webhooks) GetEndpoint(ctx context.Context, id string) (webhooks.Endpoint, error) {
	var row webhookEndpointRow
	if err := r.db.IDB(ctx).NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return webhooks.Endpoint{}, notFound(err, "webhook endpoint", id)
	}
	e := row.domain()
	secret, err := r.open(row.ID, row.Secret)
	e.Secret = secret
	return e, err
}

// DeleteEndpoint removes an endpoint; its deliveries go with it (ON DELETE
// CASCADE).
func (r *Webhooks) DeleteEndpoint(ctx context.Context, id string) error {
	_, err := r.db.IDB(ctx).NewDelete().Model((*webhookEndpointRow)(nil)).Where("id = ?", id).Exec(ctx)
	return wrap(err, "delete webhook endpoint")
}

// endpointColumns are the columns read when the secret is not needed.
var endpointColumns = []string{"id", "account_id", "url", "events", "created_at"}

// ListEndpoints pages the account's endpoints by id, without secrets.
func (r *Webhooks) ListEndpoints(ctx context.Context, accountID string, page platform.PageRequest) ([]webhooks.Endpoint, error) {
	var rows []webhookEndpointRow
	q := r.db.IDB(ctx).NewSelect().Model(&rows).Column(endpointColumns...).
		Where("account_id = ?", accountID).Order("id").Limit(int64(page.Limit + 1))
	if page.After != "" {
		q = q.Where("id > ?", page.After)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "list webhook endpoints")
	}
	return endpointsOf(rows), nil
}

func endpointsOf(rows []webhookEndpointRow) []webhooks.Endpoint {
	out := make([]webhooks.Endpoint, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out
}

// CountEndpoints counts the account's endpoints, and holds the count
// until the unit of work ends: no other endpoint of the account is made
// meanwhile.
func (r *Webhooks) CountEndpoints(ctx context.Context, accountID string) (int, error) {
	if err := r.db.holdCount(ctx, "webhook_endpoints", accountID); err != nil {
		return 0, err
	}
	n, err := r.db.IDB(ctx).NewSelect().Model((*webhookEndpointRow)(nil)).Where("account_id = ?", accountID).Count(ctx)
	return int(n), wrap(err, "count webhook endpoints")
}

// SubscribedEndpoints returns the account's endpoints subscribed to event,
// without secrets.
func (r *Webhooks) SubscribedEndpoints(ctx context.Context, accountID, event string) ([]webhooks.Endpoint, error) {
	// Read in every transaction that raises an event: through pgx with
	// parameters, prepared once per connection (see DB.withPgx).
	var (
		rows  []webhookEndpointRow
		found bool
	)
	// The event's insert read them already (Events.Append), in this
	// transaction.
	r.db.fold(ctx, func(f *folded) {
		k := subscribedKey(accountID, event)
		rows, found = f.subscribed[k]
		delete(f.subscribed, k)
	})
	if found {
		return endpointsOf(rows), nil
	}
	err := r.db.withPgxRows(ctx, `SELECT id, account_id, url, events, created_at FROM webhook_endpoints
		WHERE account_id = $1 AND $2 = ANY (events) ORDER BY id`, []any{accountID, event}, func(scan func(...any) error) error {
		var row webhookEndpointRow
		if err := scan(&row.ID, &row.AccountID, &row.URL, &row.Events, &row.CreatedAt); err != nil {
			return err
		}
		rows = append(rows, row)
		return nil
	})
	if err != nil {
		return nil, wrap(err, "find subscribed webhook endpoints")
	}
	return endpointsOf(rows), nil
}

func deliveryRow(d webhooks.Delivery) *webhookDeliveryRow {
	return &webhookDeliveryRow{ID: d.ID, AccountID: d.AccountID, EndpointID: d.EndpointID, EventID: d.EventID,
		Event: d.Event, Body: d.Body, Status: d.Status, Attempts: d.Attempts, LastResponseStatus: d.LastResponseStatus,
		LastError: d.LastError, LastAttemptAt: d.LastAttemptAt, NextAttemptAt: d.NextAttemptAt,
		RetryToken: d.RetryToken, CreatedAt: d.CreatedAt}
}

func (row webhookDeliveryRow) domain() webhooks.Delivery {
	return webhooks.Delivery{ID: row.ID, AccountID: row.AccountID, EndpointID: row.EndpointID, EventID: row.EventID,
		Event: row.Event, Body: row.Body, Status: row.Status, Attempts: row.Attempts,
		LastResponseStatus: row.LastResponseStatus, LastError: row.LastError, LastAttemptAt: utcPtr(row.LastAttemptAt),
		NextAttemptAt: utcPtr(row.NextAttemptAt), RetryToken: row.RetryToken, CreatedAt: row.CreatedAt.UTC()}
}

// CreateDelivery stores a new delivery.
func (r *Webhooks) CreateDelivery(ctx context.Context, d webhooks.Delivery) error {
	_, err := r.db.IDB(ctx).NewInsert().Model(deliveryRow(d)).Exec(ctx)
	return wrap(err, "insert webhook delivery")
}

// CreateDeliveries stores an event's deliveries in one multi-row insert
// (arrays unnested: one statement text whatever their number, prepared
// once per connection). Inside a unit of work the insert is deferred: it
// travels with the unit's next statement, the jobs' insert (deferred.go).
func (r *Webhooks) CreateDeliveries(ctx context.Context, ds []webhooks.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	var (
		ids, accounts, endpoints, eventIDs, events, statuses, tokens = make([]string, len(ds)), make([]string, len(ds)),
			make([]string, len(ds)), make([]string, len(ds)), make([]string, len(ds)), make([]string, len(ds)), make([]string, len(ds))
		bodies      = make([][]byte, len(ds))
		attempts    = make([]int32, len(ds))
		respStatus  = make([]*int32, len(ds))
		lastErrors  = make([]*string, len(ds))
		lastAttempt = make([]*time.Time, len(ds))
		nextAttempt = make([]*time.Time, len(ds))
		created     = make([]time.Time, len(ds))
	)
	for i, d := range ds {
		ids[i], accounts[i], endpoints[i], eventIDs[i], events[i] = d.ID, d.AccountID, d.EndpointID, d.EventID, d.Event
		statuses[i], tokens[i], bodies[i], attempts[i] = d.Status, d.RetryToken, d.Body, int32(d.Attempts)
		if d.LastResponseStatus != nil {
			v := int32(*d.LastResponseStatus)
			respStatus[i] = &v
		}
		lastErrors[i], lastAttempt[i], nextAttempt[i], created[i] = d.LastError, d.LastAttemptAt, d.NextAttemptAt, d.CreatedAt
	}
	return r.db.deferWrite(ctx, func(err error) error { return wrap(err, "insert webhook deliveries") }, insertDeliveriesSQL,
		ids, accounts, endpoints, eventIDs, events, bodies, statuses, attempts, respStatus, lastErrors, lastAttempt, nextAttempt, tokens, created)
}

// insertDeliveriesSQL inserts the deliveries of CreateDeliveries' arrays.
// A delivery whose endpoint is gone by the insert's statement is not
// stored, as the endpoint's deletion would have taken it: the endpoints
// come from a read earlier in the transaction, and an intake's is its run
// lock's statement, whose snapshot is taken before it waits for the run
// (lockRunEndpointsSQL), so an endpoint deleted during that wait would
// otherwise break the foreign key and fail the change (500) for an
// administrator's removal of a webhook. Its attempt's job then finds no
// delivery, as after any deletion (Service.Attempt). A deletion still in
// flight at the insert fails the foreign key once it commits, and the unit
// of work runs the change again (retryable).
// The look-up is a scalar subquery, one primary-key probe per delivery: as
// EXISTS it is a semi-join, which a generic plan made on an empty table
// hashes over a sequential scan of every account's endpoints.
const insertDeliveriesSQL = `INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id, event, body, status,
		attempts, last_response_status, last_error, last_attempt_at, next_attempt_at, retry_token, created_at)
	SELECT d.* FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[], $7::text[],
		$8::int[], $9::int[], $10::text[], $11::timestamptz[], $12::timestamptz[], $13::text[], $14::timestamptz[])
		AS d (id, account_id, endpoint_id, event_id, event, body, status, attempts, last_response_status,
			last_error, last_attempt_at, next_attempt_at, retry_token, created_at)
	WHERE (SELECT e.id FROM webhook_endpoints AS e WHERE e.id = d.endpoint_id) IS NOT NULL`

// GetDeliveryToSend reads a delivery and its endpoint in one statement,
// through pgx (prepared once per connection): an attempt's only read.
// Outside a unit of work, the reads of attempts that start together share
// a round trip (webhooks_reads.go).
func (r *Webhooks) GetDeliveryToSend(ctx context.Context, id string) (webhooks.Delivery, webhooks.Endpoint, error) {
	var (
		row deliveryToSendRow
		err error
	)
	if r.db.InTx(ctx) {
		err = r.db.withPgx(ctx, func(q pgxQuerier) error {
			return q.QueryRow(ctx, getDeliveryToSendSQL, id).Scan(row.dest()...)
		})
	} else {
		row, err = r.reads.do(ctx, id)
	}
	if err != nil {
		return webhooks.Delivery{}, webhooks.Endpoint{}, notFound(err, "webhook delivery", id)
	}
	if row.status != nil {
		v := int(*row.status)
		row.d.LastResponseStatus = &v
	}
	ep := row.e.domain()
	ep.Secret, err = r.open(row.e.ID, row.e.Secret)
	return row.d.domain(), ep, err
}

// deliveryToSendRow is a row of getDeliveryToSendSQL.
type deliveryToSendRow struct {
	d      webhookDeliveryRow
	e      webhookEndpointRow
	status *int32
}

// dest is what a row of getDeliveryToSendSQL scans into.
func (row *deliveryToSendRow) dest() []any {
	d, e := &row.d, &row.e
	return []any{&d.ID, &d.AccountID, &d.EndpointID, &d.EventID, &d.Event,
		&d.Body, &d.Status, &d.Attempts, &row.status, &d.LastError, &d.LastAttemptAt, &d.NextAttemptAt, &d.RetryToken,
		&d.CreatedAt, &e.ID, &e.AccountID, &e.URL, &e.Events, &e.Secret, &e.CreatedAt}
}

const getDeliveryToSendSQL = `SELECT d.id, d.account_id, d.endpoint_id, d.event_id, d.event, d.body, d.status, d.attempts,
		d.last_response_status, d.last_error, d.last_attempt_at, d.next_attempt_at, d.retry_token, d.created_at,
		e.id, e.account_id, e.url, e.events, e.secret, e.created_at
	FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
	WHERE d.id = $1`

// RecordSuccess stores a successful attempt in one UPDATE. Outside a unit
// of work the successes that end at the same time in this process share
// a round trip and a commit (successBatch): one round trip and one WAL
// flush for many deliveries, where the locking read, the update and the
// commit of a recorded failure take four round trips for one. It returns
// once its success is committed. The row's lock is taken by the UPDATE
// itself, so an attempt recorded at the same time (a failed redelivery) is
// applied before or after, never lost: attempts counts both.
func (r *Webhooks) RecordSuccess(ctx context.Context, id string, at time.Time, status int) error {
	if !r.db.InTx(ctx) {
		return r.successes.record(ctx, id, at, status)
	}
	var n int64
	err := r.db.withPgx(ctx, func(q pgxQuerier) error {
		tag, err := q.Exec(ctx, recordSuccessSQL, id, webhooks.StatusSucceeded, int32(status), at)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return wrap(err, "record webhook delivery success")
	}
	if n == 0 {
		return platform.NotFound("webhook delivery", id)
	}
	return nil
}

// recordSuccessSQL records the success of the delivery $1: one row by its
// primary key, so its generic plan is an index lookup whatever the table's
// statistics say. The shared UPDATE it replaced took its ids from unnested
// arrays, which PostgreSQL planned as a hash join over a sequential scan
// while the table was small and kept as the connection's generic plan
// (issue 30). Successes ending together still share a round trip and a
// commit: successBatch pipelines one of these per delivery in one pgx batch.
const recordSuccessSQL = `UPDATE webhook_deliveries SET status = $2, attempts = attempts + 1, last_response_status = $3,
		last_error = NULL, last_attempt_at = $4, next_attempt_at = NULL, retry_token = ''
	WHERE id = $1`

func (r *Webhooks) getDelivery(ctx context.Context, id string, lock bool) (webhooks.Delivery, error) {
	var row webhookDeliveryRow
	q := r.db.IDB(ctx).NewSelect().Model(&row).Where("id = ?", id)
	if lock {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return webhooks.Delivery{}, notFound(err, "webhook delivery", id)
	}
	return row.domain(), nil
}

// GetDelivery returns a delivery.
func (r *Webhooks) GetDelivery(ctx context.Context, id string) (webhooks.Delivery, error) {
	return r.getDelivery(ctx, id, false)
}

// GetDeliveryForUpdate returns a delivery and locks its row until the unit
// of work ends, so two attempts ending together record one after the other.
func (r *Webhooks) GetDeliveryForUpdate(ctx context.Context, id string) (webhooks.Delivery, error) {
	return r.getDelivery(ctx, id, true)
}

// UpdateDelivery stores the outcome of an attempt; the event, endpoint and
// body never change.
func (r *Webhooks) UpdateDelivery(ctx context.Context, d webhooks.Delivery) error {
	_, err := r.db.IDB(ctx).NewUpdate().Model(deliveryRow(d)).
		Column("status", "attempts", "last_response_status", "last_error", "last_attempt_at", "next_attempt_at", "retry_token").
		WherePK().Exec(ctx)
	return wrap(err, "update webhook delivery")
}

// RecentDeliveries returns the account's newest deliveries first. Ids sort
// by creation time, so the (account_id, id DESC) index answers it.
func (r *Webhooks) RecentDeliveries(ctx context.Context, accountID string, limit int) ([]webhooks.Delivery, error) {
	var rows []webhookDeliveryRow
	err := r.db.IDB(ctx).NewSelect().Model(&rows).Where("account_id = ?", accountID).OrderExpr("id DESC").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, wrap(err, "list webhook deliveries")
	}
	out := make([]webhooks.Delivery, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}
