package memory

import (
	"context"
	"maps"

	"github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/turns"
)

// AccessCodeTurns is the memory accesscodes.TurnCodes: which turn took
// which code. Turn statuses come from the turns repository of the same
// store.
type AccessCodeTurns struct {
	s     *Store
	rows  *table[accesscodes.TurnCode] // by turn id
	turns turns.Repository
}

// NewAccessCodeTurns builds the repository on s. A record goes with its
// run (the turns go with it) and with its code.
func NewAccessCodeTurns(s *Store, tr turns.Repository) *AccessCodeTurns {
	r := &AccessCodeTurns{s: s, rows: newTable[accesscodes.TurnCode](s), turns: tr}
	s.OnDelete("run", func(ctx context.Context, runID string) {
		for _, tc := range sorted(r.rows.rows, "", 0, func(tc accesscodes.TurnCode) bool { return tc.RunID == runID }) {
			r.s.write(ctx, func() func() { return r.rows.del(tc.TurnID) })
		}
	})
	return r
}

// Record stores which code a turn took.
func (r *AccessCodeTurns) Record(ctx context.Context, tc accesscodes.TurnCode) error {
	tc.Properties = maps.Clone(tc.Properties)
	r.s.write(ctx, func() func() { return r.rows.put(tc.TurnID, tc) })
	return nil
}

// ForTurn returns the code a turn took.
func (r *AccessCodeTurns) ForTurn(ctx context.Context, turnID string) (tc accesscodes.TurnCode, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if tc, ok = r.rows.rows[turnID]; !ok {
			err = platform.NotFound("turn access code", turnID)
		}
		tc.Properties = maps.Clone(tc.Properties)
	})
	return tc, err
}

// ActiveTurn finds a pending turn of the queue taken with the code.
func (r *AccessCodeTurns) ActiveTurn(ctx context.Context, accessCodeID, queueID string) (string, bool, error) {
	var ids []string
	r.s.read(ctx, func() {
		for _, tc := range sorted(r.rows.rows, "", 0, func(tc accesscodes.TurnCode) bool {
			return tc.AccessCodeID == accessCodeID && tc.QueueID == queueID
		}) {
			ids = append(ids, tc.TurnID)
		}
	})
	for _, id := range ids {
		t, err := r.turns.Get(ctx, id)
		if platform.IsCode(err, platform.CodeNotFound) {
			continue
		}
		if err != nil {
			return "", false, err
		}
		if t.Status.Active() || t.Status == turns.Waitlisted {
			return id, true, nil
		}
	}
	return "", false, nil
}
