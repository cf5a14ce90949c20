package turns

import (
	"context"
	"strings"

	"github.com/qms-dev/qms/core/platform"
)

// The payloads of the turn events of spec section 6, one type per event.
// Their JSON is the event's data: the webhook body's data, the stream's
// data and the log's row, marshalled once when the event is raised.
//
// Fields are declared in the byte order of their JSON names, the order in
// which the earlier map payloads were written, so that every byte sent
// stays as it was (core/events' TestPayloadsKeepTheirBytes checks it).
// turnId, queueRunId and displayCode are what the spec names; the rest
// lets subscribers act without reading the turn.

// TurnCreated is the data of turn.created.
type TurnCreated struct {
	DisplayCode string  `json:"displayCode"`
	Number      int     `json:"number"`
	Priority    string  `json:"priority"`
	QueueID     string  `json:"queueId"`
	QueueRunID  string  `json:"queueRunId"`
	StationID   *string `json:"stationId"`
	Status      string  `json:"status"`
	TurnID      string  `json:"turnId"`
}

// TurnCalled is the data of turn.called. CallCount says which call of the
// turn this is (a recall counts).
type TurnCalled struct {
	CallCount   int     `json:"callCount"`
	DisplayCode string  `json:"displayCode"`
	Number      int     `json:"number"`
	Priority    string  `json:"priority"`
	QueueID     string  `json:"queueId"`
	QueueRunID  string  `json:"queueRunId"`
	StationID   *string `json:"stationId"`
	Status      string  `json:"status"`
	TurnID      string  `json:"turnId"`
}

// TurnCompleted is the data of turn.completed.
type TurnCompleted struct {
	DisplayCode string  `json:"displayCode"`
	Number      int     `json:"number"`
	Priority    string  `json:"priority"`
	QueueID     string  `json:"queueId"`
	QueueRunID  string  `json:"queueRunId"`
	StationID   *string `json:"stationId"`
	Status      string  `json:"status"`
	TurnID      string  `json:"turnId"`
}

// TurnCancelled is the data of turn.cancelled: PreviousStatus is the
// status the turn was cancelled from, Reason why (tolerance_expired when
// a missed call ran out of tolerance).
type TurnCancelled struct {
	DisplayCode    string  `json:"displayCode"`
	Number         int     `json:"number"`
	PreviousStatus string  `json:"previousStatus"`
	Priority       string  `json:"priority"`
	QueueID        string  `json:"queueId"`
	QueueRunID     string  `json:"queueRunId"`
	Reason         string  `json:"reason"`
	StationID      *string `json:"stationId"`
	Status         string  `json:"status"`
	TurnID         string  `json:"turnId"`
}

// TurnReopened is the data of turn.reopened: PreviousStatus is the status
// the turn had finished in.
type TurnReopened struct {
	DisplayCode    string  `json:"displayCode"`
	Number         int     `json:"number"`
	PreviousStatus string  `json:"previousStatus"`
	Priority       string  `json:"priority"`
	QueueID        string  `json:"queueId"`
	QueueRunID     string  `json:"queueRunId"`
	StationID      *string `json:"stationId"`
	Status         string  `json:"status"`
	TurnID         string  `json:"turnId"`
}

// eventData is a turn change's event: its name and a payload builder fed
// with the turn as it is when the change commits.
type eventData func(t Turn) (name string, payload any)

func createdEvent(t Turn) (string, any) {
	return platform.EventTurnCreated, TurnCreated{DisplayCode: t.DisplayCode, Number: t.Number, Priority: string(t.Priority),
		QueueID: t.QueueID, QueueRunID: t.RunID, StationID: t.StationID, Status: string(t.Status), TurnID: t.ID}
}

func calledEvent(t Turn) (string, any) {
	return platform.EventTurnCalled, TurnCalled{CallCount: t.CallCount, DisplayCode: t.DisplayCode, Number: t.Number,
		Priority: string(t.Priority), QueueID: t.QueueID, QueueRunID: t.RunID, StationID: t.StationID, Status: string(t.Status), TurnID: t.ID}
}

func completedEvent(t Turn) (string, any) {
	return platform.EventTurnCompleted, TurnCompleted{DisplayCode: t.DisplayCode, Number: t.Number, Priority: string(t.Priority),
		QueueID: t.QueueID, QueueRunID: t.RunID, StationID: t.StationID, Status: string(t.Status), TurnID: t.ID}
}

func cancelledEvent(from Status, reason string) eventData {
	return func(t Turn) (string, any) {
		return platform.EventTurnCancelled, TurnCancelled{DisplayCode: t.DisplayCode, Number: t.Number, PreviousStatus: string(from),
			Priority: string(t.Priority), QueueID: t.QueueID, QueueRunID: t.RunID, Reason: reason, StationID: t.StationID,
			Status: string(t.Status), TurnID: t.ID}
	}
}

func reopenedEvent(from Status) eventData {
	return func(t Turn) (string, any) {
		return platform.EventTurnReopened, TurnReopened{DisplayCode: t.DisplayCode, Number: t.Number, PreviousStatus: string(from),
			Priority: string(t.Priority), QueueID: t.QueueID, QueueRunID: t.RunID, StationID: t.StationID, Status: string(t.Status), TurnID: t.ID}
	}
}

// emit raises a turn's event in the caller's unit of work.
func (s *Service) emit(ctx context.Context, t Turn, ev eventData) error {
	name, payload := ev(t)
	e, err := platform.NewEvent(t.AccountID, name, payload, s.clock.Now())
	if err != nil {
		return err
	}
	e.QueueID, e.RunID = t.QueueID, t.RunID
	return s.events.Emit(ctx, e)
}

// EventRef is what the data of every turn event names (spec section 6):
// the data of any of them decodes into it, for subscribers that react to
// all turn events alike.
type EventRef struct {
	DisplayCode string `json:"displayCode"`
	QueueRunID  string `json:"queueRunId"`
	TurnID      string `json:"turnId"`
}

// IsEvent reports whether name is a turn event, whose data decodes into
// EventRef.
func IsEvent(name string) bool { return strings.HasPrefix(name, "turn.") }
