package postgres

import (
	"context"

	"github.com/qms-dev/qms/core/turns"
)

// TurnViewsSQLForTest is the statement that reads a batch of n turn views,
// and how many ids it takes.
func TurnViewsSQLForTest(n int) (string, int) { return turnViewsSQL(n) }

// MaxViewBatchSizeForTest is the most views a batch reads.
const MaxViewBatchSizeForTest = maxViewBatchSize

// ReadViewsBatchedForTest reads the views of ids as one batch (as readers
// asking for them at once would be read), and returns each reader's turn
// and error.
func (db *DB) ReadViewsBatchedForTest(ctx context.Context, ids []string) ([]turns.Turn, []error) {
	calls := make([]*viewCall, len(ids))
	for i, id := range ids {
		calls[i] = &viewCall{ctx: ctx, in: id}
	}
	db.sendViews(calls)
	out, errs := make([]turns.Turn, len(ids)), make([]error, len(ids))
	for i, c := range calls {
		out[i], errs[i] = c.out.turn, c.err
	}
	return out, errs
}
