package ports

import (
	"context"
	"time"
)

// RetentionTask is one kind of record a module keeps from growing without
// bound, contributed to the group GroupRetention (like River's one
// maintenance service per cleaner): the retention job (modules/retention)
// runs every task on its interval. Prune deletes at most limit records
// older than before in one short statement (its own transaction) and
// reports how many it deleted; the job calls it again while it deletes a
// full batch, so a large backlog never holds a long lock or a long
// transaction. Nothing at or after before is touched, nor anything still
// in use whatever its age.
type RetentionTask struct {
	// Name names the records in the job's logs ("webhook_deliveries").
	Name string
	// Keep is how long a record is kept (its retention.* setting).
	Keep  time.Duration
	Prune func(ctx context.Context, before time.Time, limit int) (int, error)
}
