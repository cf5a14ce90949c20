package contract

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/turns"
)

// RunAccessCodeTurns runs the accesscodes.TurnCodes contract: which code a
// turn took is kept field for field and found by the turn; a code's active
// turn in a queue is a pending one of that queue and code, and none once
// the turn is finished.
func RunAccessCodeTurns(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)

	t.Run("a turn's code is kept field for field and found by the turn", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		tu := OwnersOf(set).Turn(t, o, o.QueueID)
		want := accesscodes.TurnCode{TurnID: tu.ID, AccessCodeID: platform.NewID(platform.PrefixAccessCode), Code: "CAR-7",
			AccountID: o.AccountID, QueueID: o.QueueID, RunID: tu.RunID, Prefix: platform.Ptr("C"), Priority: platform.Ptr("HIGH"),
			Classification: platform.Ptr("carpool"), Properties: map[string]any{"seats": "4", "plate": "1234-ABC"}, CreatedAt: now}
		if err := set.AccessCodeTurns.Record(ctx, want); err != nil {
			t.Fatal(err)
		}
		got, err := set.AccessCodeTurns.ForTurn(ctx, tu.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !got.CreatedAt.Equal(want.CreatedAt) {
			t.Fatalf("created at %v, want %v", got.CreatedAt, want.CreatedAt)
		}
		got.CreatedAt = want.CreatedAt
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
		}
		if _, err := set.AccessCodeTurns.ForTurn(ctx, "turn_missing"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("a turn without a code: %v, want NOT_FOUND", err)
		}
	})

	t.Run("the active turn is a pending turn of that queue and code", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		code := platform.NewID(platform.PrefixAccessCode)
		tu := OwnersOf(set).Turn(t, o, o.QueueID)
		err := set.AccessCodeTurns.Record(ctx, accesscodes.TurnCode{TurnID: tu.ID, AccessCodeID: code, Code: "CAR-7",
			AccountID: o.AccountID, QueueID: o.QueueID, RunID: tu.RunID, Properties: map[string]any{}, CreatedAt: now})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name, code, queue string
			want              bool
		}{
			{"its queue and code", code, o.QueueID, true},
			{"another queue", code, o.QueueID2, false},
			{"another code", platform.NewID(platform.PrefixAccessCode), o.QueueID, false},
		} {
			id, ok, err := set.AccessCodeTurns.ActiveTurn(ctx, c.code, c.queue)
			if err != nil || ok != c.want || (ok && id != tu.ID) {
				t.Fatalf("%s: %q %v %v, want found %v (%s)", c.name, id, ok, err, c.want, tu.ID)
			}
		}
		for _, st := range []turns.Status{turns.Called, turns.Waitlisted} {
			tu.Status = st
			if err := set.Turns.Update(ctx, tu); err != nil {
				t.Fatal(err)
			}
			if id, ok, err := set.AccessCodeTurns.ActiveTurn(ctx, code, o.QueueID); err != nil || !ok || id != tu.ID {
				t.Fatalf("%s turn: %q %v %v, want it active", st, id, ok, err)
			}
		}
		tu.Status, tu.FinishedAt = turns.Completed, &now
		if err := set.Turns.Update(ctx, tu); err != nil {
			t.Fatal(err)
		}
		if id, ok, err := set.AccessCodeTurns.ActiveTurn(ctx, code, o.QueueID); err != nil || ok {
			t.Fatalf("a finished turn is still the code's active turn: %q %v %v", id, ok, err)
		}
	})
}
