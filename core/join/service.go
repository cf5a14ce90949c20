package join

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/location"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/ticket"
	"github.com/qms-dev/qms/core/turns"
)

// AccessCodeMember is the turn body member the access-codes module
// declares (core/accesscodes.BodyMember); named here, not imported, as the
// HTTP layer names it for the API.
const AccessCodeMember = "accessCode"

// LanguageMember is the turn body member the notify module declares: the
// language the join page showed, which the turn's messages use.
const LanguageMember = "language"

// IdempotencyPrefix begins the idempotency key of a turn taken through a
// join page, so it never meets an integrator's keys.
const IdempotencyPrefix = "join:"

// Service is the join use cases.
type Service struct {
	repo     Repository
	queues   Queues
	branches Branches
	turns    Turns
	tickets  Tickets
	phones   Phones
	uow      platform.UnitOfWork
	clock    platform.Clock
}

// NewService builds the service.
func NewService(repo Repository, qs Queues, bs Branches, ts Turns, tk Tickets, ph Phones, uow platform.UnitOfWork, clock platform.Clock) *Service {
	return &Service{repo: repo, queues: qs, branches: bs, turns: ts, tickets: tk, phones: ph, uow: uow, clock: clock}
}

// Create makes a join link for one of the account's queues (403 for
// another account's). The value is in the result only.
func (s *Service) Create(ctx context.Context, accountID, queueID string, in CreateInput) (Created, error) {
	var v platform.Validator
	v.OptLen("label", in.Label, 1, 80)
	if in.Language != nil {
		v.OneOf("language", *in.Language, display.Languages...)
	}
	if in.PhoneRegion != nil {
		if !s.phones.ValidRegion(*in.PhoneRegion) || len(*in.PhoneRegion) != 2 {
			v.Fail("phoneRegion", "region", "must be an ISO 3166-1 alpha-2 country code such as ES or US")
		}
	}
	if err := v.Err(); err != nil {
		return Created{}, err
	}
	if in.PhoneRegion != nil {
		in.PhoneRegion = platform.Ptr(strings.ToUpper(*in.PhoneRegion))
	}
	var out Created
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		q, err := s.queues.Get(ctx, accountID, queueID)
		if err != nil {
			return err
		}
		if q.Type == queues.TypeAppointment {
			return platform.Unprocessable(turns.CodeNotATurnQueue, "the queue takes appointments, not turns: a join page cannot take one",
				map[string]any{"queueId": q.ID, "type": q.Type})
		}
		n, err := s.repo.CountLive(ctx, q.ID)
		if err != nil {
			return err
		}
		if n >= MaxLinksPerQueue {
			return platform.Conflict(CodeTooManyJoinLinks, "the queue already has the most live join links; revoke one first",
				map[string]any{"limit": MaxLinksPerQueue})
		}
		value := newValue()
		l := Link{ID: platform.NewID(PrefixLink), AccountID: accountID, QueueID: q.ID, Label: in.Label,
			Hash: Hash(value), Language: in.Language, Kiosk: platform.Deref(in.Kiosk, false),
			PhoneRegion: in.PhoneRegion, CreatedAt: s.clock.Now()}
		if err := s.repo.Create(ctx, l); err != nil {
			return err
		}
		out = Created{Link: l, Value: value}
		return nil
	})
	return out, err
}

// List pages through a queue's links (values are never shown again).
func (s *Service) List(ctx context.Context, accountID, queueID string, page platform.PageRequest) (platform.Page[Link], error) {
	q, err := s.queues.Get(ctx, accountID, queueID)
	if err != nil {
		return platform.Page[Link]{}, err
	}
	items, err := s.repo.ListByQueue(ctx, q.ID, page)
	if err != nil {
		return platform.Page[Link]{}, err
	}
	return platform.PageOf(items, page.Limit, func(l Link) string { return l.ID }), nil
}

// Revoke revokes a link: its page refuses its next request (the page,
// its state, a join). Revoking a revoked link changes nothing.
func (s *Service) Revoke(ctx context.Context, accountID, id string) (Link, error) {
	var out Link
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		l, err := s.repo.Get(ctx, id)
		if err != nil {
			return err
		}
		if l.AccountID != accountID {
			return platform.ForeignResource("join link")
		}
		if l.RevokedAt == nil {
			now := s.clock.Now()
			l.RevokedAt = &now
			if err := s.repo.Update(ctx, l); err != nil {
				return err
			}
		}
		out = l
		return nil
	})
	return out, err
}

// Resolve returns the live link whose value is given: 404
// INVALID_JOIN_LINK when there is none, 410 JOIN_LINK_REVOKED when it was
// revoked.
func (s *Service) Resolve(ctx context.Context, value string) (Link, error) {
	invalid := platform.NewError(platform.KindNotFound, CodeInvalidJoinLink, "this join link is not valid", nil)
	if !LooksLikeValue(value) {
		return Link{}, invalid
	}
	l, err := s.repo.GetByHash(ctx, Hash(value))
	if platform.IsCode(err, platform.CodeNotFound) {
		return Link{}, invalid
	}
	if err != nil {
		return Link{}, fmt.Errorf("join: reading a link: %w", err)
	}
	if l.Revoked() {
		return Link{}, platform.NewError(platform.KindGone, CodeJoinLinkRevoked,
			"this join link has been withdrawn", map[string]any{"revokedAt": l.RevokedAt.UTC()})
	}
	return l, nil
}

// place is a link's queue, its newest run and its branch.
type place struct {
	q      queues.QueueView
	run    *queues.Run
	branch entities.Entity
}

func (s *Service) place(ctx context.Context, l Link) (place, error) {
	q, err := s.queues.Get(ctx, l.AccountID, l.QueueID)
	if platform.IsCode(err, platform.CodeNotFound) {
		// The queue was deleted: its links open nothing.
		return place{}, platform.NewError(platform.KindNotFound, CodeInvalidJoinLink, "this join link is not valid", nil)
	}
	if err != nil {
		return place{}, fmt.Errorf("join: reading the queue: %w", err)
	}
	b, err := s.branches.Get(ctx, l.AccountID, q.EntityID)
	if err != nil {
		return place{}, fmt.Errorf("join: reading the branch: %w", err)
	}
	p := place{q: q, branch: b}
	if len(q.Runs) > 0 {
		p.run = &q.Runs[0]
	}
	return p, nil
}

// Read resolves a link and reads what its page shows now.
func (s *Service) Read(ctx context.Context, value string) (Link, Page, error) {
	l, err := s.Resolve(ctx, value)
	if err != nil {
		return Link{}, Page{}, err
	}
	p, err := s.place(ctx, l)
	if err != nil {
		return Link{}, Page{}, err
	}
	q := p.q.Queue
	out := Page{
		Queue: Place{Name: q.Name, Subtitle: q.Subtitle}, Branch: Place{Name: p.branch.Name},
		Language: l.Language, Kiosk: l.Kiosk, Timezone: q.Zone().String(),
		Instructions: q.PreAttention.Instructions, Questions: []Question{},
		AccessCodeRequired: q.AccessCodeRequired, Phone: q.WhatsappCapture, MaxPeople: 20,
		Waitlist: platform.Deref(q.Capacity.WaitlistEnabled, false),
	}
	if q.WhatsappCapture {
		out.PhoneRegion = s.region(l, q, p.branch)
	}
	for _, qu := range q.PreAttention.Questions {
		item := Question{ID: platform.Deref(qu.ID, ""), Label: platform.Deref(qu.Label, ""),
			Type: platform.Deref(qu.Type, queues.QuestionText), Required: platform.Deref(qu.Required, false), Options: []string{}}
		for _, o := range qu.Options {
			if o.Label != nil {
				item.Options = append(item.Options, *o.Label)
			}
		}
		out.Questions = append(out.Questions, item)
	}
	if f := fenceOf(q, p.branch); f != nil && platform.Deref(q.Geofence.RequireToTake, false) {
		out.Geofence = &Fence{RadiusMeters: f.radius}
	}
	out.Open, out.Closed, out.OpensAt = s.openNow(q, p.run)
	if p.run != nil {
		if err := s.line(ctx, l.AccountID, q, p.run.ID, &out); err != nil {
			return Link{}, Page{}, err
		}
	}
	return l, out, nil
}

// openNow applies the intake's own rules to say whether a turn can be
// taken now, and if not why and when.
func (s *Service) openNow(q queues.Queue, run *queues.Run) (bool, *string, *time.Time) {
	switch {
	case q.Type == queues.TypeAppointment:
		return false, platform.Ptr("appointments_only"), nil
	case run == nil || !run.Open():
		return false, platform.Ptr("run_closed"), nil
	case !run.IntakeOpen:
		return false, platform.Ptr("intake_closed"), nil
	}
	if platform.Deref(q.Schedule.AllowOutsideHours, false) {
		return true, nil, nil
	}
	if open, next := turns.OpenNow(q, s.clock.Now()); !open {
		return false, platform.Ptr("outside_hours"), next
	}
	return true, nil, nil
}

// line counts the run's line: how many wait, the wait of the last (what a
// newcomer faces, as the display board says it), and whether it is full.
func (s *Service) line(ctx context.Context, accountID string, q queues.Queue, runID string, out *Page) error {
	page := platform.PageRequest{Limit: platform.MaxPageLimit}
	var last *turns.View
	active, waitlisted := 0, 0
	f := turns.ListFilter{Statuses: []turns.Status{turns.Waitlisted, turns.Waiting, turns.Held, turns.Called, turns.InService}}
	for {
		p, err := s.turns.List(ctx, accountID, runID, f, page)
		if err != nil {
			return fmt.Errorf("join: reading the line: %w", err)
		}
		for i := range p.Items {
			v := p.Items[i]
			switch {
			case v.Status == turns.Waitlisted:
				waitlisted++
			case v.Status.Active():
				active++
			}
			if v.Status != turns.Waiting {
				continue
			}
			out.Waiting.Count++
			if last == nil || v.Position != nil && (last.Position == nil || *v.Position > *last.Position) {
				last = &v
			}
		}
		if p.Next == "" {
			break
		}
		page.After = p.Next
	}
	if last != nil && last.WaitEstimate != nil {
		m := last.WaitEstimate.Minutes
		out.Waiting.WaitMinutes = &m
		out.Waiting.WaitRange = last.WaitEstimate.Range
	}
	if q.Capacity.MaxTurns != nil {
		out.Full = active >= *q.Capacity.MaxTurns || out.Waitlist && waitlisted > 0
	}
	if out.Full && !out.Waitlist && out.Open {
		out.Open, out.Closed = false, platform.Ptr("full")
	}
	return nil
}

// region is the country a typed number without "+" is read in: the
// link's phoneRegion, else the branch's support phone's country, else the
// country of the queue's time zone when only one country uses it, else
// none.
func (s *Service) region(l Link, q queues.Queue, b entities.Entity) string {
	if l.PhoneRegion != nil {
		return *l.PhoneRegion
	}
	if b.SupportPhone != nil {
		if r := s.phones.RegionOfNumber(*b.SupportPhone); r != "" {
			return r
		}
	}
	return s.phones.RegionForZone(q.Zone().String())
}

// fence is a geofence's centre and radius.
type fence struct {
	lat, lng float64
	radius   int
}

// fenceOf is the queue's geofence around the queue's location, else its
// branch's; nil when the queue has no geofence or no place to measure
// from.
func fenceOf(q queues.Queue, b entities.Entity) *fence {
	if q.Geofence == nil || q.Geofence.RadiusMeters == nil {
		return nil
	}
	for _, loc := range []*location.Location{q.Location, b.Location} {
		if loc != nil && loc.Lat != nil && loc.Lng != nil {
			return &fence{lat: *loc.Lat, lng: *loc.Lng, radius: *q.Geofence.RadiusMeters}
		}
	}
	return nil
}

// within measures pos against f: the distance in metres and whether the
// device may be inside, its reported accuracy counted in its favour up to
// MaxAccuracyCredit radii.
func (f fence) within(pos Position) (int, bool) {
	d := location.DistanceMeters(f.lat, f.lng, *pos.Lat, *pos.Lng)
	credit := math.Min(platform.Deref(pos.Accuracy, 0), MaxAccuracyCredit*float64(f.radius))
	return int(math.Round(d)), d-credit <= float64(f.radius)
}

// Join takes a turn through a join link: the link must stand, the
// geofence hold (when the queue requires it), the device hold fewer than
// MaxOpenTurnsPerDevice unfinished turns of the queue (not for a kiosk),
// the phone be a real number; then the turns module's own create applies
// every intake rule (run, schedule, capacity and waitlist, answers and
// their options' prefix and priority, access code and its scopes,
// oneActiveTurnPerCode) and the idempotency key makes a repeat the same
// turn. The answer carries a new ticket link's value.
func (s *Service) Join(ctx context.Context, value string, in Input, dev Device) (Joined, error) {
	l, err := s.Resolve(ctx, value)
	if err != nil {
		return Joined{}, err
	}
	p, err := s.place(ctx, l)
	if err != nil {
		return Joined{}, err
	}
	q := p.q.Queue
	if p.run == nil {
		return Joined{}, platform.Conflict(turns.CodeQueueClosed, "the queue has no run open", map[string]any{"queueId": q.ID})
	}
	body := turns.CreateInput{PeopleCount: in.PeopleCount, NotifyWhatsapp: in.NotifyWhatsapp, FormResponse: in.FormResponse}
	// Every field the form shows is checked here at once, with the rules
	// the API applies (the turns module checks them again), so the page
	// marks every wrong field in one answer rather than one per tap.
	var v platform.Validator
	if in.Location != nil {
		in.Location.validate(&v, "location")
	}
	v.OptLen("idempotencyKey", in.IdempotencyKey, 8, 100)
	v.OptRange("peopleCount", in.PeopleCount, 1, 20)
	v.OptLen("accessCode", in.AccessCode, 0, 32)
	if in.Language != nil {
		v.OneOf("language", *in.Language, "en", "es", "pt", "fr")
	}
	q.PreAttention.CheckAnswers(&v, "formResponse", in.FormResponse)
	if in.Phone != nil && strings.TrimSpace(*in.Phone) != "" {
		if !q.WhatsappCapture {
			v.Fail("phone", "whatsapp_capture", "this queue does not take a phone number")
		} else if e164, err := s.phones.Normalize(*in.Phone, s.region(l, q, p.branch)); err != nil {
			v.Fail("phone", "phone", "must be a real phone number (with its country code, +…, when it is from another country)")
		} else {
			body.Phone = &e164
		}
	} else if platform.Deref(in.NotifyWhatsapp, false) {
		v.Fail("phone", "required", "a phone number is needed for WhatsApp messages")
	}
	if err := v.Err(); err != nil {
		return Joined{}, err
	}
	if in.IdempotencyKey != nil {
		body.IdempotencyKey = platform.Ptr(IdempotencyPrefix + *in.IdempotencyKey)
	}
	if in.AccessCode != nil && strings.TrimSpace(*in.AccessCode) != "" {
		code := strings.TrimSpace(*in.AccessCode)
		body.Extensions = turns.Extensions{AccessCodeMember: &code}
	}
	if in.Language != nil && body.Phone != nil {
		// Only a turn that will hear from qms needs its language kept.
		if body.Extensions == nil {
			body.Extensions = turns.Extensions{}
		}
		body.Extensions[LanguageMember] = in.Language
	}
	if q.Geofence != nil && platform.Deref(q.Geofence.RequireToTake, false) {
		if f := fenceOf(q, p.branch); f != nil {
			if err := checkFence(*f, in.Location); err != nil {
				return Joined{}, err
			}
		}
	}
	if !l.Kiosk {
		if err := s.checkDevice(ctx, l, dev); err != nil {
			return Joined{}, err
		}
	}
	view, replayed, err := s.turns.Create(ctx, l.AccountID, p.run.ID, body)
	if err != nil {
		return Joined{}, err
	}
	tk, err := s.tickets.Create(ctx, l.AccountID, view.ID, ticket.CreateInput{Language: l.Language})
	if err != nil {
		return Joined{}, fmt.Errorf("join: making the ticket link: %w", err)
	}
	return Joined{TurnID: view.ID, DisplayCode: view.DisplayCode, Status: view.Status, Ticket: tk.Value,
		Replayed: replayed, QueueID: q.ID}, nil
}

// checkFence refuses a position outside f, or none.
func checkFence(f fence, pos *Position) error {
	if pos == nil {
		return platform.NewError(platform.KindUnprocessable, CodeLocationRequired,
			"this queue takes turns only from people nearby: the device's location is needed",
			map[string]any{"fields": []platform.FieldError{{Path: "location", Rule: "required", Message: "the device's location is needed"}},
				"radiusMeters": f.radius})
	}
	d, ok := f.within(*pos)
	if !ok {
		return platform.NewError(platform.KindUnprocessable, CodeOutsideGeofence,
			fmt.Sprintf("you are about %d m away; this queue takes turns within %d m", d, f.radius),
			map[string]any{"fields": []platform.FieldError{{Path: "location", Rule: "geofence",
				Message: fmt.Sprintf("about %d m away; turns are taken within %d m", d, f.radius)}},
				"distanceMeters": d, "radiusMeters": f.radius})
	}
	return nil
}

// checkDevice refuses a join when the device already holds
// MaxOpenTurnsPerDevice unfinished turns of the link's queue.
func (s *Service) checkDevice(ctx context.Context, l Link, dev Device) error {
	open := 0
	for _, id := range dev.TurnIDs {
		t, err := s.turns.Get(ctx, l.AccountID, id)
		if err != nil {
			var pe *platform.Error
			if errors.As(err, &pe) {
				continue // gone, or another account's: not this queue's
			}
			return err
		}
		if t.QueueID == l.QueueID && !t.Status.Finished() {
			open++
		}
	}
	if open >= MaxOpenTurnsPerDevice {
		return platform.NewError(platform.KindConflict, CodeTooManyOpenTurns,
			fmt.Sprintf("this phone already holds %d turns of this queue; they must be served or left first", open),
			map[string]any{"limit": MaxOpenTurnsPerDevice})
	}
	return nil
}

// Arrive is an open ticket page's location report: when the turn's queue
// marks arrival by location (carpool.autoArriveOnGeofence, a geofence and
// a place to measure from) and pos is inside, the turn is marked arrived
// through the API's own arrive (the same rules, and what it raises),
// once: a turn already arrived is left alone. A missed (NO_SHOW) or
// finished turn is not brought back by it. Nothing of pos is kept.
func (s *Service) Arrive(ctx context.Context, ticketValue string, pos *Position) (Arrival, error) {
	if pos != nil {
		var v platform.Validator
		pos.validate(&v, "location")
		if err := v.Err(); err != nil {
			return Arrival{}, err
		}
	}
	tl, t, err := s.tickets.Resolve(ctx, ticketValue)
	if err != nil {
		return Arrival{}, err
	}
	qv, err := s.queues.Get(ctx, tl.AccountID, t.QueueID)
	if err != nil {
		return Arrival{}, fmt.Errorf("join: reading the queue: %w", err)
	}
	b, err := s.branches.Get(ctx, tl.AccountID, qv.EntityID)
	if err != nil {
		return Arrival{}, fmt.Errorf("join: reading the branch: %w", err)
	}
	f := fenceOf(qv.Queue, b)
	out := Arrival{Arrived: t.ArrivedAt != nil}
	if f == nil || !platform.Deref(qv.Carpool.AutoArriveOnGeofence, false) {
		return out, nil
	}
	out.Enabled, out.RadiusMeters = true, f.radius
	if pos == nil {
		return out, nil
	}
	d, inside := f.within(*pos)
	out.DistanceMeters = &d
	if !inside || out.Arrived || !arrivable(t.Status) {
		return out, nil
	}
	if _, err := s.turns.Arrive(ctx, tl.AccountID, t.ID); err != nil {
		return Arrival{}, err
	}
	out.Arrived = true
	return out, nil
}

// arrivable are the statuses arrival only marks (a NO_SHOW's arrival is a
// re-entry, a decision left to the staff or the API).
func arrivable(s turns.Status) bool {
	return s == turns.Waitlisted || s == turns.Waiting || s == turns.Held || s == turns.Called
}
