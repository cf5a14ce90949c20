package turns

import (
	"context"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// The queue's offers (enabled, maxPoints) read as a loyalty card
// (docs/queues.md): with offers.enabled every served (COMPLETED) turn
// earns one point, to the phone it was taken with, in that queue; a
// phone's points are its served turns, at most offers.maxPoints (a full
// card). Points are derived from the turns themselves, nothing else is
// stored: Earned is every served turn of the phone still kept (retention
// prunes old runs), so an integrator that redeems points subtracts what it
// redeemed from Earned.

// CodeOffersDisabled: the queue has offers.enabled false. 409.
const CodeOffersDisabled = "OFFERS_DISABLED"

// Points is a phone's points in a queue.
type Points struct {
	QueueID string `json:"queueId"`
	Phone   string `json:"phone"`
	// Earned is the phone's served turns in the queue (one point each).
	Earned int `json:"earned"`
	// Points is Earned up to MaxPoints; Full when it reached it.
	Points    int  `json:"points"`
	MaxPoints int  `json:"maxPoints"`
	Full      bool `json:"full"`
}

// TurnPoints is what one turn earned: one point once COMPLETED, and the
// phone's points when it has a phone.
type TurnPoints struct {
	TurnID  string  `json:"turnId"`
	QueueID string  `json:"queueId"`
	Earned  int     `json:"earned"`
	Phone   *Points `json:"phone"`
}

// offersOf returns the queue of the account with offers on (403 another
// account's, 409 OFFERS_DISABLED off).
func offersOn(q queues.Queue) (int, error) {
	if q.Offers.Enabled == nil || !*q.Offers.Enabled {
		return 0, platform.Conflict(CodeOffersDisabled, "this queue has no loyalty points (offers.enabled is false)",
			map[string]any{"queueId": q.ID})
	}
	return platform.Deref(q.Offers.MaxPoints, 100), nil
}

func (s *Service) phonePoints(ctx context.Context, q queues.Queue, max int, phone string) (Points, error) {
	n, err := s.repo.CountServedByPhone(ctx, q.ID, phone)
	if err != nil {
		return Points{}, err
	}
	return Points{QueueID: q.ID, Phone: phone, Earned: n, Points: min(n, max), MaxPoints: max, Full: n >= max}, nil
}

// PhonePoints reads a phone's points in a queue of the account.
func (s *Service) PhonePoints(ctx context.Context, accountID, queueID, phone string) (Points, error) {
	var v platform.Validator
	if v.Required("phone", phone != "") {
		v.Len("phone", phone, 8, 20)
	}
	if err := v.Err(); err != nil {
		return Points{}, err
	}
	q, err := s.queues.GetQueue(ctx, queueID)
	if err != nil {
		return Points{}, err
	}
	if q.AccountID != accountID {
		return Points{}, platform.ForeignResource("queue")
	}
	max, err := offersOn(q)
	if err != nil {
		return Points{}, err
	}
	return s.phonePoints(ctx, q, max, phone)
}

// PointsOfTurn reads what a turn of the account earned.
func (s *Service) PointsOfTurn(ctx context.Context, accountID, turnID string) (TurnPoints, error) {
	t, err := s.Turn(ctx, accountID, turnID)
	if err != nil {
		return TurnPoints{}, err
	}
	q, err := s.queues.GetQueue(ctx, t.QueueID)
	if err != nil {
		return TurnPoints{}, err
	}
	max, err := offersOn(q)
	if err != nil {
		return TurnPoints{}, err
	}
	out := TurnPoints{TurnID: t.ID, QueueID: q.ID}
	if t.Status == Completed {
		out.Earned = 1
	}
	if t.Phone != nil && *t.Phone != "" {
		p, err := s.phonePoints(ctx, q, max, *t.Phone)
		if err != nil {
			return TurnPoints{}, err
		}
		out.Phone = &p
	}
	return out, nil
}
