package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/turns"
)

type accessCodeTurnRow struct {
	bun.BaseModel  `bun:"table:access_code_turns"`
	TurnID         string    `bun:"turn_id,pk"`
	AccessCodeID   string    `bun:"access_code_id"`
	Code           string    `bun:"code"`
	AccountID      string    `bun:"account_id"`
	QueueID        string    `bun:"queue_id"`
	RunID          string    `bun:"run_id"`
	Prefix         *string   `bun:"prefix"`
	Priority       *string   `bun:"priority"`
	Classification *string   `bun:"classification"`
	Properties     jsonb     `bun:"properties,type:jsonb"`
	CreatedAt      time.Time `bun:"created_at"`
}

// AccessCodeTurns is the Postgres accesscodes.TurnCodes.
type AccessCodeTurns struct{ db *DB }

// NewAccessCodeTurns builds the repository.
func NewAccessCodeTurns(db *DB) *AccessCodeTurns { return &AccessCodeTurns{db: db} }

// Record stores which code a turn took.
func (r *AccessCodeTurns) Record(ctx context.Context, tc accesscodes.TurnCode) error {
	props, err := json.Marshal(tc.Properties)
	if err != nil {
		return wrap(err, "encode turn access code properties")
	}
	if tc.Properties == nil {
		props = []byte("{}")
	}
	row := &accessCodeTurnRow{TurnID: tc.TurnID, AccessCodeID: tc.AccessCodeID, Code: tc.Code, AccountID: tc.AccountID,
		QueueID: tc.QueueID, RunID: tc.RunID, Prefix: tc.Prefix, Priority: tc.Priority, Classification: tc.Classification,
		Properties: props, CreatedAt: tc.CreatedAt}
	_, err = r.db.IDB(ctx).NewInsert().Model(row).Exec(ctx)
	return wrap(err, "insert turn access code")
}

// ForTurn returns the code a turn took.
func (r *AccessCodeTurns) ForTurn(ctx context.Context, turnID string) (accesscodes.TurnCode, error) {
	var row accessCodeTurnRow
	if err := r.db.IDB(ctx).NewSelect().Model(&row).Where("turn_id = ?", turnID).Scan(ctx); err != nil {
		return accesscodes.TurnCode{}, notFound(err, "turn access code", turnID)
	}
	tc := accesscodes.TurnCode{TurnID: row.TurnID, AccessCodeID: row.AccessCodeID, Code: row.Code, AccountID: row.AccountID,
		QueueID: row.QueueID, RunID: row.RunID, Prefix: row.Prefix, Priority: row.Priority,
		Classification: row.Classification, CreatedAt: row.CreatedAt.UTC()}
	if err := json.Unmarshal(row.Properties, &tc.Properties); err != nil {
		return tc, wrap(err, "decode turn access code "+row.TurnID)
	}
	return tc, nil
}

// codeTurnPendingStatuses are the statuses of a turn still pending in its queue.
var codeTurnPendingStatuses = []string{string(turns.Waitlisted), string(turns.Waiting), string(turns.Held), string(turns.Called), string(turns.InService)}

// ActiveTurn finds a pending turn of the queue taken with the code: one
// indexed lookup joined to the turns' statuses.
func (r *AccessCodeTurns) ActiveTurn(ctx context.Context, accessCodeID, queueID string) (string, bool, error) {
	var id string
	err := r.db.IDB(ctx).NewSelect().TableExpr("access_code_turns AS u").ColumnExpr("u.turn_id").
		Join("JOIN turns AS t ON t.id = u.turn_id").
		Where("u.access_code_id = ? AND u.queue_id = ?", accessCodeID, queueID).
		Where("t.status IN (?)", bun.List(codeTurnPendingStatuses)).
		Limit(1).Scan(ctx, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, wrap(err, "find active turn of access code")
	}
	return id, true, nil
}
