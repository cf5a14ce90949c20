package notify

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// The appointment reminder: a customer who booked an appointment with a
// phone hears "{queue}: reminder, your appointment is at {time}" the
// queue's lead time (Settings.ReminderMinutes) before the slot starts.
//
// It is decided in the booking's own unit of work, like a turn's moments:
// the message row and its JobSend job, due at the slot's start minus the
// lead time, commit or roll back with the booking. Its key is the
// appointment and the slot's start, so a replayed booking stores nothing
// more, and a booking moved to another slot would be a new reminder. The
// job sends through the same path as every moment (Attempt), so the
// suppression list, the provider retries and whatever the send path holds
// back apply alike.
//
// An appointment that is no longer SCHEDULED (cancelled, checked in,
// started, a no-show) has no use for a reminder: the change drops the
// queued one in its own unit of work (DROPPED, LOST_POINT), and the job
// checks again before sending, so a reminder is never sent after the slot
// started nor to an appointment that moved on.

// Appointment statuses the reminder knows of (the appointments module's).
const (
	appointmentScheduled = "SCHEDULED"
)

// AppointmentChange is an appointment change as the module sees it: the
// appointments module's watch translates its own into it
// (modules/notify).
type AppointmentChange struct {
	AccountID     string
	AppointmentID string
	QueueID       string
	RunID         string
	QueueName     string
	Phone         *string
	WhatsApp      bool
	// Language is the customer's, "" for the queue's.
	Language string
	// Before and After are the statuses ("" before for a new booking).
	Before, After string
	SlotStart     time.Time
	// Zone is the queue's time zone: the reminder says the time there.
	Zone *time.Location
}

// AppointmentChanged decides, inside the change's unit of work, what an
// appointment change means for its reminder: a new booking schedules it,
// an appointment that leaves SCHEDULED drops it.
func (s *Decider) AppointmentChanged(ctx context.Context, c AppointmentChange) error {
	if c.Phone == nil || *c.Phone == "" {
		return nil // no phone, no reminder: nothing to read or write
	}
	switch {
	case c.Before == "" && c.After == appointmentScheduled:
		return s.scheduleReminder(ctx, c)
	case c.Before == appointmentScheduled && c.After != appointmentScheduled:
		return s.dropReminders(ctx, c.AppointmentID, "the appointment is "+strings.ToLower(c.After))
	}
	return nil
}

// scheduleReminder stores the reminder of a new booking and schedules its
// job at the slot's start minus the lead time. A booking made inside the
// lead time is reminded at once: the slot has not started (bookings of a
// started slot are refused), and the customer gets the time in writing.
func (s *Decider) scheduleReminder(ctx context.Context, c AppointmentChange) error {
	set, err := s.Settings(ctx, c.QueueID)
	if err != nil || !set.On(MomentReminder) {
		return err
	}
	now := s.clock.Now()
	if !c.SlotStart.After(now) {
		return nil
	}
	channel := ChannelSMS
	if c.WhatsApp {
		channel = ChannelWhatsApp
	} else if !set.SMS {
		return nil
	}
	to, err := s.normalize(*c.Phone, s.opts.Region)
	if err != nil {
		s.log.Info("notify: unusable number, no reminder", "appointment", c.AppointmentID, "phone", Phone(*c.Phone))
		return nil
	}
	at := c.SlotStart.Add(-time.Duration(set.ReminderMinutes) * time.Minute)
	if at.Before(now) {
		at = now
	}
	lang := set.Language
	if c.Language != "" {
		lang = c.Language
	}
	m := Message{ID: platform.NewID(PrefixMessage), AccountID: c.AccountID, AppointmentID: c.AppointmentID,
		QueueID: c.QueueID, RunID: c.RunID, Moment: MomentReminder, Occurrence: 1, Channel: channel, To: to,
		Language: lang, Params: map[string]string{"queue": c.QueueName, "time": ReminderTime(c.SlotStart, at, c.Zone),
			"slotStart": c.SlotStart.UTC().Format(time.RFC3339)},
		Status: StatusQueued, CreatedAt: now, UpdatedAt: now}
	if sd, ok := s.senders[channel]; ok {
		m.Provider = sd.Provider()
	}
	stored, err := s.repo.Insert(ctx, m)
	if err != nil || !stored {
		return err
	}
	job := platform.Job{Kind: JobSend, Args: SendArgs{MessageID: m.ID}, UniqueKey: m.ID}
	if at.After(now) {
		job.RunAt = at
	}
	if err := s.jobs.Schedule(ctx, job); err != nil {
		return fmt.Errorf("notify: schedule reminder: %w", err)
	}
	return nil
}

// ReminderTime is the slot's start as the reminder says it, in the
// queue's zone: the clock time ("15:04") when the reminder goes out on
// the slot's own day there, else the date too ("2006-01-02 15:04").
func ReminderTime(slotStart, sentAt time.Time, zone *time.Location) string {
	if zone == nil {
		zone = time.UTC
	}
	start, sent := slotStart.In(zone), sentAt.In(zone)
	if start.Format(time.DateOnly) == sent.Format(time.DateOnly) {
		return start.Format("15:04")
	}
	return start.Format("2006-01-02 15:04")
}

// dropReminders ends the appointment's queued reminders DROPPED in the
// caller's unit of work: the job that comes due finds them final.
func (s *Decider) dropReminders(ctx context.Context, appointmentID, why string) error {
	ms, err := s.repo.ListByAppointment(ctx, appointmentID)
	if err != nil {
		return err
	}
	for _, q := range ms {
		if q.Status != StatusQueued {
			continue
		}
		m, err := s.repo.GetForUpdate(ctx, q.ID)
		if err != nil {
			return err
		}
		if Final(m.Status) {
			continue
		}
		code := ErrLostPoint
		m.Status, m.ErrorCode, m.Error, m.UpdatedAt = StatusDropped, &code, &why, s.clock.Now()
		if err := s.repo.Update(ctx, m); err != nil {
			return err
		}
		if err := s.raise(ctx, m); err != nil {
			return err
		}
		s.uow.AfterCommit(ctx, func() { s.observe("dropped") })
	}
	return nil
}

// reminderPoint says why a reminder should no longer be sent ("" when it
// should): the appointment is gone, no longer SCHEDULED, moved to another
// slot, or its slot has started.
func (s *Service) reminderPoint(ctx context.Context, m Message) (string, error) {
	if s.appointments == nil {
		return "no appointments module", nil
	}
	a, err := s.appointments.AppointmentNow(ctx, m.AccountID, m.AppointmentID)
	if notFound(err) {
		return "the appointment is gone", nil
	}
	if err != nil {
		return "", err
	}
	switch {
	case a.Status != appointmentScheduled:
		return "the appointment is " + strings.ToLower(a.Status), nil
	case a.SlotStart.UTC().Format(time.RFC3339) != m.Params["slotStart"]:
		return "the appointment moved to another slot", nil
	case !a.SlotStart.After(s.clock.Now()):
		return "the slot has started", nil
	}
	return "", nil
}

// reminderKey is a reminder's key: the appointment and its slot's start,
// so a retried booking stores nothing more and another slot is another
// reminder.
func reminderKey(m Message) string {
	return "appointment:" + m.AppointmentID + ":" + m.Moment + ":" + m.Params["slotStart"]
}

// ListForAppointment returns an appointment's messages, oldest first (the
// caller checked the appointment is the account's).
func (s *Decider) ListForAppointment(ctx context.Context, appointmentID string) ([]Message, error) {
	ms, err := s.repo.ListByAppointment(ctx, appointmentID)
	for i := range ms {
		ms[i].ToMasked = Mask(ms[i].To)
	}
	return ms, err
}

// orNull is s, or nil when empty (the API's null).
func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
