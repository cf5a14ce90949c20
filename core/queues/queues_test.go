package queues_test

import (
	"context"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/test/testkit"
)

type fixture struct {
	svc      *queues.Service
	entities *entities.Service
	events   *memory.Events
	entityID string
}

const account = "acc_1"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := platformtest.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	set, store := testkit.MemorySet(t, clock)
	ev := set.Events.(*memory.Events)
	ents := entities.NewService(set.Entities, store, clock)
	svc := queues.NewService(set.Queues, ents, store, events.NewBus(ev), clock)
	e, err := ents.Create(context.Background(), account, entities.CreateInput{Name: platform.Ptr("Main branch")})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{svc: svc, entities: ents, events: ev, entityID: e.ID}
}

func (f *fixture) create(t *testing.T, in queues.CreateInput) queues.QueueView {
	t.Helper()
	if in.EntityID == nil {
		in.EntityID = &f.entityID
	}
	if in.Name == nil {
		in.Name = platform.Ptr("Pharmacy")
	}
	if in.Type == nil {
		in.Type = platform.Ptr(queues.TypeTurn)
	}
	q, err := f.svc.Create(context.Background(), account, in)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return q
}

func TestCreateAppliesSpecDefaults(t *testing.T) {
	f := newFixture(t)
	q := f.create(t, queues.CreateInput{Tolerance: &queues.Tolerance{GraceMinutes: platform.Ptr(5)}})
	checks := map[string]bool{
		"callOnNext true":          *q.DispatchFlow.CallOnNext,
		"trackService true":        *q.DispatchFlow.TrackService,
		"onToleranceExpired":       *q.DispatchFlow.OnToleranceExpired == queues.OnExpiredNoShow,
		"allowReopen false":        !*q.DispatchFlow.AllowReopen,
		"waitlist false":           !*q.Capacity.WaitlistEnabled,
		"autoPromote true":         *q.Capacity.AutoPromote,
		"whatsappCapture true":     q.WhatsappCapture,
		"dispatchers 1":            q.Dispatchers == 1,
		"allowReentry true":        *q.Tolerance.AllowReentry,
		"maxReentries 1":           *q.Tolerance.MaxReentries == 1,
		"offers maxPoints 100":     *q.Offers.MaxPoints == 100,
		"schedule always":          *q.Schedule.Mode == queues.ScheduleAlways,
		"questions empty not nil":  q.PreAttention.Questions != nil,
		"one open run":             len(q.Runs) == 1 && q.Runs[0].Status == queues.RunOpen && q.Runs[0].IntakeOpen,
		"stations empty, not nil":  q.Stations != nil && len(q.Stations) == 0,
		"transferEnabled false":    !q.TransferEnabled,
		"accessCodeRequired false": !q.AccessCodeRequired,
	}
	for name, ok := range checks {
		if !ok {
			t.Errorf("default %s does not hold", name)
		}
	}
}

func TestCreateReportsEveryFailingFieldByPath(t *testing.T) {
	f := newFixture(t)
	bad := queues.CreateInput{
		EntityID:    platform.Ptr(f.entityID),
		Name:        platform.Ptr("x"),
		Type:        platform.Ptr("QUEUE"),
		TurnPrefix:  platform.Ptr("ABCDE"),
		TurnPadding: platform.Ptr(9),
		Dispatchers: platform.Ptr(101),
		Schedule: &queues.Schedule{Mode: platform.Ptr(queues.ScheduleWeekly), Weekly: []queues.WeeklyHours{
			{Day: platform.Ptr(7), Open: platform.Ptr("24:00"), Close: platform.Ptr("10:00")},
			{Day: platform.Ptr(1), Open: platform.Ptr("09:00"), Close: platform.Ptr("09:00")},
			{Day: platform.Ptr(1), Open: platform.Ptr("09:00"), Close: platform.Ptr("24:01")},
			{Day: platform.Ptr(1), Open: platform.Ptr("22:00"), Close: platform.Ptr("02:00")}, // past midnight: fine
			{Day: platform.Ptr(2), Open: platform.Ptr("00:00"), Close: platform.Ptr("24:00")}, // the whole day: fine
		}},
		Tolerance: &queues.Tolerance{},
		PreAttention: &queues.PreAttention{Questions: []queues.Question{
			{ID: platform.Ptr("q1"), Label: platform.Ptr("Why?"), Options: []queues.Option{{Label: platform.Ptr("")}}},
		}},
		Stations: []queues.StationInput{{Label: platform.Ptr("")}},
	}
	_, err := f.svc.Create(context.Background(), account, bad)
	want := map[string]string{
		"name":                     "min_length",
		"type":                     "oneof",
		"turnPrefix":               "max_length",
		"turnPadding":              "max",
		"dispatchers":              "max",
		"schedule.weekly[0].day":   "max",
		"schedule.weekly[0].open":  "time_hhmm",
		"schedule.weekly[1].close": "not_open",
		"schedule.weekly[2].close": "time_hhmm",
		"tolerance.graceMinutes":   "required",
		"preAttention.questions[0].options[0].label": "min_length",
		"stations[0].label":                          "min_length",
	}
	got := platform.FieldRules(err)
	for path, rule := range want {
		if got[path] != rule {
			t.Errorf("%s: want rule %q, got %q (all: %v)", path, rule, got[path], got)
		}
	}
	for _, path := range []string{"schedule.weekly[3].close", "schedule.weekly[4].close"} {
		if rule, refused := got[path]; refused {
			t.Errorf("%s refused (%s): hours past midnight and 24:00 are allowed", path, rule)
		}
	}
}

func TestCreateRefusesAnotherAccountsEntity(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.Create(context.Background(), "acc_other", queues.CreateInput{
		EntityID: &f.entityID, Name: platform.Ptr("Pharmacy"), Type: platform.Ptr(queues.TypeTurn)})
	if !platform.IsCode(err, queues.CodeEntityNotFound) && !platform.IsCode(err, platform.CodeForbidden) {
		t.Fatalf("want refusal, got %v", err)
	}
}

func TestRunLifecycleAndEvents(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	q := f.create(t, queues.CreateInput{})
	run := q.Runs[0]

	if _, err := f.svc.OpenRun(ctx, account, run.ID); err != nil {
		t.Fatal(err) // already open: idempotent
	}
	closed, err := f.svc.CloseRun(ctx, account, run.ID)
	if err != nil || closed.Status != queues.RunClosed || closed.IntakeOpen {
		t.Fatalf("close: %+v %v", closed, err)
	}
	if _, err := f.svc.CloseRun(ctx, account, run.ID); err != nil {
		t.Fatal(err) // already closed: idempotent
	}
	if _, err := f.svc.SetIntake(ctx, account, run.ID, true); !platform.IsCode(err, queues.CodeRunClosed) {
		t.Fatalf("open-intake on closed run: want RUN_CLOSED, got %v", err)
	}
	reopened, err := f.svc.OpenRun(ctx, account, run.ID)
	if err != nil || !reopened.Open() || !reopened.IntakeOpen {
		t.Fatalf("reopen: %+v %v", reopened, err)
	}
	noIntake, err := f.svc.SetIntake(ctx, account, run.ID, false)
	if err != nil || noIntake.IntakeOpen || !noIntake.Open() {
		t.Fatalf("close-intake: %+v %v", noIntake, err)
	}
	if _, err := f.svc.CloseRun(ctx, "acc_other", run.ID); !platform.IsCode(err, platform.CodeForbidden) {
		t.Fatalf("other account: want FORBIDDEN, got %v", err)
	}

	evs, _ := f.events.List(ctx, account, "", 0)
	var names []string
	for _, e := range evs {
		names = append(names, e.Name)
	}
	want := []string{platform.EventName[queues.QueueOpened](), platform.EventName[queues.QueueClosed](), platform.EventName[queues.QueueOpened]()}
	if len(names) != len(want) {
		t.Fatalf("events: want %v, got %v", want, names)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("events: want %v, got %v", want, names)
		}
	}
}

func TestStationsAreCappedAtThirty(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	q := f.create(t, queues.CreateInput{})
	for i := 0; i < queues.MaxStations; i++ {
		if _, err := f.svc.CreateStation(ctx, account, q.ID, queues.StationInput{Label: platform.Ptr("Desk")}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := f.svc.CreateStation(ctx, account, q.ID, queues.StationInput{Label: platform.Ptr("Desk")})
	if !platform.IsCode(err, queues.CodeTooManyStations) {
		t.Fatalf("31st station: want TOO_MANY_STATIONS, got %v", err)
	}
}

func TestSettingsUpdates(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	q := f.create(t, queues.CreateInput{})
	v, err := f.svc.SetDispatchFlow(ctx, account, q.ID, queues.DispatchFlowInput{AllowReopen: platform.Ptr(true)})
	if err != nil || !*v.DispatchFlow.AllowReopen || !*v.DispatchFlow.CallOnNext {
		t.Fatalf("dispatch flow keeps the other fields: %+v %v", v.DispatchFlow, err)
	}
	v, err = f.svc.SetCancellationPolicy(ctx, account, q.ID, queues.CancellationPolicyInput{
		MinNoticeMinutes: platform.Patch[int]{Set: true, Value: 30}})
	if err != nil || v.Cancellation == nil || *v.Cancellation.MinNoticeMinutes != 30 {
		t.Fatalf("set policy: %+v %v", v.Cancellation, err)
	}
	v, err = f.svc.SetCancellationPolicy(ctx, account, q.ID, queues.CancellationPolicyInput{
		MinNoticeMinutes: platform.Patch[int]{Set: true, Null: true}})
	if err != nil || v.Cancellation != nil {
		t.Fatalf("null removes the policy: %+v %v", v.Cancellation, err)
	}
	if _, err := f.svc.SetSLA(ctx, account, q.ID, queues.SLAInput{MaxWaitMinutes: platform.Ptr(-1)}); !platform.IsCode(err, platform.CodeValidation) {
		t.Fatalf("negative SLA: want VALIDATION_ERROR, got %v", err)
	}
	if _, err := f.svc.SetWhatsappCapture(ctx, account, q.ID, queues.WhatsappCaptureInput{}); !platform.IsCode(err, platform.CodeValidation) {
		t.Fatalf("missing whatsappCapture: want VALIDATION_ERROR, got %v", err)
	}
}

func TestDeletingTheEntityCascades(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	q := f.create(t, queues.CreateInput{Stations: []queues.StationInput{{Label: platform.Ptr("Desk 1")}}})
	if err := f.entities.Delete(ctx, account, f.entityID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Get(ctx, account, q.ID); !platform.IsCode(err, platform.CodeNotFound) {
		t.Fatalf("queue after entity delete: want NOT_FOUND, got %v", err)
	}
	if _, err := f.svc.GetRun(ctx, account, q.Runs[0].ID); !platform.IsCode(err, platform.CodeNotFound) {
		t.Fatalf("run after entity delete: want NOT_FOUND, got %v", err)
	}
	if _, err := f.svc.GetStation(ctx, account, q.Stations[0].ID); !platform.IsCode(err, platform.CodeNotFound) {
		t.Fatalf("station after entity delete: want NOT_FOUND, got %v", err)
	}
}
