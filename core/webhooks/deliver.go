package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
)

// body is the delivery request body of spec section 6, fields in the
// spec's order.
type body struct {
	ID        string          `json:"id"`
	Event     string          `json:"event"`
	Data      json.RawMessage `json:"data"`
	CreatedAt string          `json:"createdAt"`
}

// timestampLayout is ISO 8601 in UTC with milliseconds.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// OnEvent writes, in the transaction of the change that raised e, one
// delivery per endpoint of the account subscribed to e and schedules the
// job of its first attempt. It makes events.Bus deliver to webhooks.
func (s *Service) OnEvent(ctx context.Context, e platform.Event) error {
	// An internal event (events.Internal) is no endpoint's to subscribe to:
	// nothing to read.
	if e.AccountID == "" || events.IsInternal(e.Name) {
		return nil
	}
	eps, err := s.repo.SubscribedEndpoints(ctx, e.AccountID, e.Name)
	if err != nil || len(eps) == 0 {
		return err
	}
	data := e.DataOrEmpty()
	occurred := e.OccurredAt
	if occurred.IsZero() {
		occurred = s.clock.Now()
	}
	// One insert of the deliveries and one of their jobs, whatever the
	// number of endpoints: this runs in the transaction of every change
	// that raises an event (issue 16).
	createdAt := occurred.UTC().Format(timestampLayout)
	now := s.clock.Now()
	ds := make([]Delivery, len(eps))
	jobs := make([]platform.Job, len(eps))
	for i, ep := range eps {
		id := platform.NewID(platform.PrefixDelivery)
		b, err := json.Marshal(body{ID: id, Event: e.Name, Data: data, CreatedAt: createdAt})
		if err != nil {
			return fmt.Errorf("webhooks: encode %s body: %w", e.Name, err)
		}
		ds[i] = Delivery{ID: id, AccountID: e.AccountID, EndpointID: ep.ID, EventID: e.ID, Event: e.Name,
			Status: StatusPending, CreatedAt: now, Body: b, RetryToken: newToken()}
		jobs[i] = platform.Job{Kind: JobDeliver, Args: AttemptArgs{DeliveryID: id, Token: ds[i].RetryToken, N: 1}}
	}
	if err := s.repo.CreateDeliveries(ctx, ds); err != nil {
		return err
	}
	return s.jobs.ScheduleMany(ctx, jobs)
}

func (s *Service) schedule(ctx context.Context, a AttemptArgs, at time.Time) error {
	return s.jobs.Schedule(ctx, platform.Job{Kind: JobDeliver, Args: a, RunAt: at})
}

// Attempt is the JobDeliver worker: it sends the delivery once and records
// the outcome; after a failed automatic attempt it schedules the next one
// on the retry schedule, in the transaction that records the failure.
//
// It returns an error only when the attempt could not be made or recorded
// (storage unreachable, the job's context ended by a shutdown): the job
// runner then runs the same job again shortly, which may send a second
// time; receivers deduplicate by the delivery id.
func (s *Service) Attempt(ctx context.Context, a AttemptArgs) error {
	// The delivery and its endpoint in one read: endpoints never change
	// once created (only deletion, which takes their deliveries with it),
	// so the pair read here is what the attempt sends.
	d, ep, err := s.repo.GetDeliveryToSend(ctx, a.DeliveryID)
	if platform.IsCode(err, platform.CodeNotFound) {
		return nil // the endpoint was deleted, and its deliveries with it
	}
	if err != nil && !errors.Is(err, ErrSecretUnavailable) {
		return err
	}
	automatic := a.Token != ""
	if automatic && d.RetryToken != a.Token {
		return nil // this attempt already ran, or a success ended the schedule
	}
	var res Result
	switch {
	case err != nil:
		// A configuration fault, not the receiver's: record it where the
		// account can see it, and keep to the schedule, so fixing the key
		// lets the next attempt through.
		s.opts.Logger.Error("webhooks: cannot sign a delivery", "delivery", d.ID, "endpoint", d.EndpointID, "err", err)
		res = Result{Err: ErrSecretUnavailable}
	default:
		release, ok := s.gate.acquire(ctx, ep.ID, gateWait)
		if !ok {
			// The endpoint already has MaxInFlight requests open here: a
			// slow receiver. Put this attempt off instead of holding a
			// worker that other endpoints' deliveries need.
			s.opts.Logger.Debug("webhooks: endpoint busy, attempt put off", "delivery", d.ID, "endpoint", ep.ID)
			return s.schedule(ctx, a, s.clock.Now().Add(deferDelay()))
		}
		res = s.send(ctx, ep, d)
		release()
		if ctx.Err() != nil {
			// The job was cut short (the process is stopping): the attempt
			// did not end, so it is not recorded and the job runs again.
			return ctx.Err()
		}
	}
	if succeeded(res) {
		return s.recordSuccess(ctx, d, res)
	}
	return s.record(ctx, a, res)
}

// succeeded: the receiver answered 2xx in time.
func succeeded(res Result) bool { return res.Err == nil && res.Status >= 200 && res.Status <= 299 }

// recordSuccess stores a success in one statement, outside any
// transaction: a success ends the schedule whichever attempt got it, so it
// needs neither the row's lock nor its token (issue 16: the common case of
// every delivery, one round trip instead of four).
func (s *Service) recordSuccess(ctx context.Context, d Delivery, res Result) error {
	now := s.clock.Now()
	err := s.repo.RecordSuccess(ctx, d.ID, now, res.Status)
	if platform.IsCode(err, platform.CodeNotFound) {
		return nil // deleted with its endpoint while the request ran
	}
	if err == nil && s.opts.Observe != nil {
		s.opts.Observe(OutcomeSucceeded, now.Sub(d.CreatedAt))
	}
	return err
}

// gateWait is how long an attempt waits for a free slot of its endpoint
// before it is put off: slots of a healthy receiver free up in
// milliseconds, those of a hanging one in ResponseTimeout.
const gateWait = 200 * time.Millisecond

func (s *Service) send(ctx context.Context, ep Endpoint, d Delivery) Result {
	sctx, cancel := context.WithTimeout(ctx, ResponseTimeout)
	defer cancel()
	return s.sender.Send(sctx, Request{URL: ep.URL, Event: d.Event, DeliveryID: d.ID, Body: d.Body,
		Signature: Sign(ep.Secret, d.Body)})
}

// record stores a failed attempt (successes go to recordSuccess) and, when
// the attempt was automatic and still holds the schedule, schedules the
// next one.
func (s *Service) record(ctx context.Context, a AttemptArgs, res Result) error {
	var outcome string
	var lag time.Duration
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		d, err := s.repo.GetDeliveryForUpdate(ctx, a.DeliveryID)
		if platform.IsCode(err, platform.CodeNotFound) {
			return nil // deleted with its endpoint while the request ran
		}
		if err != nil {
			return err
		}
		now := s.clock.Now()
		d.Attempts++
		d.LastAttemptAt = &now
		d.LastResponseStatus = nil
		if res.Err == nil {
			d.LastResponseStatus = &res.Status
		}
		holdsSchedule := a.Token != "" && a.Token == d.RetryToken
		lag = now.Sub(d.CreatedAt)
		d.Status = StatusFailed
		msg := failure(res)
		d.LastError = &msg
		outcome = OutcomeFailed
		if holdsSchedule {
			d.RetryToken, d.NextAttemptAt = "", nil
			outcome = OutcomeDiscarded
			if delay, more := retryDelay(s.opts.Schedule, a.N, s.rand()); more {
				outcome = OutcomeFailed
				next := now.Add(delay)
				d.RetryToken, d.NextAttemptAt = newToken(), &next
				if err := s.schedule(ctx, AttemptArgs{DeliveryID: d.ID, Token: d.RetryToken, N: a.N + 1}, next); err != nil {
					return err
				}
			}
		}
		return s.repo.UpdateDelivery(ctx, d)
	})
	if err == nil && outcome != "" && s.opts.Observe != nil {
		s.opts.Observe(outcome, lag)
	}
	return err
}

// Outcomes of an attempt, as Options.Observe hears them.
const (
	// OutcomeSucceeded: the receiver answered 2xx in time.
	OutcomeSucceeded = "succeeded"
	// OutcomeFailed: the attempt failed; another is scheduled (or it was
	// a redelivery asked by hand).
	OutcomeFailed = "failed"
	// OutcomeDiscarded: the attempt failed and the schedule has no
	// attempt left.
	OutcomeDiscarded = "discarded"
)

// maxErrorLen bounds the lastError text, receiver's excerpt included.
const maxErrorLen = 300

// failure describes a failed attempt for the delivery log.
func failure(res Result) string {
	var msg string
	switch {
	case errors.Is(res.Err, context.DeadlineExceeded):
		msg = fmt.Sprintf("no response within %s", ResponseTimeout)
	case res.Err != nil:
		msg = res.Err.Error()
	case res.Status >= 300 && res.Status <= 399:
		msg = fmt.Sprintf("the receiver answered %d, a redirect; redirects are not followed", res.Status)
	default:
		msg = fmt.Sprintf("the receiver answered %d", res.Status)
		if ex := printable(res.Excerpt); ex != "" {
			msg += ": " + ex
		}
	}
	if len(msg) > maxErrorLen {
		msg = msg[:maxErrorLen]
		for !utf8.ValidString(msg) {
			msg = msg[:len(msg)-1]
		}
		msg += "…"
	}
	return msg
}

// printable keeps the valid, printable runes of a response excerpt, so a
// binary or hostile body cannot garble the log.
func printable(b []byte) string {
	var sb strings.Builder
	for _, r := range strings.ToValidUTF8(string(b), "") {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			sb.WriteByte(' ')
		case r < 0x20 || r == 0x7f:
		default:
			sb.WriteRune(r)
		}
	}
	return strings.TrimSpace(sb.String())
}

func randFloat() float64 { return rand.Float64() }

// gate bounds the requests open to each endpoint in this process.
type gate struct {
	max   int
	mu    sync.Mutex
	slots map[string]*slot
}

type slot struct {
	sem   chan struct{}
	users int // goroutines holding or waiting for the slot
}

func newGate(max int) *gate { return &gate{max: max, slots: map[string]*slot{}} }

// acquire takes one of the endpoint's slots, waiting at most wait; release
// gives it back.
func (g *gate) acquire(ctx context.Context, endpointID string, wait time.Duration) (release func(), ok bool) {
	g.mu.Lock()
	sl := g.slots[endpointID]
	if sl == nil {
		sl = &slot{sem: make(chan struct{}, g.max)}
		g.slots[endpointID] = sl
	}
	sl.users++
	g.mu.Unlock()
	done := func() {
		g.mu.Lock()
		sl.users--
		if sl.users == 0 {
			delete(g.slots, endpointID)
		}
		g.mu.Unlock()
	}
	select {
	case sl.sem <- struct{}{}:
		return func() { <-sl.sem; done() }, true
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case sl.sem <- struct{}{}:
		return func() { <-sl.sem; done() }, true
	case <-t.C:
	case <-ctx.Done():
	}
	done()
	return nil, false
}

// InFlight reports how many requests are open to the endpoint in this
// process (tests).
func (s *Service) InFlight(endpointID string) int {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	if sl := s.gate.slots[endpointID]; sl != nil {
		return len(sl.sem)
	}
	return 0
}
