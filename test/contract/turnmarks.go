package contract

import (
	"context"
	"testing"

	"github.com/qms-dev/qms/core/turns"
)

// runTurnMarks runs the turns.Marker contract: a mark is recorded once per
// (turn, kind), and a rolled-back mark is no mark.
func runTurnMarks(t *testing.T, newSet NewSet) {
	t.Run("a turn mark is recorded once per kind, and not when rolled back", func(t *testing.T) {
		ctx := context.Background()
		set := newSet(t)
		m, ok := set.Turns.(turns.Marker)
		if !ok {
			t.Fatalf("%T does not record turn marks (turns.Marker)", set.Turns)
		}
		w := newTurnsWorld(t, set)
		a, b := w.turn(t, nil), w.turn(t, nil)
		boom := context.Canceled
		if err := set.UoW.Do(ctx, func(ctx context.Context) error {
			if first, err := m.MarkOnce(ctx, a.ID, turns.MarkSLAWait, w.now); err != nil || !first {
				t.Fatalf("first mark: %v %v", first, err)
			}
			return boom
		}); err != boom {
			t.Fatalf("want the unit's error back, got %v", err)
		}
		for i, want := range []bool{true, false} {
			if first, err := m.MarkOnce(ctx, a.ID, turns.MarkSLAWait, w.now); err != nil || first != want {
				t.Fatalf("mark %d of a: %v (want %v) %v", i, first, want, err)
			}
		}
		if first, err := m.MarkOnce(ctx, a.ID, "other", w.now); err != nil || !first {
			t.Fatalf("another kind: %v %v", first, err)
		}
		if first, err := m.MarkOnce(ctx, b.ID, turns.MarkSLAWait, w.now); err != nil || !first {
			t.Fatalf("another turn: %v %v", first, err)
		}
	})

	t.Run("a phone's served turns are counted per queue", func(t *testing.T) {
		ctx := context.Background()
		set := newSet(t)
		c, ok := set.Turns.(turns.PhoneCounter)
		if !ok {
			t.Fatalf("%T does not count a phone's turns (turns.PhoneCounter)", set.Turns)
		}
		w := newTurnsWorld(t, set)
		phone, other := "+5511999990000", "+5511999990001"
		w.turn(t, func(tu *turns.Turn) { tu.Phone, tu.Status = &phone, turns.Completed })
		w.turn(t, func(tu *turns.Turn) { tu.Phone, tu.Status = &phone, turns.Completed })
		w.turn(t, func(tu *turns.Turn) { tu.Phone, tu.Status = &phone, turns.Cancelled })
		w.turn(t, func(tu *turns.Turn) { tu.Phone = &phone })
		w.turn(t, func(tu *turns.Turn) { tu.Phone, tu.Status = &other, turns.Completed })
		w.turn(t, func(tu *turns.Turn) { tu.Status = turns.Completed })
		for _, k := range []struct {
			queue, phone string
			want         int
		}{{w.owned.QueueID, phone, 2}, {w.owned.QueueID, other, 1}, {w.owned.QueueID, "+5511000000000", 0}, {"que_none", phone, 0}} {
			if n, err := c.CountServedByPhone(ctx, k.queue, k.phone); err != nil || n != k.want {
				t.Errorf("CountServedByPhone(%s, %s) = %d, %v; want %d", k.queue, k.phone, n, err, k.want)
			}
		}
	})
}
