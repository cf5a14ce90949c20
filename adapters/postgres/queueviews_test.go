package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/location"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/test/pgtest"
	"github.com/qms-dev/qms/test/testkit"
)

// process is one qms process's view of a shared database: its own pool,
// so its own queue cache.
type process struct {
	db     *postgres.DB
	owners testkit.Owners
	turns  *postgres.Turns
	queues *postgres.Queues
}

func openProcess(t *testing.T, url string) process {
	t.Helper()
	db, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return process{db: db, turns: postgres.NewTurns(db), queues: postgres.NewQueues(db),
		owners: testkit.Owners{Accounts: postgres.NewAccounts(db), Entities: postgres.NewEntities(db),
			Queues: postgres.NewQueues(db), Turns: postgres.NewTurns(db)}}
}

// TestQueueViewsFollowEveryChange: a process that keeps a queue's
// definition per version sees, on its next read, every change another
// process committed to the queue, its stations or its branch's zone, and
// never a change that rolled back, through every statement that reads the
// queue that way (a turn's view, the run locks, a change's answer).
func TestQueueViewsFollowEveryChange(t *testing.T) {
	url := pgtest.URL(t)
	a, b := openProcess(t, url), openProcess(t, url)
	ctx := context.Background()
	owned := a.owners.Seed(t)
	turn := a.owners.Turn(t, owned, owned.QueueID)

	// read is what process a sees of the queue, by each path.
	type seen struct {
		name     string
		zone     string
		stations []string
	}
	read := func(p process) map[string]seen {
		t.Helper()
		out := map[string]seen{}
		add := func(path string, q queues.Queue, sts []queues.Station) {
			var labels []string
			for _, s := range sts {
				labels = append(labels, s.Label)
			}
			out[path] = seen{name: q.Name, zone: q.Timezone, stations: labels}
		}
		_, vc, err := p.turns.GetForView(ctx, turn.ID)
		if err != nil {
			t.Fatal(err)
		}
		add("GetForView", vc.Queue, vc.Stations)
		err = p.db.Do(ctx, func(ctx context.Context) error {
			_, _, q, err := p.turns.LockRunOfTurn(ctx, turn.ID)
			if err != nil {
				return err
			}
			sts, _, err := p.turns.QueueForView(ctx, q.ID)
			add("LockRunOfTurn", q, sts)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		err = p.db.Do(ctx, func(ctx context.Context) error {
			_, q, err := p.turns.LockRunWithQueue(ctx, turn.RunID)
			if err != nil {
				return err
			}
			sts, _, err := p.turns.QueueForView(ctx, q.ID)
			add("LockRunWithQueue", q, sts)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		err = p.db.Do(ctx, func(ctx context.Context) error {
			key := "no-such-key"
			got, err := p.turns.LockRunForIntake(ctx, turns.IntakeLock{RunID: turn.RunID, AccountID: owned.AccountID, Key: &key})
			if err != nil {
				return err
			}
			sts, _, err := p.turns.QueueForView(ctx, got.Queue.ID)
			add("LockRunForIntake", got.Queue, sts)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	expect := func(step string, want seen) {
		t.Helper()
		for path, got := range read(a) {
			if got.name != want.name || got.zone != want.zone || !slices.Equal(got.stations, want.stations) {
				t.Errorf("%s: %s sees %+v, want %+v", step, path, got, want)
			}
		}
	}
	expect("at first", seen{name: "Queue", zone: "UTC"})
	expect("read again (from the cache)", seen{name: "Queue", zone: "UTC"})

	now := time.Now().UTC().Truncate(time.Microsecond)
	st := queues.Station{ID: platform.NewID(platform.PrefixStation), AccountID: owned.AccountID, QueueID: owned.QueueID,
		Label: "Counter 1", CreatedAt: now}
	if err := b.queues.CreateStation(ctx, st); err != nil {
		t.Fatal(err)
	}
	expect("a station added by another process", seen{name: "Queue", zone: "UTC", stations: []string{"Counter 1"}})

	q, err := b.queues.GetQueue(ctx, owned.QueueID)
	if err != nil {
		t.Fatal(err)
	}
	q.Name = "Renamed"
	if err := b.queues.UpdateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	expect("the queue renamed by another process", seen{name: "Renamed", zone: "UTC", stations: []string{"Counter 1"}})

	zone := "Europe/Madrid"
	ent := entities.Entity{ID: owned.EntityID, AccountID: owned.AccountID, Name: "Branch", Location: &location.Location{Timezone: &zone},
		CreatedAt: now, UpdatedAt: now}
	if err := b.owners.Entities.Update(ctx, ent); err != nil {
		t.Fatal(err)
	}
	expect("the branch's zone changed by another process", seen{name: "Renamed", zone: zone, stations: []string{"Counter 1"}})

	if err := b.queues.DeleteStation(ctx, st.ID); err != nil {
		t.Fatal(err)
	}
	expect("the station deleted by another process", seen{name: "Renamed", zone: zone})

	// A change read inside its own transaction (and kept by that process)
	// and then rolled back: neither process may see it afterwards.
	rollback := errors.New("roll back")
	err = b.db.Do(ctx, func(ctx context.Context) error {
		q.Name = "Rolled back"
		if err := b.queues.UpdateQueue(ctx, q); err != nil {
			return err
		}
		_, _, q, err := b.turns.LockRunOfTurn(ctx, turn.ID)
		if err != nil {
			return err
		}
		if q.Name != "Rolled back" {
			t.Errorf("inside its transaction the change reads %q", q.Name)
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	expect("a rolled back change", seen{name: "Renamed", zone: zone})
	for path, got := range read(b) {
		if got.name != "Renamed" {
			t.Errorf("the process that rolled back: %s sees %q", path, got.name)
		}
	}
}

// TestServiceSummaryFollowsTurns: the running summary of a queue's latest
// service times (migration 0095) always equals what sorting the queue's
// turns gives, whatever order services end in and when one is taken back.
func TestServiceSummaryFollowsTurns(t *testing.T) {
	p := openProcess(t, pgtest.URL(t))
	ctx := context.Background()
	owned := p.owners.Seed(t)
	first := p.owners.Turn(t, owned, owned.QueueID)
	ids := []string{first.ID}
	for i := 2; i <= 30; i++ {
		tu := first
		tu.ID, tu.Number, tu.DisplayCode, tu.Seq = platform.NewID(platform.PrefixTurn), i, fmt.Sprint(i), first.Seq+int64(i)
		if err := p.turns.Create(ctx, tu); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tu.ID)
	}
	base := time.Now().UTC().Truncate(time.Microsecond)
	finish := func(id string, secs float64, at time.Time) {
		t.Helper()
		_, err := p.db.Pool.Exec(ctx, `UPDATE turns SET status = 'COMPLETED', service_seconds = $2, finished_at = $3 WHERE id = $1`, id, secs, at)
		if err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string) {
		t.Helper()
		got, err := p.turns.RecentServiceSeconds(ctx, owned.QueueID, turns.ServiceSamples)
		if err != nil {
			t.Fatal(err)
		}
		var want []float64
		rows, err := p.db.Pool.Query(ctx, `SELECT service_seconds FROM turns WHERE queue_id = $1 AND service_seconds IS NOT NULL
			ORDER BY finished_at DESC LIMIT $2`, owned.QueueID, turns.ServiceSamples)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s float64
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			want = append(want, s)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: summary %v, sorted turns %v", step, got, want)
		}
		_, vc, err := p.turns.GetForView(ctx, first.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(vc.ServiceSeconds, want) {
			t.Errorf("%s: a turn's view reads %v, sorted turns %v", step, vc.ServiceSeconds, want)
		}
	}
	check("no service yet")
	for i, id := range ids[:25] { // in order, more than the summary keeps
		finish(id, float64(60+i), base.Add(time.Duration(i)*time.Second))
	}
	check("25 services in order")
	finish(ids[25], 500, base.Add(-time.Hour)) // older than all: not among the latest
	check("a service that ended before the others")
	finish(ids[26], 600, base.Add(12500*time.Millisecond)) // in the middle
	check("a service placed among the latest")
	if _, err := p.db.Pool.Exec(ctx, `UPDATE turns SET status = 'CALLED', service_seconds = NULL, finished_at = NULL WHERE id = $1`, ids[24]); err != nil {
		t.Fatal(err)
	}
	check("the newest service taken back (a reopening)")
	if _, err := p.db.Pool.Exec(ctx, `UPDATE turns SET service_seconds = 1 WHERE id = $1`, ids[23]); err != nil {
		t.Fatal(err)
	}
	check("a service time corrected")
	if _, err := p.db.Pool.Exec(ctx, `DELETE FROM turns WHERE id = $1`, ids[22]); err != nil {
		t.Fatal(err)
	}
	check("a turn deleted")
	finish(ids[27], 700, base.Add(time.Minute))
	check("a new newest service")
}
