package e2e

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// TestRaceChainedIntakesFailAlone: 200 concurrent intakes on one run of a
// queue capped at 170 turns, 20 of them with 10 keys each sent twice with
// two different bodies, so they queue at the run's gate and share
// transactions (adapters/postgres/intakechain.go) while about one in six
// fails: CAPACITY_REACHED once the run is full (after its number was
// drawn), IDEMPOTENCY_KEY_REUSED for a key's second body. Every success is
// committed exactly once with the numbers 1..N, each with its
// turn.created event; every failure left nothing; no chain rolled back.
func TestRaceChainedIntakesFailAlone(t *testing.T) {
	const intakes, maxTurns = 200, 170
	p := newPGTurns(t, queues.CreateInput{TurnPrefix: platform.Ptr("C"), TurnPadding: platform.Ptr(3),
		Capacity: &queues.Capacity{MaxTurns: platform.Ptr(maxTurns)}})
	ctx := context.Background()
	before := p.db.IntakeChainStats()
	var wg sync.WaitGroup
	ids := make([]string, intakes)
	errs := make([]error, intakes)
	for i := range intakes {
		in := turns.CreateInput{}
		if i%10 == 0 {
			in.IdempotencyKey = platform.Ptr(fmt.Sprintf("chain-key-%d", i/20))
			in.PeopleCount = platform.Ptr(1 + i/10%2) // the key's two bodies differ
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, _, err := p.svc.Create(ctx, p.account, p.run, in)
			ids[i], errs[i] = v.ID, err
		}()
	}
	wg.Wait()

	ok := map[string]bool{}
	var full, reused int
	for i, err := range errs {
		switch {
		case err == nil:
			if ok[ids[i]] {
				t.Fatalf("turn %s answered twice as created", ids[i])
			}
			ok[ids[i]] = true
		case platform.IsCode(err, turns.CodeCapacityReached):
			full++
		case platform.IsCode(err, turns.CodeIdempotencyKeyReused):
			reused++
		default:
			t.Fatalf("intake %d: %v", i, err)
		}
	}
	if len(ok) != maxTurns || full == 0 || reused == 0 || len(ok)+full+reused != intakes {
		t.Fatalf("%d created, %d refused at capacity, %d refused for a reused key; want %d created and both refusals",
			len(ok), full, reused, maxTurns)
	}

	rows, err := p.db.Pool.Query(ctx, `SELECT t.id, t.number, t.display_code,
		(SELECT count(*) FROM events e WHERE e.name = 'turn.created' AND e.data->>'turnId' = t.id)
		FROM turns t WHERE t.run_id = $1`, p.run)
	if err != nil {
		t.Fatal(err)
	}
	var numbers []int
	for rows.Next() {
		var (
			id, code string
			n, evs   int
		)
		if err := rows.Scan(&id, &n, &code, &evs); err != nil {
			t.Fatal(err)
		}
		if !ok[id] {
			t.Fatalf("turn %s (number %d) is stored, but no intake was answered with it", id, n)
		}
		if code != fmt.Sprintf("C%03d", n) || evs != 1 {
			t.Fatalf("turn %s: display code %s for number %d, %d turn.created events", id, code, n, evs)
		}
		numbers = append(numbers, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Ints(numbers)
	if len(numbers) != len(ok) {
		t.Fatalf("%d turns stored, %d intakes answered created", len(numbers), len(ok))
	}
	for i, n := range numbers {
		if n != i+1 {
			t.Fatalf("stored numbers are not 1..%d: position %d holds %d", len(numbers), i, n)
		}
	}
	var events int
	if err := p.db.Pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE run_id = $1 AND name LIKE 'turn.%'`, p.run).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != len(ok) {
		t.Fatalf("%d events for %d turns: a failed intake left one", events, len(ok))
	}

	st := p.db.IntakeChainStats()
	joined, alone, reruns := st.Joined-before.Joined, st.FailedAlone-before.FailedAlone, st.Reruns-before.Reruns
	t.Logf("chains: %d members joined an open transaction, %d failed alone in one, %d ran again alone", joined, alone, reruns)
	if joined < intakes/4 || alone == 0 || reruns != 0 {
		t.Fatalf("chains: %d joined, %d failed alone, %d reruns; want at least %d joined, some failing alone, no rerun",
			joined, alone, reruns, intakes/4)
	}
}
