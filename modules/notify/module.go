// Package notify wires customer notifications: the providers chosen by
// configuration (adapters/notifier), the service, its watch on every turn
// change, its job kinds, its routes and its metric.
package notify

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/adapters/http/notifyhttp"
	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/adapters/http/tickethttp"
	"github.com/qms-dev/qms/adapters/notifier"
	"github.com/qms-dev/qms/adapters/phone"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/appointments"
	core "github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/ticket"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/ports"
)

// Module provides the notifications service, watches every turn change,
// contributes the job kinds and the metric, and mounts the routes.
var Module = fx.Module("notify",
	fx.Provide(
		newOutcomes,
		newDecider,
		newService,
		// The watchers hand changes to the Decider, which needs neither
		// service it watches: each is built with its watchers.
		fx.Annotate(func(d *core.Decider) turns.Watcher { return watcher{d} },
			fx.ResultTags(ports.InGroup(ports.GroupTurnWatchers))),
		// The appointment reminder: scheduled with the booking, dropped
		// when the appointment moves on (core/notify/reminder.go).
		fx.Annotate(func(d *core.Decider) appointments.Watcher { return appointmentWatcher{d} },
			fx.ResultTags(ports.InGroup(ports.GroupAppointmentWatchers))),
		fx.Annotate(sendKind, fx.ResultTags(ports.InGroup(ports.GroupJobs))),
		fx.Annotate(lineKind, fx.ResultTags(ports.InGroup(ports.GroupJobs))),
		fx.Annotate(clearKind, fx.ResultTags(ports.InGroup(ports.GroupJobs))),
		fx.Annotate(func(o *outcomes) prometheus.Collector { return o.vec }, fx.ResultTags(ports.InGroup(ports.GroupMetrics))),
		fx.Annotate(func(r core.AccountRepository, a appointments.Repository) turns.IntakeGuard {
			return languageGuard{repo: r, booking: a.GetAppointment}
		},
			fx.ResultTags(ports.InGroup(ports.GroupIntakeGuards))),
	),
	fx.Invoke(func(srv *server.Server, s *core.Service, ts *turns.Service, as *appointments.Service, qs *queues.Service, cfg *config.Config, log *slog.Logger) {
		notifyhttp.RegisterAPI(srv.API, s, owners{ts, as, qs})
		notifyhttp.RegisterCallbacks(srv.App, s, notifyhttp.Callbacks{
			TwilioAuthToken:     cfg.Notify.TwilioAuthToken,
			WhatsAppAppSecret:   cfg.Notify.CloudAppSecret,
			WhatsAppVerifyToken: cfg.Notify.CloudVerifyToken,
			PublicURL:           cfg.HTTP.PublicURL,
			Log:                 log.With("module", "notify"),
		})
	}),
)

// outcomes is qms_notifications_total.
type outcomes struct{ vec *prometheus.CounterVec }

func newOutcomes() *outcomes {
	return &outcomes{vec: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "qms_notifications_total",
		Help: "Customer messages by how they ended: sent (the provider accepted), failed (refused), gave_up (retries exhausted), dropped (lost their point), suppressed (the number replied STOP); deferred counts each delay by an account's quiet hours or send rate.",
	}, []string{"outcome"})}
}

type deciderParams struct {
	fx.In
	Repo     core.Repository
	UoW      platform.UnitOfWork
	Jobs     platform.JobScheduler
	Events   platform.EventSink
	Clock    platform.Clock
	Config   *config.Config
	Log      *slog.Logger
	Out      *outcomes
	Accounts core.AccountRepository
	Limiter  ports.RateLimiter
}

func newDecider(p deciderParams) *core.Decider {
	n := p.Config.Notify
	log := p.Log.With("module", "notify")
	own := newAccountSenders(n, p.Config.HTTP.PublicURL, log)
	def := core.Defaults()
	def.Language = cmp.Or(n.Language, def.Language)
	def.NearFrontAhead = n.NearFrontAhead
	def.WhatsAppFallbackSMS = n.FallbackSMS
	if n.Moments != "" {
		def.Moments = nil
		for _, m := range strings.Split(n.Moments, ",") {
			if m = strings.TrimSpace(m); m != "" {
				def.Moments = append(def.Moments, m)
			}
		}
	}
	def.SMS = n.SMS != "none"
	return core.NewDecider(p.Repo, p.UoW, p.Jobs, p.Events, p.Clock, phone.Normalize, own.operator,
		core.Accounts{Repo: p.Accounts, Senders: own.sender, Limiter: limiter{p.Limiter}},
		core.Options{
			Defaults: def, Region: n.Region, Logger: log,
			Observe: func(o string) { p.Out.vec.WithLabelValues(o).Inc() },
		})
}

type serviceParams struct {
	fx.In
	Decider      *core.Decider
	Turns        *turns.Service
	TurnRepo     turns.Repository
	Queues       *queues.Service
	Ticket       *ticket.Service
	Appointments *appointments.Service
	Config       *config.Config
	Server       *server.Server
}

func newService(p serviceParams) *core.Service {
	// Links are absolute: http.public_url, else the address the server
	// listens on (known once it started; a development install).
	srv, public := p.Server, strings.TrimSuffix(p.Config.HTTP.PublicURL, "/")
	base := func() string { return cmp.Or(public, "http://"+srv.Addr) }
	return core.NewService(p.Decider, turnsPort{p.Turns, p.Queues, p.TurnRepo}, links{p.Ticket, base},
		appointmentsPort{p.Appointments})
}

// senders builds each channel's sender from the configuration.
func senders(n config.Notify, publicURL string, log *slog.Logger) map[string]core.Sender {
	out := map[string]core.Sender{}
	outbox := notifier.NewLog(log)
	hc := &http.Client{Timeout: notifier.Timeout}
	var statusHook string
	if publicURL != "" {
		statusHook = strings.TrimSuffix(publicURL, "/") + notifyhttp.TwilioStatusPath
	}
	tw := &notifier.Twilio{BaseURL: n.TwilioURL, AccountSID: n.TwilioAccountSID, AuthToken: n.TwilioAuthToken,
		From: n.TwilioFrom, MessagingServiceSID: n.TwilioMessagingServiceSID, WhatsAppFrom: n.TwilioWhatsAppFrom,
		StatusCallback: statusHook, Client: hc}
	switch n.SMS {
	case "log":
		out[core.ChannelSMS] = outbox
	case "twilio":
		out[core.ChannelSMS] = tw
	}
	switch n.WhatsApp {
	case "log":
		out[core.ChannelWhatsApp] = outbox
	case "twilio":
		out[core.ChannelWhatsApp] = tw
	case "cloud":
		out[core.ChannelWhatsApp] = &notifier.WhatsApp{BaseURL: n.CloudURL, Version: n.CloudVersion,
			PhoneNumberID: n.CloudPhoneNumberID, Token: n.CloudToken, Client: hc}
	}
	return out
}

// watcher hands every turn change to the Decider as a notify.TurnChange.
type watcher struct{ s *core.Decider }

func (w watcher) TurnChanged(ctx context.Context, c turns.Watched) error {
	t := c.After
	var station string
	if t.StationID != nil {
		station = *t.StationID
	}
	// The line moved for those behind when a turn left it or moved in it
	// (a new turn at the back moves nobody).
	moved := len(c.Line.Removed) > 0
	back := c.Op != turns.OpCreate && t.Status == turns.Waiting &&
		(c.Before.Status != turns.Waiting || c.Before.Key().Less(t.Key()))
	var pos, wait *int
	if c.View != nil {
		pos = c.View.Position
		if c.View.WaitEstimate != nil {
			wait = &c.View.WaitEstimate.Minutes
		}
	}
	return w.s.TurnChanged(ctx, core.TurnChange{Position: pos, WaitMinutes: wait,
		AccountID: t.AccountID, TurnID: t.ID, QueueID: t.QueueID, RunID: t.RunID, QueueName: c.Queue.Name,
		DisplayCode: t.DisplayCode, Phone: t.Phone, WhatsApp: t.NotifyWhatsapp,
		Before: string(c.Before.Status), After: string(t.Status), BeforeCalls: c.Before.CallCount, Calls: t.CallCount,
		Station: station, Reason: c.Reason, Forwarded: c.Forwarded, From: c.From, LineMoved: moved, MovedBack: back,
	})
}

// turnsPort is the turns module as the service needs it.
type turnsPort struct {
	ts   *turns.Service
	qs   *queues.Service
	repo turns.Repository
}

func (p turnsPort) Now(ctx context.Context, accountID, turnID string) (core.TurnNow, error) {
	t, err := p.ts.Turn(ctx, accountID, turnID)
	if err != nil {
		return core.TurnNow{}, err
	}
	now := core.TurnNow{Status: string(t.Status), CallCount: t.CallCount, Finished: t.Status.Finished()}
	if t.StationID != nil && t.Status.AtStation() {
		if v, err := p.ts.View(ctx, t); err == nil && v.Station != nil {
			now.Station = v.Station.Label
		}
	}
	return now, nil
}

func (p turnsPort) Waiting(ctx context.Context, accountID, queueID, runID string, limit int, withWait bool) ([]core.Waiting, error) {
	// Positions come from the stored line (one read of its keys in line
	// order) rather than from full views: a look needs nothing more.
	q, err := p.qs.GetQueue(ctx, accountID, queueID)
	if err != nil {
		return nil, err
	}
	ts, err := p.repo.List(ctx, runID, []turns.Status{turns.Waiting}, platform.PageRequest{Limit: limit})
	if err != nil {
		return nil, err
	}
	_, keys, err := p.repo.WaitingLine(ctx, runID)
	if err != nil {
		return nil, err
	}
	pos := make(map[turns.LineKey]int, len(keys))
	for i, k := range keys {
		pos[k] = i + 1
	}
	var out []core.Waiting
	for _, t := range ts {
		n, ok := pos[t.Key()]
		if t.Phone == nil || !ok {
			continue
		}
		w := core.Waiting{Position: n, TurnChange: core.TurnChange{AccountID: accountID, TurnID: t.ID,
			QueueID: t.QueueID, RunID: t.RunID, QueueName: q.Name, DisplayCode: t.DisplayCode, Phone: t.Phone, WhatsApp: t.NotifyWhatsapp}}
		if withWait {
			if v, err := p.ts.View(ctx, t); err == nil && v.WaitEstimate != nil {
				w.WaitMinutes = &v.WaitEstimate.Minutes
			}
		}
		out = append(out, w)
	}
	return out, nil
}

func (p turnsPort) Leave(ctx context.Context, accountID, turnID string) error {
	_, err := p.ts.CancelFor(ctx, accountID, turnID, ticket.CancelReason)
	return err
}

func (p turnsPort) Arrive(ctx context.Context, accountID, turnID string) error {
	_, err := p.ts.Arrive(ctx, accountID, turnID)
	return err
}

// links makes ticket links for the joined and forwarded messages.
type links struct {
	ts   *ticket.Service
	base func() string
}

func (l links) TicketURL(ctx context.Context, accountID, turnID, language string) (string, error) {
	c, err := l.ts.Create(ctx, accountID, turnID, ticket.CreateInput{Language: &language})
	if err != nil {
		return "", err
	}
	return l.base() + tickethttp.Prefix + "/" + c.Value, nil
}

// owners checks a route's turn, appointment or queue belongs to the
// caller's account.
type owners struct {
	ts *turns.Service
	as *appointments.Service
	qs *queues.Service
}

func (o owners) Turn(c *fiber.Ctx, id string) error {
	_, err := o.ts.Turn(c.UserContext(), httpx.AccountOf(c), id)
	return err
}

func (o owners) Appointment(c *fiber.Ctx, id string) error {
	_, err := o.as.Get(c.UserContext(), httpx.AccountOf(c), id)
	return err
}

func (o owners) Queue(c *fiber.Ctx, id string) error {
	_, err := o.qs.GetQueue(c.UserContext(), httpx.AccountOf(c), id)
	return err
}

// Job settings. A send job's attempts are the provider retries: 429 and
// 5xx back off 1 s, 2 s, 4 s ... up to a minute, notify.attempts tries (8:
// about 2 minutes) before the message is given up: a "your turn" hours
// late is worse than none.
const sendTimeout = 30 * time.Second

var sendBackoff = ports.Backoff(time.Minute)

func sendKind(s *core.Service, cfg *config.Config) ports.JobKind {
	attempts := cfg.Notify.Attempts
	return ports.JobKind{
		Name: core.JobSend, Queue: core.JobQueue, MaxAttempts: attempts, Timeout: sendTimeout, Backoff: sendBackoff,
		Handler: ports.Typed("notify", func(ctx context.Context, a core.SendArgs, j ports.JobContext) error {
			return s.Attempt(ctx, a, j.Attempt, cmp.Or(j.MaxAttempts, attempts))
		}, func(a core.SendArgs) error {
			if a.MessageID == "" {
				return errors.New("no messageId")
			}
			return nil
		}),
	}
}

func lineKind(s *core.Service) ports.JobKind {
	return ports.JobKind{
		Name: core.JobLine, Queue: core.JobQueue, MaxAttempts: 5, Timeout: sendTimeout, Backoff: sendBackoff,
		Handler: ports.Typed("notify", func(ctx context.Context, a core.LineArgs, _ ports.JobContext) error {
			return s.LookAtLine(ctx, a)
		}, func(a core.LineArgs) error {
			if a.RunID == "" || a.QueueID == "" {
				return errors.New("no runId or queueId")
			}
			return nil
		}),
	}
}

// clearJob is the periodic job that forgets old numbers.
const clearJob = "notify.clear_phones"

func clearKind(s *core.Service, cfg *config.Config) ports.JobKind {
	keep := cfg.Notify.KeepPhones
	return ports.JobKind{
		Name: clearJob, Every: min(keep, time.Hour), MaxAttempts: 3,
		Handler: func(ctx context.Context, _ ports.JobContext) error {
			for {
				n, err := s.ClearPhones(ctx, keep, 1000)
				if err != nil || n < 1000 {
					return err
				}
			}
		},
	}
}
