// Package adapterset builds the adapters of one backend as a typed set:
// one field per port, filled by one constructor per backend (Memory,
// Postgres). bootstrap provides every port field to the application, and
// the contract and core tests take a ready set instead of assembling
// adapters by hand.
//
// Adding a port is one field here and one value in each constructor.
// Both constructors build Set with a positional literal, so a field added
// without a value in either is a compile error ("too few values in struct
// literal"); Missing and TestMemorySetFillsEveryPort (and the contract
// suite's check of the PostgreSQL set) remain as the run-time backstop
// against a value that is present but nil.
package adapterset

import (
	"fmt"
	"log/slog"
	"reflect"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/adapters/riverjobs"
	"github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/analytics"
	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/counter"
	"github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/join"
	"github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/core/ticket"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/core/webhooks"
	"github.com/qms-dev/qms/core/workflow"
	"github.com/qms-dev/qms/ports"
)

// Set is one backend's adapters, one field per port. Every field of an
// interface type is a port: bootstrap provides each to the application
// under its type, so two fields may not share one. Memory and Postgres
// fill Set positionally, so the order of the fields is the order of the
// values there.
type Set struct {
	UoW             platform.UnitOfWork
	Pinger          ports.Pinger
	Faults          ports.FaultClassifier
	Accounts        accounts.Repository
	Entities        entities.Repository
	Queues          queues.Repository
	Turns           turns.Repository
	Appointments    appointments.Repository
	AccessCodes     accesscodes.Repository
	AccessCodeTurns accesscodes.TurnCodes
	Workflow        workflow.Repository
	Forwards        workflow.ForwardRepository
	Analytics       analytics.Repository
	Webhooks        webhooks.Repository
	Events          events.Store
	StreamLog       stream.Log
	StreamNotifier  stream.Notifier
	Calls           display.Calls
	DisplayTokens   display.Repository
	TicketLinks     ticket.Repository
	JoinLinks       join.Repository
	Notify          notify.Repository
	CounterLinks    counter.Repository
	RateLimiter     ports.RateLimiter
	Pruner          ports.Pruner
	JobRunner       ports.JobRunner
	Jobs            platform.JobScheduler

	// EventCopies are adapters that keep their own copy of the event log
	// and must be subscribed to the event bus (the memory stream log). Not
	// a port: bootstrap subscribes them.
	EventCopies []events.Subscriber
}

// Options are what the backends need beyond their storage.
type Options struct {
	// Clock is the memory job runner's clock (tests move it).
	Clock platform.Clock
	// Logger receives the job runner's reports.
	Logger *slog.Logger
	// SecretKey seals webhook signing secrets in PostgreSQL (required
	// there); OldSecretKeys open those sealed under earlier keys.
	SecretKey     string
	OldSecretKeys []string
	// Jobs tunes the River runner of the PostgreSQL set (zero values are
	// riverjobs' defaults); the memory runner ignores it.
	Jobs riverjobs.Options
}

func (o Options) logger(component string) *slog.Logger {
	if o.Logger == nil {
		return slog.Default().With("component", component)
	}
	return o.Logger.With("component", component)
}

// Memory is the in-process set over store s.
func Memory(s *memory.Store, o Options) (Set, error) {
	if o.Clock == nil {
		o.Clock = platform.SystemClock{}
	}
	tr, ar, wf := memory.NewTurns(s), memory.NewAppointments(s), memory.NewWorkflow(s)
	an, err := memory.NewAnalytics(s, tr, ar, wf)
	if err != nil {
		return Set{}, fmt.Errorf("adapterset: memory analytics: %w", err)
	}
	log := memory.NewStreamLog(s)
	runner := memory.NewJobRunner(s, o.Clock, memory.JobRunnerOptions{Logger: o.logger("jobs")})
	qs, wh, ev, rl := memory.NewQueues(s), memory.NewWebhooks(s), memory.NewEvents(s), memory.NewRateLimiter()
	tl := memory.NewTicketLinks(s)
	// A positional literal, in the order of Set's fields: a port added to
	// Set and not built here is a compile error ("too few values"), not a
	// nil found at run time.
	return Set{
		s, s, s, // UoW, Pinger, Faults
		memory.NewAccounts(s), memory.NewEntities(s), qs, tr, ar,
		memory.NewAccessCodes(s), memory.NewAccessCodeTurns(s, tr),
		wf, wf, an, wh, ev, // Workflow, Forwards, Analytics, Webhooks, Events
		log, log, log, // StreamLog, StreamNotifier, Calls
		memory.NewDisplayTokens(s), tl, memory.NewJoinLinks(s), memory.NewNotify(s, tr), memory.NewCounterLinks(s), rl,
		memory.NewPruner(s, ev, wh, tr, qs, wf, rl, tl),
		runner, runner, // JobRunner, Jobs
		[]events.Subscriber{log}, // EventCopies
	}, nil
}

// Postgres is the PostgreSQL set over db, with River running the jobs.
func Postgres(db *postgres.DB, o Options) (Set, error) {
	wh, err := postgres.NewWebhooks(db, o.SecretKey, o.OldSecretKeys...)
	if err != nil {
		return Set{}, err
	}
	log := postgres.NewStreamLog(db)
	wf := postgres.NewWorkflow(db)
	jobs := o.Jobs
	jobs.Logger = o.logger("river")
	runner := riverjobs.New(db, jobs)
	// Positional, like Memory: a port added to Set is a compile error here.
	return Set{
		db, db, db, // UoW, Pinger, Faults
		postgres.NewAccounts(db), postgres.NewEntities(db), postgres.NewQueues(db),
		postgres.NewTurns(db), postgres.NewAppointments(db),
		postgres.NewAccessCodes(db), postgres.NewAccessCodeTurns(db),
		wf, wf, postgres.NewAnalytics(db), wh, postgres.NewEvents(db),
		log, postgres.NewStreamNotifier(db), log, // StreamLog, StreamNotifier, Calls
		postgres.NewDisplayTokens(db), postgres.NewTicketLinks(db), postgres.NewJoinLinks(db), postgres.NewNotify(db), postgres.NewCounterLinks(db),
		postgres.NewRateLimiter(db),
		postgres.NewPruner(db),
		runner, runner, // JobRunner, Jobs
		nil, // EventCopies: PostgreSQL reads the stream from its own tables
	}, nil
}

// Missing names the port fields s leaves empty: a constructor that forgot
// a port added to Set.
func (s Set) Missing() []string {
	var out []string
	v := reflect.ValueOf(s)
	for i := 0; i < v.NumField(); i++ {
		if f := v.Type().Field(i); f.Type.Kind() == reflect.Interface && v.Field(i).IsNil() {
			out = append(out, f.Name)
		}
	}
	return out
}
