package memory

import (
	"github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/analytics"
	"github.com/qms-dev/qms/core/appointments"
	counters "github.com/qms-dev/qms/core/counter"
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

// Every port this package implements, checked by the compiler: a method that
// drifts from its port fails the build here, not when the app is wired.
// This is the package's one list (none beside the types): what the memory
// backend is, read in one place, in the order of adapterset.Set.
var (
	_ platform.UnitOfWork        = (*Store)(nil)
	_ ports.Pinger               = (*Store)(nil)
	_ ports.FaultClassifier      = (*Store)(nil)
	_ accounts.Repository        = (*Accounts)(nil)
	_ entities.Repository        = (*Entities)(nil)
	_ queues.Repository          = (*Queues)(nil)
	_ turns.Repository           = (*Turns)(nil)
	_ appointments.Repository    = (*Appointments)(nil)
	_ accesscodes.Repository     = (*AccessCodes)(nil)
	_ accesscodes.TurnCodes      = (*AccessCodeTurns)(nil)
	_ workflow.Repository        = (*Workflow)(nil)
	_ workflow.ForwardRepository = (*Workflow)(nil)
	_ analytics.Repository       = (*Analytics)(nil)
	_ webhooks.Repository        = (*Webhooks)(nil)
	_ events.Store               = (*Events)(nil)
	_ stream.Log                 = (*StreamLog)(nil)
	_ stream.Notifier            = (*StreamLog)(nil)
	_ display.Calls              = (*StreamLog)(nil)
	_ display.Repository         = (*DisplayTokens)(nil)
	_ ticket.Repository          = (*TicketLinks)(nil)
	_ join.Repository            = (*JoinLinks)(nil)
	_ notify.Repository          = (*Notify)(nil)
	_ counters.Repository        = (*CounterLinks)(nil)
	_ ports.RateLimiter          = (*RateLimiter)(nil)
	_ ports.JobRunner            = (*JobRunner)(nil)
	_ platform.JobScheduler      = (*JobRunner)(nil)
)
