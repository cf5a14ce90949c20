package turns_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

func TestDisplayCodeIsPrefixAndPaddedNumber(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{TurnPrefix: platform.Ptr("A"), TurnPadding: platform.Ptr(3)})
	for i, want := range []string{"A001", "A002", "A003"} {
		v := f.take(run, turns.CreateInput{})
		if v.DisplayCode != want || v.Number != i+1 {
			t.Fatalf("turn %d: want %s/%d, got %s/%d", i, want, i+1, v.DisplayCode, v.Number)
		}
		if v.Status != turns.Waiting || v.Priority != queues.PriorityNormal || v.PeopleCount != 1 {
			t.Fatalf("defaults: %+v", v.Turn)
		}
	}
	_, bare := f.queue(queues.CreateInput{})
	if v := f.take(bare, turns.CreateInput{}); v.DisplayCode != "1" {
		t.Fatalf("no prefix, no padding: want 1, got %s", v.DisplayCode)
	}
}

func TestCreateChecksBodyBounds(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{})
	_, _, err := f.svc.Create(f.ctx, account, run, turns.CreateInput{
		PeopleCount: platform.Ptr(21), IdempotencyKey: platform.Ptr("short"), Phone: platform.Ptr("123"),
	})
	got := platform.FieldRules(err)
	want := map[string]string{"peopleCount": "max", "idempotencyKey": "min_length", "phone": "min_length"}
	for p, r := range want {
		if got[p] != r {
			t.Errorf("%s: want %s, got %q (%v)", p, r, got[p], got)
		}
	}
	_, _, err = f.svc.Create(f.ctx, account, run, turns.CreateInput{PeopleCount: platform.Ptr(0)})
	if platform.FieldRules(err)["peopleCount"] != "min" {
		t.Fatalf("peopleCount 0: %v", err)
	}
	v := f.take(run, turns.CreateInput{PeopleCount: platform.Ptr(20), Phone: platform.Ptr("+34600111222"), NotifyWhatsapp: platform.Ptr(true)})
	if v.PeopleCount != 20 || *v.Phone != "+34600111222" || !v.NotifyWhatsapp {
		t.Fatalf("stored body: %+v", v.Turn)
	}
}

func TestFormResponseIsCheckedAndChoicesSetPrefixAndPriority(t *testing.T) {
	f := newFixture(t)
	high, veryHigh := queues.PriorityHigh, queues.PriorityVeryHigh
	_, run := f.queue(queues.CreateInput{TurnPrefix: platform.Ptr("A"), TurnPadding: platform.Ptr(2),
		PreAttention: &queues.PreAttention{Questions: []queues.Question{
			{ID: platform.Ptr("reason"), Label: platform.Ptr("Reason"), Type: platform.Ptr(queues.QuestionChoice),
				Required: platform.Ptr(true), Options: []queues.Option{
					{Label: platform.Ptr("Pickup"), Bare: true},
					{Label: platform.Ptr("Prescription"), Prefix: platform.Ptr("P"), Priority: &high},
				}},
			{ID: platform.Ptr("senior"), Label: platform.Ptr("Senior?"), Type: platform.Ptr(queues.QuestionChoice),
				Options: []queues.Option{{Label: platform.Ptr("yes"), Prefix: platform.Ptr("S"), Priority: &veryHigh}, {Label: platform.Ptr("no"), Bare: true}}},
			{ID: platform.Ptr("name"), Label: platform.Ptr("Name")},
		}}})

	_, _, err := f.svc.Create(f.ctx, account, run, turns.CreateInput{FormResponse: map[string]string{"nope": "x", "senior": "maybe"}})
	got := platform.FieldRules(err)
	for p, r := range map[string]string{"formResponse.nope": "unknown_question", "formResponse.senior": "oneof", "formResponse.reason": "required"} {
		if got[p] != r {
			t.Errorf("%s: want %s, got %q (%v)", p, r, got[p], got)
		}
	}

	plain := f.take(run, turns.CreateInput{FormResponse: map[string]string{"reason": "Pickup", "name": "Ana"}})
	if plain.DisplayCode != "A01" || plain.Priority != queues.PriorityNormal || plain.FormResponse["name"] != "Ana" {
		t.Fatalf("plain option: %+v", plain.Turn)
	}
	rx := f.take(run, turns.CreateInput{FormResponse: map[string]string{"reason": "Prescription"}})
	if rx.DisplayCode != "P02" || rx.Priority != queues.PriorityHigh {
		t.Fatalf("option with prefix and priority: %s %s", rx.DisplayCode, rx.Priority)
	}
	// The first question's prefix wins; the most urgent priority wins.
	both := f.take(run, turns.CreateInput{FormResponse: map[string]string{"reason": "Prescription", "senior": "yes"}})
	if both.DisplayCode != "P03" || both.Priority != queues.PriorityVeryHigh {
		t.Fatalf("two options: %s %s", both.DisplayCode, both.Priority)
	}
}

func TestIdempotencyKey(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{})
	_, other := f.queue(queues.CreateInput{})
	in := turns.CreateInput{IdempotencyKey: platform.Ptr("key-0001"), PeopleCount: platform.Ptr(1)}
	first, replayed, err := f.svc.Create(f.ctx, account, run, in)
	if err != nil || replayed {
		t.Fatalf("first: %v %v", replayed, err)
	}
	// Leaving peopleCount out asks for the same thing.
	again, replayed, err := f.svc.Create(f.ctx, account, run, turns.CreateInput{IdempotencyKey: platform.Ptr("key-0001")})
	if err != nil || !replayed || again.ID != first.ID {
		t.Fatalf("repeat: want %s replayed, got %s %v %v", first.ID, again.ID, replayed, err)
	}
	_, _, err = f.svc.Create(f.ctx, account, run, turns.CreateInput{IdempotencyKey: platform.Ptr("key-0001"), PeopleCount: platform.Ptr(2)})
	wantCode(t, err, turns.CodeIdempotencyKeyReused)
	_, _, err = f.svc.Create(f.ctx, account, other, turns.CreateInput{IdempotencyKey: platform.Ptr("key-0001")})
	wantCode(t, err, turns.CodeIdempotencyKeyReused)
	page, _ := f.svc.List(f.ctx, account, run, turns.ListFilter{}, platform.PageRequest{Limit: 50})
	if len(page.Items) != 1 {
		t.Fatalf("want one turn, got %d", len(page.Items))
	}
	// Keys are per account.
	f.queueOther(t)
}

// queueOther checks another account can use the same key on its own run.
func (f *fixture) queueOther(t *testing.T) {
	t.Helper()
	const other = "acc_2"
	e, err := f.queuesEntity(other)
	if err != nil {
		t.Fatal(err)
	}
	q, err := f.queues.Create(f.ctx, other, queues.CreateInput{EntityID: &e, Name: platform.Ptr("Other"), Type: platform.Ptr(queues.TypeTurn)})
	if err != nil {
		t.Fatal(err)
	}
	if _, replayed, err := f.svc.Create(f.ctx, other, q.Runs[0].ID, turns.CreateInput{IdempotencyKey: platform.Ptr("key-0001")}); err != nil || replayed {
		t.Fatalf("other account, same key: %v %v", replayed, err)
	}
}

func TestRunStateGatesIntake(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{})
	waiting := f.take(run, turns.CreateInput{})

	if _, err := f.queues.SetIntake(f.ctx, account, run, false); err != nil {
		t.Fatal(err)
	}
	_, _, err := f.svc.Create(f.ctx, account, run, turns.CreateInput{})
	wantCode(t, err, turns.CodeIntakeClosed)
	// Pending turns are still served.
	if v, err := f.svc.Next(f.ctx, account, run, turns.CallInput{}); err != nil || v.ID != waiting.ID {
		t.Fatalf("next with intake closed: %v %v", v.ID, err)
	}

	if _, err := f.queues.CloseRun(f.ctx, account, run); err != nil {
		t.Fatal(err)
	}
	_, _, err = f.svc.Create(f.ctx, account, run, turns.CreateInput{})
	wantCode(t, err, turns.CodeQueueClosed)

	_, err = f.svc.Get(f.ctx, "acc_other", waiting.ID)
	wantCode(t, err, platform.CodeForbidden)
	_, _, err = f.svc.Create(f.ctx, "acc_other", run, turns.CreateInput{})
	wantCode(t, err, platform.CodeForbidden)
	_, _, err = f.svc.Create(f.ctx, account, "run_missing", turns.CreateInput{})
	wantCode(t, err, platform.CodeNotFound)
}

func TestAppointmentQueuesTakeNoTurns(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{Type: platform.Ptr(queues.TypeAppointment)})
	_, _, err := f.svc.Create(f.ctx, account, run, turns.CreateInput{})
	wantCode(t, err, turns.CodeNotATurnQueue)
	_, hybrid := f.queue(queues.CreateInput{Type: platform.Ptr(queues.TypeHybrid)})
	f.take(hybrid, turns.CreateInput{})
}

func TestWhatsappCaptureOff(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{WhatsappCapture: platform.Ptr(false)})
	_, _, err := f.svc.Create(f.ctx, account, run, turns.CreateInput{Phone: platform.Ptr("+34600111222")})
	wantCode(t, err, turns.CodeWhatsappCaptureDisabled)
	_, _, err = f.svc.Create(f.ctx, account, run, turns.CreateInput{NotifyWhatsapp: platform.Ptr(true)})
	wantCode(t, err, turns.CodeWhatsappCaptureDisabled)
	f.take(run, turns.CreateInput{NotifyWhatsapp: platform.Ptr(false)})
}

func TestNumberingResetsDailyInTheQueuesZone(t *testing.T) {
	f := newFixture(t)
	// 23:30 in Madrid (UTC+1 in March) is 22:30 UTC.
	f.clock.Set(time.Date(2026, 3, 2, 22, 30, 0, 0, time.UTC))
	loc := queuesLocation("Europe/Madrid")
	_, daily := f.queue(queues.CreateInput{Location: loc, Schedule: &queues.Schedule{
		Mode: platform.Ptr(queues.ScheduleAlways), ResetNumberingDaily: platform.Ptr(true)}})
	_, plain := f.queue(queues.CreateInput{Location: loc})
	first, second := f.take(daily, turns.CreateInput{}), f.take(daily, turns.CreateInput{})
	if first.Number != 1 || second.Number != 2 {
		t.Fatal("first day numbering")
	}
	f.take(plain, turns.CreateInput{})
	f.take(plain, turns.CreateInput{})
	// 23:10 UTC is still March 2 in UTC, but 00:10 on March 3 in Madrid.
	// The first turn is done; the second still waits, so its code is not
	// given again.
	f.force(first.ID, func(t *turns.Turn) { t.Status = turns.Completed })
	f.clock.Set(time.Date(2026, 3, 2, 23, 10, 0, 0, time.UTC))
	if n := f.take(daily, turns.CreateInput{}).Number; n != 1 {
		t.Fatalf("new local day: want 1, got %d", n)
	}
	if n := f.take(daily, turns.CreateInput{}).Number; n != 3 {
		t.Fatalf("the code of yesterday's waiting turn 2 is skipped: want 3, got %d", n)
	}
	if n := f.take(plain, turns.CreateInput{}).Number; n != 3 {
		t.Fatalf("without the reset numbering goes on: want 3, got %d", n)
	}
}

func queuesLocation(tz string) *locationT {
	return &locationT{Lat: platform.Ptr(40.4), Lng: platform.Ptr(-3.7), ShortAddress: platform.Ptr("Calle Mayor 1"), Timezone: &tz}
}

func TestWeeklyScheduleGatesIntake(t *testing.T) {
	f := newFixture(t)
	weekly := func(extra func(s *queues.Schedule)) *queues.Schedule {
		s := &queues.Schedule{Mode: platform.Ptr(queues.ScheduleWeekly), Weekly: []queues.WeeklyHours{
			{Day: platform.Ptr(1), Open: platform.Ptr("09:00"), Close: platform.Ptr("14:00")}, // Monday
		}}
		if extra != nil {
			extra(s)
		}
		return s
	}
	_, plain := f.queue(queues.CreateInput{Schedule: weekly(nil)})
	_, early := f.queue(queues.CreateInput{Schedule: weekly(func(s *queues.Schedule) { s.OpensBeforeMinutes = platform.Ptr(30) })})
	_, late := f.queue(queues.CreateInput{Schedule: weekly(func(s *queues.Schedule) { s.ClosesBeforeMinutes = platform.Ptr(60) })})
	_, always := f.queue(queues.CreateInput{Schedule: weekly(func(s *queues.Schedule) { s.AllowOutsideHours = platform.Ptr(true) })})

	try := func(run string, at time.Time) error {
		f.clock.Set(at)
		_, _, err := f.svc.Create(f.ctx, account, run, turns.CreateInput{})
		return err
	}
	cases := []struct {
		name string
		run  string
		at   time.Time
		want string
	}{
		{"inside", plain, monday10, ""},
		{"before opening", plain, monday10.Add(-90 * time.Minute), turns.CodeOutsideHours},
		{"at close", plain, monday10.Add(4 * time.Hour), turns.CodeOutsideHours},
		{"another day", plain, monday10.Add(24 * time.Hour), turns.CodeOutsideHours},
		{"opens 30 minutes before", early, monday10.Add(-80 * time.Minute), ""},
		{"not 31", early, monday10.Add(-92 * time.Minute), turns.CodeOutsideHours},
		{"closes an hour before", late, monday10.Add(3*time.Hour + 5*time.Minute), turns.CodeOutsideHours},
		{"still open before that", late, monday10.Add(2*time.Hour + 55*time.Minute), ""},
		{"allowOutsideHours", always, monday10.Add(24 * time.Hour), ""},
	}
	for _, c := range cases {
		if got := code(try(c.run, c.at)); got != c.want {
			t.Errorf("%s: want %q, got %q", c.name, c.want, got)
		}
	}
}

func TestCapacity(t *testing.T) {
	f := newFixture(t)
	_, strict := f.queue(queues.CreateInput{Capacity: &queues.Capacity{MaxTurns: platform.Ptr(2)}})
	a := f.take(strict, turns.CreateInput{})
	f.take(strict, turns.CreateInput{})
	_, _, err := f.svc.Create(f.ctx, account, strict, turns.CreateInput{})
	e := wantCode(t, err, turns.CodeCapacityReached)
	if e.Details["maxTurns"] != 2 {
		t.Fatalf("details: %v", e.Details)
	}
	// A finished turn frees its room.
	if _, err := f.svc.Cancel(f.ctx, account, a.ID); err != nil {
		t.Fatal(err)
	}
	f.take(strict, turns.CreateInput{})

	_, listed := f.queue(queues.CreateInput{Capacity: &queues.Capacity{MaxTurns: platform.Ptr(1), WaitlistEnabled: platform.Ptr(true)}})
	first := f.take(listed, turns.CreateInput{})
	w1 := f.take(listed, turns.CreateInput{})
	w2 := f.take(listed, turns.CreateInput{})
	if w1.Status != turns.Waitlisted || w2.Status != turns.Waitlisted || w1.Position != nil {
		t.Fatalf("over capacity with a waitlist: %s %s", w1.Status, w2.Status)
	}
	// Completing the first promotes the waitlist in order, one per room.
	if _, err := f.svc.Cancel(f.ctx, account, first.ID); err != nil {
		t.Fatal(err)
	}
	if got := f.get(w1.ID); got.Status != turns.Waiting || pos(got) != 1 {
		t.Fatalf("w1 after room freed: %s %v", got.Status, got.Position)
	}
	if got := f.get(w2.ID); got.Status != turns.Waitlisted {
		t.Fatalf("w2 stays waitlisted: %s", got.Status)
	}

	_, manual := f.queue(queues.CreateInput{Capacity: &queues.Capacity{MaxTurns: platform.Ptr(1), WaitlistEnabled: platform.Ptr(true), AutoPromote: platform.Ptr(false)}})
	m1 := f.take(manual, turns.CreateInput{})
	m2 := f.take(manual, turns.CreateInput{})
	_, err = f.svc.Release(f.ctx, account, m2.ID)
	wantCode(t, err, turns.CodeCapacityReached)
	if _, err := f.svc.Cancel(f.ctx, account, m1.ID); err != nil {
		t.Fatal(err)
	}
	if got := f.get(m2.ID); got.Status != turns.Waitlisted {
		t.Fatalf("without autoPromote: %s", got.Status)
	}
	if got, err := f.svc.Release(f.ctx, account, m2.ID); err != nil || got.Status != turns.Waiting {
		t.Fatalf("promoted by hand: %v %v", got.Status, err)
	}
}

// failingGuard refuses every turn after it took part in the transaction.
type failingGuard struct {
	turns.GuardBase
	refuse bool
}

func (g *failingGuard) Admitted(context.Context, turns.Intake, turns.Turn) error {
	if g.refuse {
		return errors.New("refused after the number was taken")
	}
	return nil
}

func TestRolledBackIntakeLeavesNoGap(t *testing.T) {
	g := &failingGuard{}
	f := newFixture(t, g)
	_, run := f.queue(queues.CreateInput{TurnPrefix: platform.Ptr("A"), TurnPadding: platform.Ptr(3)})
	f.take(run, turns.CreateInput{})
	g.refuse = true
	if _, _, err := f.svc.Create(f.ctx, account, run, turns.CreateInput{}); err == nil {
		t.Fatal("want the guard's refusal")
	}
	g.refuse = false
	if v := f.take(run, turns.CreateInput{}); v.DisplayCode != "A002" {
		t.Fatalf("after a rolled-back intake: want A002, got %s", v.DisplayCode)
	}
	for _, e := range f.eventsOfName(platform.EventName[turns.TurnCreated]()) {
		if data(e)["displayCode"] == "A003" {
			t.Fatal("an event of the rolled-back turn survived")
		}
	}
	if n := len(f.eventsOfName(platform.EventName[turns.TurnCreated]())); n != 2 {
		t.Fatalf("want 2 turn.created, got %d", n)
	}
}

func (f *fixture) eventsOfName(name string) []platform.Event {
	evs, _ := f.events.List(f.ctx, account, "", 0)
	var out []platform.Event
	for _, e := range evs {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func TestCreatedEventData(t *testing.T) {
	f := newFixture(t)
	q, run := f.queue(queues.CreateInput{TurnPrefix: platform.Ptr("B")})
	v := f.take(run, turns.CreateInput{})
	evs := f.eventsOf(v.ID)
	if len(evs) != 1 || evs[0].Name != platform.EventName[turns.TurnCreated]() {
		t.Fatalf("events: %+v", evs)
	}
	d := data(evs[0])
	if d["turnId"] != v.ID || d["queueRunId"] != run || d["displayCode"] != "B1" || d["queueId"] != q.ID || d["status"] != "WAITING" {
		t.Fatalf("data: %v", d)
	}
	if evs[0].RunID != run || evs[0].QueueID != q.ID || evs[0].AccountID != account {
		t.Fatalf("event: %+v", evs[0])
	}
}

func TestAdmitForwardsIntoARun(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{TurnPrefix: platform.Ptr("X"), PreAttention: &queues.PreAttention{Questions: []queues.Question{
		{ID: platform.Ptr("other"), Label: platform.Ptr("Other"), Required: platform.Ptr(true)}}}})
	var kept, fresh turns.Turn
	err := f.store.Do(f.ctx, func(ctx context.Context) error {
		var err error
		kept, err = f.svc.Admit(ctx, account, run, turns.Admission{Number: 7, DisplayCode: "A007", Priority: queues.PriorityHigh,
			FormResponse: map[string]string{"from": "source queue"}})
		if err != nil {
			return err
		}
		fresh, err = f.svc.Admit(ctx, account, run, turns.Admission{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if kept.DisplayCode != "A007" || kept.Number != 7 || kept.Priority != queues.PriorityHigh || kept.Status != turns.Waiting {
		t.Fatalf("kept number: %+v", kept)
	}
	if fresh.DisplayCode != "X1" || fresh.PeopleCount != 1 {
		t.Fatalf("fresh number: %+v", fresh)
	}
	if p := pos(f.get(kept.ID)); p != 1 {
		t.Fatalf("HIGH goes first: %d", p)
	}
}
