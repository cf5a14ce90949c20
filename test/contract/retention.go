package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/ticket"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/core/webhooks"
	"github.com/qms-dev/qms/core/workflow"
)

// drainPrune prunes what is older than cutoff in batches of 2 until a
// batch comes back short, and returns the batch sizes.
func drainPrune(t *testing.T, ctx context.Context, cutoff time.Time, prune func(context.Context, time.Time, int) (int, error)) []int {
	t.Helper()
	var batches []int
	for {
		n, err := prune(ctx, cutoff, 2)
		if err != nil {
			t.Fatal(err)
		}
		if n > 2 {
			t.Fatalf("a batch of 2 deleted %d", n)
		}
		batches = append(batches, n)
		if n < 2 {
			return batches
		}
	}
}

// RunPruner runs the contract of the repositories' prune methods (the
// modules' retention tasks, ports.RetentionTask): each kind of record older than
// the cutoff is deleted in batches of the given size, and nothing newer,
// nor anything still in use (pending deliveries and forwards, the line
// changes of open runs, the ticket links of unfinished turns), is touched.
func RunPruner(t *testing.T, newSet NewSet) {
	runPruner1(t, newSet)
	runPruner2(t, newSet)
}

// runPruner1 is part 1 of RunPruner: events before the cutoff; finished
// deliveries before the cutoff, never pending ones; finished forwards before
// the cutoff, never pending ones.
func runPruner1(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	cutoff := now.Add(-24 * time.Hour)
	old, fresh := cutoff.Add(-time.Minute), cutoff.Add(time.Minute)
	t.Run("events before the cutoff", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		var kept []string
		for i, at := range []time.Time{old, old.Add(-time.Hour), old, fresh, now, old, old} {
			e := platform.Event{ID: platform.NewID(platform.PrefixEvent), AccountID: o.AccountID, Name: platform.EventName[turns.TurnCreated](),
				QueueID: o.QueueID, Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), OccurredAt: at}
			if err := eventLog(t, set).Append(ctx, e); err != nil {
				t.Fatal(err)
			}
			if !at.Before(cutoff) {
				kept = append(kept, e.ID)
			}
		}
		if b := drainPrune(t, ctx, cutoff, eventLog(t, set).PruneEvents); !slices.Equal(b, []int{2, 2, 1}) {
			t.Fatalf("batches %v, want [2 2 1]", b)
		}
		left, err := eventLog(t, set).List(ctx, o.AccountID, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range left {
			ids = append(ids, e.ID)
		}
		if !slices.Equal(ids, kept) {
			t.Fatalf("events left %v, want %v", ids, kept)
		}
	})

	t.Run("finished deliveries before the cutoff, never pending ones", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		ep := webhooks.Endpoint{ID: platform.NewID(platform.PrefixWebhook), AccountID: o.AccountID, URL: "https://example.com/hook",
			Events: []string{platform.EventName[turns.TurnCreated]()}, Secret: "whsec_contract_secret_of_some_length", CreatedAt: now}
		if err := set.Webhooks.CreateEndpoint(ctx, ep); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			status string
			at     time.Time
			kept   bool
		}{
			{webhooks.StatusSucceeded, old, false},
			{webhooks.StatusFailed, old, false},
			{webhooks.StatusSucceeded, old.Add(-time.Hour), false},
			{webhooks.StatusPending, old, true}, // still being delivered
			{webhooks.StatusSucceeded, fresh, true},
			{webhooks.StatusFailed, now, true},
		}
		ids := make([]string, len(cases))
		for i, c := range cases {
			d := webhooks.Delivery{ID: platform.NewID(platform.PrefixDelivery), AccountID: o.AccountID, EndpointID: ep.ID,
				EventID: platform.NewID(platform.PrefixEvent), Event: platform.EventName[turns.TurnCreated](), Status: c.status,
				Body: []byte(`{}`), CreatedAt: c.at}
			if err := set.Webhooks.CreateDelivery(ctx, d); err != nil {
				t.Fatal(err)
			}
			ids[i] = d.ID
		}
		if b := drainPrune(t, ctx, cutoff, set.Webhooks.PruneDeliveries); !slices.Equal(b, []int{2, 1}) {
			t.Fatalf("batches %v, want [2 1]", b)
		}
		for i, c := range cases {
			_, err := set.Webhooks.GetDelivery(ctx, ids[i])
			if gone := platform.IsCode(err, platform.CodeNotFound); gone == c.kept || (err != nil && !gone) {
				t.Errorf("delivery %s %s: kept %v, want %v (%v)", c.status, c.at, !gone, c.kept, err)
			}
		}
	})

	t.Run("finished forwards before the cutoff, never pending ones", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		cases := []struct {
			status string
			at     time.Time
			kept   bool
		}{
			{workflow.ForwardDone, old, false},
			{workflow.ForwardFailed, old, false},
			{workflow.ForwardPending, old, true},
			{workflow.ForwardDone, fresh, true},
		}
		ids := make([]string, len(cases))
		for i, c := range cases {
			tu := OwnersOf(set).Turn(t, o, o.QueueID)
			fw := workflow.Forward{ID: platform.NewID(workflow.PrefixForward), AccountID: o.AccountID, LinkID: platform.NewID(platform.PrefixLink),
				FromTurnID: tu.ID, FromQueueID: o.QueueID, FromRunID: tu.RunID, ToQueueID: o.QueueID2, Trigger: workflow.TriggerComplete,
				Status: c.status, CreatedAt: c.at, UpdatedAt: c.at}
			if _, err := set.Forwards.CreateForward(ctx, fw); err != nil {
				t.Fatal(err)
			}
			ids[i] = fw.ID
		}
		if b := drainPrune(t, ctx, cutoff, set.Forwards.PruneForwards); !slices.Equal(b, []int{2, 0}) {
			t.Fatalf("batches %v, want [2 0]", b)
		}
		for i, c := range cases {
			_, err := set.Forwards.GetForward(ctx, ids[i])
			if gone := platform.IsCode(err, platform.CodeNotFound); gone == c.kept || (err != nil && !gone) {
				t.Errorf("forward %s %s: kept %v, want %v (%v)", c.status, c.at, !gone, c.kept, err)
			}
		}
	})
}

// runPruner2 is part 2 of RunPruner: line changes of runs closed before the
// cutoff; ticket links of turns finished before the cutoff, never of
// unfinished ones; rate-limit keys idle since before the cutoff.
func runPruner2(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	cutoff := now.Add(-24 * time.Hour)
	old, fresh := cutoff.Add(-time.Minute), cutoff.Add(time.Minute)
	t.Run("line changes of runs closed before the cutoff", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		closedAt := map[string]*time.Time{"closed long ago": &old, "closed lately": &fresh, "open": nil}
		runs := map[string]string{}
		for name, at := range closedAt {
			tu := OwnersOf(set).Turn(t, o, o.QueueID)
			runs[name] = tu.RunID
			for range 3 {
				if _, err := OwnersOf(set).Turns.BumpLine(ctx, tu.RunID, turns.LineChange{Added: []turns.LineKey{{Seq: 1}}}); err != nil {
					t.Fatal(err)
				}
			}
			if at == nil {
				continue
			}
			run, err := OwnersOf(set).Queues.GetRun(ctx, tu.RunID)
			if err != nil {
				t.Fatal(err)
			}
			run.Status, run.IntakeOpen, run.ClosedAt, run.UpdatedAt = queues.RunClosed, false, at, *at
			if err := OwnersOf(set).Queues.UpdateRun(ctx, run); err != nil {
				t.Fatal(err)
			}
		}
		total := 0
		for n := 1; n > 0; {
			var err error
			if n, err = set.Turns.PruneLineChanges(ctx, cutoff, 2); err != nil {
				t.Fatal(err)
			}
			total += n
		}
		if total == 0 {
			t.Fatal("nothing pruned")
		}
		for name, runID := range runs {
			got, err := OwnersOf(set).Turns.LineChanges(ctx, runID, 0, 3)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 0, false: 3}[name == "closed long ago"]; len(got) != want {
				t.Errorf("run %s: %d line changes left, want %d", name, len(got), want)
			}
		}
	})

	t.Run("ticket links of turns finished before the cutoff, never of unfinished ones", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		cases := []struct {
			name     string
			finished *time.Time
			links    int
			kept     bool
		}{
			{"finished long ago", &old, 2, false},
			{"finished long ago too", &old, 1, false},
			{"finished lately", &fresh, 1, true},
			{"not finished, made long ago", nil, 1, true},
		}
		ids := make([]string, len(cases))
		for i, c := range cases {
			tu := OwnersOf(set).Turn(t, o, o.QueueID)
			if c.finished != nil {
				tu.Status, tu.FinishedAt, tu.UpdatedAt = turns.Completed, c.finished, *c.finished
				if err := OwnersOf(set).Turns.Update(ctx, tu); err != nil {
					t.Fatal(err)
				}
			}
			for range c.links {
				l := ticket.Link{ID: platform.NewID(ticket.PrefixLink), AccountID: o.AccountID, TurnID: tu.ID, QueueID: tu.QueueID,
					RunID: tu.RunID, Hash: platform.NewID("h"), CreatedAt: old}
				if err := set.TicketLinks.Create(ctx, l); err != nil {
					t.Fatal(err)
				}
			}
			ids[i] = tu.ID
		}
		if b := drainPrune(t, ctx, cutoff, set.TicketLinks.PruneTicketLinks); !slices.Equal(b, []int{2, 1}) {
			t.Fatalf("batches %v, want [2 1]", b)
		}
		for i, c := range cases {
			n, err := set.TicketLinks.CountByTurn(ctx, ids[i])
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: c.links, false: 0}[c.kept]; n != want {
				t.Errorf("turn %s: %d links left, want %d", c.name, n, want)
			}
		}
	})

	t.Run("rate-limit keys idle since before the cutoff", func(t *testing.T) {
		set := newSet(t)
		// One key per time: a key is one budget, pruned once its last
		// request is older than the cutoff (its window long over).
		keys := []struct {
			key  string
			at   time.Time
			kept bool
		}{{"fresh_key", fresh, true}, {"old_key", old, false}, {"older_key", old.Add(-time.Hour), false}}
		for _, k := range keys {
			if _, err := set.RateLimiter.Allow(ctx, k.key, 100, k.at); err != nil {
				t.Fatal(err)
			}
		}
		if b := drainPrune(t, ctx, cutoff, set.RateLimiter.PruneRateLimits); !slices.Equal(b, []int{2, 0}) {
			t.Fatalf("batches %v, want [2 0]", b)
		}
		// A key still counted says so in its second request's Remaining.
		for _, k := range keys {
			d, err := set.RateLimiter.Allow(ctx, k.key, 100, k.at)
			if err != nil {
				t.Fatal(err)
			}
			if kept := d.Remaining == 98; kept != k.kept {
				t.Errorf("key %s: kept %v (remaining %d), want %v", k.key, kept, d.Remaining, k.kept)
			}
		}
	})
}
