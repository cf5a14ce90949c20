package contract

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/qms-dev/qms/adapters/adapterset"
	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/test/pgtest"
)

// aptPostgresStack is the appointments stack on a fresh PostgreSQL set,
// for the benchmarks (the contract runs through Exercise).
func aptPostgresStack(b *testing.B) *aptStack {
	set, err := adapterset.Postgres(pgtest.New(b), adapterset.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		SecretKey: "contract-test-key-of-at-least-32-characters"})
	if err != nil {
		b.Fatal(err)
	}
	return aptFromSet(b, set, platformtest.NewClock(aptNow))
}

// aptBenchDay generates a day of 500 two-minute slots (06:00-22:40) on a
// new run and returns the run's id.
func aptBenchDay(b *testing.B, st *aptStack, capacity int) string {
	b.Helper()
	run := st.run(b)
	if n := len(st.slots(b, run.ID, "2026-03-09", "06:00", "22:40", 2, capacity)); n != 500 {
		b.Fatalf("%d slots, want 500", n)
	}
	return run.ID
}

// BenchmarkAppointmentBookNextAvailable measures a whole next-available
// booking on Postgres, as the API runs it: one transaction that reads the
// run and its queue, takes the earliest seat of a 500-slot day, inserts the
// appointment and appends appointment.scheduled. Slots have two seats, so
// the day fills from the morning on as the benchmark runs; a new day is
// made (off the clock) when it is full.
func BenchmarkAppointmentBookNextAvailable(b *testing.B) {
	ctx := context.Background()
	st := aptPostgresStack(b)
	runID, seats := aptBenchDay(b, st, 2), 1000
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if seats == 0 {
			b.StopTimer()
			runID, seats = aptBenchDay(b, st, 2), 1000
			b.StartTimer()
		}
		if _, err := st.svc.Schedule(ctx, st.account, runID, appointments.ScheduleInput{}); err != nil {
			b.Fatal(err)
		}
		seats--
	}
}

// BenchmarkAppointmentListAvailableSlots measures GET slots?available=true
// on Postgres through the service, on a 500-slot day whose first 250 slots
// are full: one page of 200 bookable slots.
func BenchmarkAppointmentListAvailableSlots(b *testing.B) {
	ctx := context.Background()
	st := aptPostgresStack(b)
	runID := aptBenchDay(b, st, 1)
	for i := 0; i < 250; i++ {
		if _, ok, err := st.repo.TakeNextSeat(ctx, runID, aptNow); err != nil || !ok {
			b.Fatalf("fill: %v %v", ok, err)
		}
	}
	page := platform.PageRequest{Limit: 200}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := st.svc.ListSlots(ctx, st.account, runID, appointments.SlotFilter{Available: true}, page)
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Items) != 200 || p.Next == "" {
			b.Fatalf("%d slots, next %q", len(p.Items), p.Next)
		}
	}
}
