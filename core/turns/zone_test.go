package turns_test

import (
	"testing"
	"time"

	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// TestAQueueRunsOnItsBranchsZone: without a location.timezone of its own,
// a queue's opening hours and daily numbering follow its entity's zone.
func TestAQueueRunsOnItsBranchsZone(t *testing.T) {
	f := newFixture(t)
	e, err := f.ents.Create(f.ctx, account, entities.CreateInput{Name: platform.Ptr("Tokyo"), Location: queuesLocation("Asia/Tokyo")})
	if err != nil {
		t.Fatal(err)
	}
	f.entityID = e.ID
	// Monday 09:00-14:00 in Tokyo is 00:00-05:00 UTC.
	q, run := f.queue(queues.CreateInput{Schedule: &queues.Schedule{Mode: platform.Ptr(queues.ScheduleWeekly),
		ResetNumberingDaily: platform.Ptr(true), Weekly: []queues.WeeklyHours{
			{Day: platform.Ptr(1), Open: platform.Ptr("09:00"), Close: platform.Ptr("14:00")},
			{Day: platform.Ptr(0), Open: platform.Ptr("20:00"), Close: platform.Ptr("24:00")},
		}}})
	if q.Timezone != "Asia/Tokyo" {
		t.Fatalf("timezone in effect: %q", q.Timezone)
	}
	f.clock.Set(time.Date(2026, 3, 2, 1, 0, 0, 0, time.UTC)) // Monday 10:00 in Tokyo
	f.take(run, turns.CreateInput{})
	f.clock.Set(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)) // Monday 19:00 in Tokyo, 10:00 UTC
	_, _, err = f.svc.Create(f.ctx, account, run, turns.CreateInput{})
	wantCode(t, err, turns.CodeOutsideHours)
	// Sunday 23:00 in Tokyo is Sunday 14:00 UTC; Monday's first turn in
	// Tokyo comes an hour later, on a new local day.
	f.clock.Set(time.Date(2026, 3, 8, 14, 0, 0, 0, time.UTC))
	f.take(run, turns.CreateInput{})
	f.clock.Set(time.Date(2026, 3, 8, 15, 30, 0, 0, time.UTC)) // Monday 00:30 in Tokyo, still Sunday in UTC
	// Sunday 20:00-24:00 and Monday 09:00 do not touch: closed at 00:30.
	_, _, err = f.svc.Create(f.ctx, account, run, turns.CreateInput{})
	wantCode(t, err, turns.CodeOutsideHours)
}
