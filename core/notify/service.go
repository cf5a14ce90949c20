package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// PrefixMessage leads message ids.
const PrefixMessage = "ntf"

// TurnChange is a turn change as the module sees it: the turns module's
// hooks translate theirs into it (modules/notify).
type TurnChange struct {
	AccountID   string
	TurnID      string
	QueueID     string
	RunID       string
	QueueName   string
	DisplayCode string
	Phone       *string
	WhatsApp    bool
	// Before and After are the statuses ("" before for a new turn).
	Before, After string
	// BeforeCalls and Calls are the turn's CallCount before and after.
	BeforeCalls, Calls int
	Station            string
	// Reason is a cancellation's reason ("staff", "customer", ...).
	Reason string
	// Forwarded: a new turn that another queue sent here.
	Forwarded bool
	// From is the turn a new one continues (forward, transfer): its
	// customer's language goes on with them.
	From string
	// LineMoved: the change moved the run's waiting line (someone left
	// it or moved in it), so turns may now be near the front.
	LineMoved bool
	// Position and WaitMinutes are a new turn's place and estimate when
	// the intake knew them.
	Position    *int
	WaitMinutes *int
	// MovedBack: the turn went back in the line (a re-entry, a release,
	// a lower priority): its near-the-front message is re-armed.
	MovedBack bool
}

// Options tune the service.
type Options struct {
	// Defaults are the settings of queues that set none.
	Defaults Settings
	// Region is the default region of numbers typed without a country
	// code (ISO 3166 alpha-2).
	Region string
	Logger *slog.Logger
	// Observe, when set, counts how messages end: "sent", "failed",
	// "dropped", "suppressed", "gave_up".
	Observe func(outcome string)
}

// Decider is the half of the notifications use cases that hears changes
// and decides the messages they call for (TurnChanged, AppointmentChanged,
// the settings, the records of what was sent): it needs no other module.
// Service is the whole, the Decider and the ports it acts through.
//
// The split is the wiring's, not the domain's: the turns service is built
// with its watchers, and the watcher (modules/notify) hands changes to a
// Decider; the Service acts on turns (a LEAVE reply cancels one) and so
// needs the turns service built first. With the two apart each is whole
// once built, without a setter and without a cycle
// (docs/architecture.md, "Wiring without setters").
type Decider struct {
	repo      Repository
	uow       platform.UnitOfWork
	jobs      platform.JobScheduler
	events    platform.EventSink
	clock     platform.Clock
	normalize Normalizer
	senders   map[string]Sender // by channel
	opts      Options
	log       *slog.Logger
	acc       accountParts // account.go: per-account settings
}

// Service is the notifications use cases: the Decider's, and those that
// read or act on other modules' records as a message is sent or a reply
// comes in.
type Service struct {
	*Decider
	turns Turns
	links Links
	// appointments reads an appointment when its reminder is due.
	appointments Appointments
}

// NewDecider builds the deciding half. senders maps a channel to the
// sender of its messages; a channel without one sends nothing. accounts
// are the accounts' own settings; their zero value sends every account's
// messages through senders, unbounded.
func NewDecider(repo Repository, uow platform.UnitOfWork, jobs platform.JobScheduler, events platform.EventSink,
	clock platform.Clock, normalize Normalizer, senders map[string]Sender, accounts Accounts, opts Options) *Decider {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Defaults.Moments == nil {
		opts.Defaults = Defaults()
	}
	d := &Decider{repo: repo, uow: uow, jobs: jobs, events: events, clock: clock,
		normalize: normalize, senders: senders, opts: opts, log: opts.Logger}
	if accounts.Repo != nil {
		d.acc = accountParts{repo: accounts.Repo, factory: accounts.Senders, limiter: accounts.Limiter,
			cache: &settingsCache{m: map[string]cachedSettings{}}}
	}
	return d
}

// NewService builds the service on d: turns and appointments are read
// when a message is sent and acted on by replies, links make a joined
// message's ticket link.
func NewService(d *Decider, turns Turns, links Links, appointments Appointments) *Service {
	return &Service{Decider: d, turns: turns, links: links, appointments: appointments}
}

// Settings are the settings in effect for a queue.
func (s *Decider) Settings(ctx context.Context, queueID string) (Settings, error) {
	q, ok, err := s.repo.QueueSettings(ctx, queueID)
	if err != nil || !ok {
		return s.opts.Defaults, err
	}
	return s.opts.Defaults.Apply(q), nil
}

// PutSettings stores a queue's settings (the caller checked the queue is
// the account's) and returns those in effect.
func (s *Decider) PutSettings(ctx context.Context, accountID, queueID string, q QueueSettings) (Settings, error) {
	if err := q.Validate(); err != nil {
		return Settings{}, err
	}
	err := s.uow.Do(ctx, func(ctx context.Context) error { return s.repo.PutQueueSettings(ctx, accountID, queueID, q) })
	if err != nil {
		return Settings{}, err
	}
	return s.opts.Defaults.Apply(q), nil
}

// moments are the moments a change calls for, each with its occurrence.
func moments(c TurnChange) []struct {
	moment string
	occ    int
} {
	type mo = struct {
		moment string
		occ    int
	}
	var out []mo
	switch {
	case c.Before == "" && c.Forwarded:
		out = append(out, mo{MomentForwarded, 1})
	case c.Before == "":
		out = append(out, mo{MomentJoined, 1})
	case c.Calls > c.BeforeCalls && c.After == "CALLED":
		if c.Calls == 1 {
			out = append(out, mo{MomentCalled, 1})
		} else {
			out = append(out, mo{MomentCalledAgain, c.Calls})
		}
	case c.After == "NO_SHOW" && c.Before != "NO_SHOW":
		out = append(out, mo{MomentNoShow, max(c.Calls, 1)})
	case c.After == "CANCELLED" && c.Before != "CANCELLED" && c.Reason != "customer":
		// A customer who left (the ticket page, a LEAVE reply) knows.
		out = append(out, mo{MomentCancelled, 1})
	}
	return out
}

// TurnChanged decides the messages a turn change calls for, inside the
// change's unit of work: their rows and their jobs commit with it. A turn
// without a phone costs nothing beyond the look at the line its change
// may call for.
func (s *Decider) TurnChanged(ctx context.Context, c TurnChange) error {
	hasPhone := c.Phone != nil && *c.Phone != ""
	// A new turn whose place the intake did not give (a forward, a
	// check-in) is looked at with the line.
	joined := c.Before == "" && c.After == "WAITING" && hasPhone && c.Position == nil
	if c.LineMoved || joined {
		// Turns behind may now be near the front, or the new turn joined
		// near it: a look at the line after the change commits. One per
		// change, not one per run while one is pending: a look already
		// running may have read the line before this change.
		a := LineArgs{AccountID: c.AccountID, RunID: c.RunID, QueueID: c.QueueID}
		if joined {
			a.Joined = c.TurnID
		}
		if err := s.jobs.Schedule(ctx, platform.Job{Kind: JobLine, Args: a}); err != nil {
			return fmt.Errorf("notify: schedule line look: %w", err)
		}
	}
	if !hasPhone {
		return nil
	}
	if c.Before == "" && c.From != "" {
		if err := s.carryLanguage(ctx, c.AccountID, c.From, c.TurnID); err != nil {
			return err
		}
	}
	if c.MovedBack {
		// Re-armed: told again when it comes near the front again.
		st, err := s.repo.Near(ctx, c.TurnID)
		if err != nil {
			return err
		}
		if st.Sent {
			st.Sent = false
			if err := s.repo.PutNear(ctx, st); err != nil {
				return err
			}
		}
	}
	ms := moments(c)
	if len(ms) == 0 {
		return nil
	}
	set, err := s.Settings(ctx, c.QueueID)
	if err != nil {
		return err
	}
	if c.Before == "" && c.Position != nil && set.On(MomentJoined) && set.near(*c.Position-1, c.WaitMinutes) {
		// Joined already near the front: the joined message gives the
		// place; near_front waits until the turn moves back and comes
		// near again.
		if err := s.repo.PutNear(ctx, NearState{TurnID: c.TurnID, AccountID: c.AccountID, Sent: true}); err != nil {
			return err
		}
	}
	for _, m := range ms {
		if !set.On(m.moment) {
			continue
		}
		params := map[string]string{"queue": c.QueueName, "code": c.DisplayCode, "station": c.Station}
		if _, err := s.decide(ctx, c, set, m.moment, m.occ, params); err != nil {
			return err
		}
	}
	return nil
}

// decide stores a message and schedules its job, unless its key is taken
// or the customer gets nothing on the queue's channels.
func (s *Decider) decide(ctx context.Context, c TurnChange, set Settings, moment string, occ int, params map[string]string) (bool, error) {
	channel := ChannelSMS
	if c.WhatsApp {
		channel = ChannelWhatsApp
	} else if !set.SMS {
		return false, nil
	}
	to, err := s.normalize(*c.Phone, s.opts.Region)
	if err != nil {
		// Intake keeps v1's rule and takes any phone; a number no
		// provider could reach gets nothing, said once in the log.
		s.log.Info("notify: unusable number, no message", "turn", c.TurnID, "moment", moment, "phone", Phone(*c.Phone))
		return false, nil
	}
	lang, err := s.languageOf(ctx, c.TurnID, set.Language)
	if err != nil {
		return false, err
	}
	acct, err := s.accountOf(ctx, c.AccountID)
	if err != nil {
		return false, err
	}
	now := s.clock.Now()
	m := Message{ID: platform.NewID(PrefixMessage), AccountID: c.AccountID, TurnID: c.TurnID, QueueID: c.QueueID, RunID: c.RunID,
		Moment: moment, Occurrence: occ, Channel: channel, To: to, Language: lang, Params: params,
		Status: StatusQueued, CreatedAt: now, UpdatedAt: now}
	if sd, ok := s.senderOf(acct, channel); ok {
		m.Provider = sd.Provider()
	}
	return s.insert(ctx, m)
}

func (s *Decider) insert(ctx context.Context, m Message) (bool, error) {
	ok, err := s.repo.Insert(ctx, m)
	if err != nil || !ok {
		return false, err
	}
	if err := s.jobs.Schedule(ctx, platform.Job{Kind: JobSend, Args: SendArgs{MessageID: m.ID}, UniqueKey: m.ID}); err != nil {
		return false, fmt.Errorf("notify: schedule send: %w", err)
	}
	return true, nil
}

// LookAtLine decides the near-the-front messages of a run's waiting line
// (the JobLine job): a turn at or under the queue's threshold gets one,
// once per time it comes near (TurnChanged re-arms a turn that moved
// back). A turn that joined already near the front (a.Joined) is not told
// twice: its joined message gave its place.
func (s *Service) LookAtLine(ctx context.Context, a LineArgs) error {
	set, err := s.Settings(ctx, a.QueueID)
	if err != nil || !set.On(MomentNearFront) || (set.NearFrontAhead <= 0 && set.NearFrontMinutes <= 0) {
		return err
	}
	line, err := s.turns.Waiting(ctx, a.AccountID, a.QueueID, a.RunID, MaxLook, set.NearFrontMinutes > 0)
	if err != nil {
		return err
	}
	return s.uow.Do(ctx, func(ctx context.Context) error {
		for _, w := range line {
			ahead := w.Position - 1
			if !set.near(ahead, w.WaitMinutes) {
				continue
			}
			st, err := s.repo.Near(ctx, w.TurnID)
			if err != nil || st.Sent {
				return err
			}
			st = NearState{TurnID: w.TurnID, AccountID: w.AccountID, Occurrence: st.Occurrence, Sent: true}
			if w.TurnID != a.Joined || st.Occurrence > 0 {
				st.Occurrence++
				params := map[string]string{"queue": w.QueueName, "code": w.DisplayCode, "ahead": strconv.Itoa(ahead)}
				if w.WaitMinutes != nil {
					params["minutes"] = strconv.Itoa(*w.WaitMinutes)
				}
				if _, err := s.decide(ctx, w.TurnChange, set, MomentNearFront, st.Occurrence, params); err != nil {
					return err
				}
			}
			if err := s.repo.PutNear(ctx, st); err != nil {
				return err
			}
		}
		return nil
	})
}

// MaxLook bounds the waiting turns one look at the line reads (the run's
// first, by arrival): near the front is about the first few.
const MaxLook = 200

// lostPoint reports why a message should no longer be sent to a turn in
// state t, "" when it still should.
func lostPoint(m Message, t TurnNow) string {
	switch m.Moment {
	case MomentJoined, MomentForwarded:
		if t.Finished || t.Status == "CALLED" || t.Status == "IN_SERVICE" {
			return "the turn was already called or finished"
		}
	case MomentNearFront:
		if t.Status != "WAITING" {
			return "the turn is no longer waiting"
		}
	case MomentCalled, MomentCalledAgain:
		if t.Status != "CALLED" || t.CallCount != m.Occurrence && !(m.Moment == MomentCalled && t.CallCount == 1) {
			return "the turn is no longer at that call"
		}
	case MomentNoShow:
		if t.Status != "NO_SHOW" {
			return "the turn is no longer a no-show"
		}
	case MomentCancelled:
		if t.Status != "CANCELLED" {
			return "the turn is no longer cancelled"
		}
	}
	return ""
}

// pointOf reads what the message is about as it stands now: the turn
// (returned, for the station of a call), or the appointment of a
// reminder; why says why the message lost its point, "" when it still
// has one.
func (s *Service) pointOf(ctx context.Context, m Message) (TurnNow, string, error) {
	if m.AppointmentID != "" {
		why, err := s.reminderPoint(ctx, m)
		return TurnNow{}, why, err
	}
	t, err := s.turns.Now(ctx, m.AccountID, m.TurnID)
	if notFound(err) {
		return t, "the turn is gone", nil
	}
	if err != nil {
		return t, "", err
	}
	return t, lostPoint(m, t), nil
}

// counter names the place a turn called to no station goes to.
var counter = map[string]string{"en": "the counter", "es": "el mostrador", "pt": "o balcão", "fr": "le guichet"}

// Attempt is the JobSend job: it sends one message, once. attempt and
// maxAttempts are the job's (1-based); a retryable refusal returns an
// error so the runner retries with backoff, and the last one gives up.
func (s *Service) Attempt(ctx context.Context, a SendArgs, attempt, maxAttempts int) error {
	m, err := s.repo.Get(ctx, a.MessageID)
	if notFound(err) {
		return nil // pruned
	}
	if err != nil || Final(m.Status) {
		return err
	}
	acct, err := s.accountOf(ctx, m.AccountID)
	if err != nil {
		return err
	}
	sender, ok := s.senderOf(acct, m.Channel)
	if !ok {
		return s.finish(ctx, m.ID, StatusFailed, ErrRejected, "no provider is configured for "+m.Channel, "failed")
	}
	t, why, err := s.pointOf(ctx, m)
	if err != nil {
		return err
	}
	if why != "" {
		return s.finish(ctx, m.ID, StatusDropped, ErrLostPoint, why, "dropped")
	}
	if off, err := s.repo.Suppressed(ctx, m.AccountID, m.To); err != nil {
		return err
	} else if off {
		return s.finish(ctx, m.ID, StatusSuppressed, ErrOptedOut, "the number replied STOP", "suppressed")
	}
	if m.Body == "" {
		if m.Moment == MomentCalled || m.Moment == MomentCalledAgain {
			m.Params["station"] = t.Station
			if t.Station == "" {
				m.Params["station"] = counter[m.Language]
			}
		}
		if m.Moment == MomentJoined || m.Moment == MomentForwarded {
			link, err := s.links.TicketURL(ctx, m.AccountID, m.TurnID, m.Language)
			if err != nil {
				s.log.Warn("notify: no ticket link for the message", "message", m.ID, "err", err)
			}
			m.Params["link"] = link
		}
		m.Body = Render(m.Moment, m.Language, m.Params)
	}
	out := Outgoing{MessageID: m.ID, Channel: m.Channel, To: m.To, Body: m.Body, Template: TemplateName(m.Moment),
		Language: m.Language, Params: Params(m.Moment, m.Params)}
	wording(acct, m, &out)
	m.Body = out.Body
	if at, why, err := s.hold(ctx, acct, m); err != nil {
		return err
	} else if !at.IsZero() {
		return s.postpone(ctx, m.ID, at, why)
	}
	r, sendErr := sender.Send(ctx, out)
	return s.record(ctx, m, sender.Provider(), r, sendErr, attempt, maxAttempts)
}

// record writes an attempt's outcome on the locked message.
func (s *Decider) record(ctx context.Context, sent Message, provider string, r Receipt, sendErr error, attempt, maxAttempts int) error {
	var se *SendError
	if sendErr != nil && !errors.As(sendErr, &se) {
		se = &SendError{Code: ErrRejected, Message: sendErr.Error(), Retryable: true}
	}
	retry := se != nil && se.Retryable && attempt < maxAttempts
	var fallback *Message
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		m, err := s.repo.GetForUpdate(ctx, sent.ID)
		if err != nil {
			return err
		}
		if Final(m.Status) {
			return nil
		}
		now := s.clock.Now()
		m.Body, m.Params, m.Provider, m.Attempts, m.UpdatedAt = sent.Body, sent.Params, provider, m.Attempts+1, now
		switch {
		case se == nil:
			m.Status, m.ProviderMessageID, m.SentAt = StatusSent, &r.ProviderMessageID, &now
			m.ErrorCode, m.Error = nil, nil
		case retry:
			m.Error, m.ErrorCode = &se.Message, platform.Ptr(se.Code)
			return s.repo.Update(ctx, m)
		default:
			code := se.Code
			if se.Retryable {
				code = ErrRetriesExhausted
			}
			m.Status, m.ErrorCode, m.Error = StatusFailed, &code, platform.Ptr(se.Message+providerCode(se))
			fallback = s.fallbackOf(ctx, m, se)
		}
		if err := s.repo.Update(ctx, m); err != nil {
			return err
		}
		if fallback != nil {
			if _, err := s.insert(ctx, *fallback); err != nil {
				return err
			}
		}
		return s.raise(ctx, m)
	})
	if err != nil {
		return err
	}
	switch {
	case se == nil:
		s.observe("sent")
		s.log.Info("notify: sent", "message", sent.ID, "moment", sent.Moment, "channel", sent.Channel, "to", Phone(sent.To), "provider", provider)
	case retry:
		return fmt.Errorf("notify: message %s attempt %d: %w", sent.ID, attempt, se)
	case se.Retryable:
		s.observe("gave_up")
		s.log.Error("notify: message given up after its last attempt", "message", sent.ID, "moment", sent.Moment,
			"to", Phone(sent.To), "attempts", attempt, "err", se)
	default:
		s.observe("failed")
		s.log.Warn("notify: provider refused the message", "message", sent.ID, "to", Phone(sent.To), "err", se)
	}
	return nil
}

func providerCode(se *SendError) string {
	if se.ProviderCode == "" {
		return ""
	}
	return " (provider code " + se.ProviderCode + ")"
}

// fallbackOf is the SMS that stands in for a WhatsApp message the
// provider refused for good, when the queue asks for one.
func (s *Decider) fallbackOf(ctx context.Context, m Message, se *SendError) *Message {
	if m.Channel != ChannelWhatsApp || se.Code == ErrOptedOut {
		return nil
	}
	set, err := s.Settings(ctx, m.QueueID)
	if err != nil || !set.WhatsAppFallbackSMS || !set.SMS {
		return nil
	}
	acct, err := s.accountOf(ctx, m.AccountID)
	if err != nil {
		return nil
	}
	sd, ok := s.senderOf(acct, ChannelSMS)
	if !ok {
		return nil
	}
	f := m
	f.ID, f.Channel, f.Provider, f.Status = platform.NewID(PrefixMessage), ChannelSMS, sd.Provider(), StatusQueued
	f.ProviderMessageID, f.ErrorCode, f.Error, f.SentAt, f.Attempts, f.FallbackOf = nil, nil, nil, nil, 0, &m.ID
	f.CreatedAt = m.UpdatedAt
	return &f
}

// finish ends a message without sending it.
func (s *Decider) finish(ctx context.Context, id, status, code, why, outcome string) error {
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		m, err := s.repo.GetForUpdate(ctx, id)
		if err != nil || Final(m.Status) {
			return err
		}
		m.Status, m.ErrorCode, m.Error, m.UpdatedAt = status, &code, &why, s.clock.Now()
		if err := s.repo.Update(ctx, m); err != nil {
			return err
		}
		return s.raise(ctx, m)
	})
	if err == nil {
		s.observe(outcome)
	}
	return err
}

func (s *Decider) observe(outcome string) {
	if s.opts.Observe != nil {
		s.opts.Observe(outcome)
	}
}

// raise emits notification.status for m's new status.
func (s *Decider) raise(ctx context.Context, m Message) error {
	e, err := platform.NewEvent(m.AccountID, StatusChanged{AppointmentID: orNull(m.AppointmentID), Channel: m.Channel,
		ErrorCode: m.ErrorCode, Moment: m.Moment, NotificationID: m.ID, QueueID: m.QueueID, QueueRunID: m.RunID,
		Status: m.Status, TurnID: orNull(m.TurnID)}, s.clock.Now())
	if err != nil {
		return err
	}
	e.QueueID, e.RunID = m.QueueID, m.RunID
	return s.events.Emit(ctx, e)
}

// StatusReport is a provider's delivery status for one of its messages.
type StatusReport struct {
	Provider          string
	ProviderMessageID string
	// AccountID is the account whose credentials signed the callback
	// ("": the operator's): it may only report that account's messages.
	AccountID string
	// Status is one of ours (SENT, DELIVERED, READ, UNDELIVERED, FAILED).
	Status       string
	ProviderCode string
	Error        string
}

// Report applies a provider's status: a repeated one or one older than
// what the message has is ignored; it reports whether the status applied.
func (s *Decider) Report(ctx context.Context, r StatusReport) (bool, error) {
	applied := false
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		m, err := s.repo.ByProviderID(ctx, r.Provider, r.ProviderMessageID)
		if notFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if r.AccountID != "" && m.AccountID != r.AccountID {
			// Signed by another account's credentials: not its message.
			s.log.Warn("notify: a status for another account's message ignored", "account", r.AccountID, "message", m.ID)
			return nil
		}
		if rank(r.Status) <= rank(m.Status) || rank(m.Status) == 4 {
			return nil
		}
		m.Status, m.UpdatedAt = r.Status, s.clock.Now()
		if r.ProviderCode != "" || r.Error != "" {
			m.ErrorCode, m.Error = platform.Ptr(r.ProviderCode), platform.Ptr(r.Error)
		}
		if err := s.repo.Update(ctx, m); err != nil {
			return err
		}
		applied = true
		return s.raise(ctx, m)
	})
	return applied, err
}

// Replies a customer may send.
const (
	ReplyStop  = "STOP"
	ReplyStart = "START"
	ReplyLeave = "LEAVE"
	ReplyHere  = "HERE"
)

// keyword reads a reply: its first word, in capitals, with the opt-out
// and opt-in words carriers and Twilio honour folded into STOP and START.
// CANCEL is an opt-out there, so leaving the line is LEAVE.
func keyword(text string) string {
	f := strings.Fields(strings.ToUpper(text))
	if len(f) == 0 {
		return ""
	}
	switch f[0] {
	case "STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "OPTOUT", "REVOKE":
		return ReplyStop
	case "START", "UNSTOP", "YES", "OPTIN":
		return ReplyStart
	case "LEAVE", "SALIR", "SAIR", "QUITTER":
		return ReplyLeave
	case "HERE", "AQUI", "AQUÍ", "ICI":
		return ReplyHere
	}
	return ""
}

// Reply acts on a customer's reply from a number: STOP and START change
// the account's suppression list, LEAVE cancels the turn of the latest
// message to that number, HERE marks it arrived. It returns the keyword
// it acted on ("" for none).
func (s *Service) Reply(ctx context.Context, from, text string) (string, error) {
	return s.reply(ctx, from, text, s.repo.LatestTo)
}

// reply acts on a reply about the message latest finds for the number.
func (s *Service) reply(ctx context.Context, from, text string, latest func(ctx context.Context, to string) (Message, error)) (string, error) {
	kw := keyword(text)
	if kw == "" {
		return "", nil
	}
	to, err := s.normalize(from, s.opts.Region)
	if err != nil {
		return "", nil
	}
	m, err := latest(ctx, to)
	if notFound(err) {
		return "", nil // nobody we wrote to
	}
	if err != nil {
		return "", err
	}
	s.log.Info("notify: reply", "from", Phone(to), "keyword", kw, "turn", m.TurnID, "appointment", m.AppointmentID)
	if m.TurnID == "" && (kw == ReplyLeave || kw == ReplyHere) {
		// The latest message was an appointment's reminder: there is no
		// line to leave or arrive in by a reply (check-in is staff's).
		return kw, nil
	}
	switch kw {
	case ReplyStop, ReplyStart:
		err = s.uow.Do(ctx, func(ctx context.Context) error {
			return s.repo.SetSuppressed(ctx, m.AccountID, to, kw == ReplyStop, s.clock.Now())
		})
	case ReplyLeave:
		err = s.turns.Leave(ctx, m.AccountID, m.TurnID)
	case ReplyHere:
		err = s.turns.Arrive(ctx, m.AccountID, m.TurnID)
	}
	if pe, ok := platform.AsError(err); ok && pe.Kind != platform.KindInternal && pe.Kind != platform.KindUnavailable {
		// The turn has moved on (already called, finished): nothing to do.
		return kw, nil
	}
	return kw, err
}

// List returns a turn's messages, oldest first (the caller checked the
// turn is the account's).
func (s *Decider) List(ctx context.Context, turnID string) ([]Message, error) {
	ms, err := s.repo.ListByTurn(ctx, turnID)
	for i := range ms {
		ms[i].ToMasked = Mask(ms[i].To)
	}
	return ms, err
}

// ClearPhones forgets, in one batch of at most limit rows of each, the
// numbers of messages created more than keep ago and the phones of turns
// and appointments finished more than keep ago; it returns how many rows
// it changed.
func (s *Decider) ClearPhones(ctx context.Context, keep time.Duration, limit int) (int, error) {
	var n, m, a int
	cutoff := s.clock.Now().Add(-keep)
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		var err error
		n, err = s.repo.ClearPhones(ctx, cutoff, limit)
		return err
	})
	if err != nil {
		return n, err
	}
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		var err error
		m, err = s.repo.ClearTurnPhones(ctx, cutoff, limit)
		return err
	})
	if err != nil {
		return n + m, err
	}
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		var err error
		a, err = s.repo.ClearAppointmentPhones(ctx, cutoff, limit)
		return err
	})
	if err != nil {
		return n + m + a, err
	}
	l, err := s.clearLanguages(ctx, cutoff, limit)
	return n + m + a + l, err
}

// notFound reports a repository's or a port's "no such record".
func notFound(err error) bool {
	pe, ok := platform.AsError(err)
	return ok && pe.Kind == platform.KindNotFound
}
