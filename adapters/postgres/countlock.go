package postgres

import "context"

// holdCount serialises the "at most N" rules that count rows and then
// insert one (at most 20 ticket links a turn, 50 live display tokens a
// run, 20 webhook endpoints an account): it takes a transaction-scoped
// advisory lock on (what, parent id) before the count, held until the
// unit of work ends, so two creates for one parent cannot both count
// N-1 and both insert (issue 23: 40 concurrent link creates made up to 33
// links). An advisory key rather than the parent's row lock: the parents
// (turns, runs) are the rows every intake and dispatch locks, in the order
// of docs/turns.md, and a create of a link or token must neither wait on
// them nor make them wait. Creates for other parents never wait; a hash
// collision between two keys only serialises them.
func (db *DB) holdCount(ctx context.Context, what, parentID string) error {
	_, err := db.IDB(ctx).ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", what+"/"+parentID)
	return wrap(err, "lock the count of "+what)
}
