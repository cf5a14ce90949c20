package counter

import (
	"context"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/core/workflow"
)

// ForwardedReason is the turn.cancelled reason of a turn a counter
// forwarded to another queue: it goes on there.
const ForwardedReason = "forwarded"

// currentRun is the queue's run the console works on: its newest.
func currentRun(qv queues.QueueView) (queues.Run, error) {
	if len(qv.Runs) == 0 {
		return queues.Run{}, platform.Conflict(CodeNoCurrentRun, "the queue has no run", map[string]any{"queueId": qv.ID})
	}
	return qv.Runs[0], nil
}

// Press does one press of the link's console, at most once per key: a
// repeat of the key (a double click, a retry) replays the first answer
// (Replayed) with the turn as it is now, and a reuse of the key for
// another request is 409 PRESS_KEY_REUSED. Every turn event the press
// raises names the link and the station (platform.Actor), and the press is
// kept as a line of the turn's history.
//
// The link works on its queue only: a turn of another queue, or of
// another account, is 404 as if it did not exist; a station the link may
// not act for is 403 STATION_NOT_ALLOWED, and so is a turn at such a
// station.
func (s *Service) Press(ctx context.Context, l Link, in PressInput) (Result, error) {
	if err := in.Validate(); err != nil {
		return Result{}, err
	}
	act := *in.Action
	if in.StationID != nil && !l.MayUse(*in.StationID) {
		return Result{}, stationNotAllowed(*in.StationID)
	}
	if (act == ActNext || act == ActCall) && in.StationID == nil && len(l.StationIDs) > 0 {
		return Result{}, platform.NewError(platform.KindUnprocessable, CodeStationRequired,
			"this counter link acts for its stations only: pick one", map[string]any{"field": "stationId"})
	}
	qv, err := s.queues.Get(ctx, l.AccountID, l.QueueID)
	if err != nil {
		return Result{}, err
	}
	run, err := currentRun(qv)
	if err != nil {
		return Result{}, err
	}
	ctx = platform.WithActor(ctx, platform.Actor{Type: "counter", ID: l.ID, StationID: in.StationID})
	press := Press{ID: platform.NewID(PrefixPress), AccountID: l.AccountID, LinkID: l.ID, QueueID: l.QueueID,
		Key: *in.Key, Action: act, StationID: in.StationID, TurnID: in.TurnID, RequestHash: in.hash(), At: s.clock.Now()}
	if act == ActWalkIn {
		return s.walkIn(ctx, l, run, press, in)
	}
	var (
		out    Result
		replay *Press
	)
	out.Action = act
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		prev, claimed, err := s.repo.ClaimPress(ctx, press)
		if err != nil {
			return err
		}
		if !claimed {
			if prev.RequestHash != press.RequestHash {
				return keyReused(press.Key, prev)
			}
			replay = &prev
			return nil
		}
		v, fw, err := s.act(ctx, l, qv.Queue, run, in)
		if err != nil {
			return err
		}
		out.Turn, out.Forward = &v, fw
		return s.repo.SetPressTurn(ctx, press.ID, v.ID)
	})
	if err != nil {
		return Result{}, err
	}
	if replay != nil {
		out.Replayed = true
		if replay.TurnID != nil {
			v, err := s.turns.Get(ctx, l.AccountID, *replay.TurnID)
			if err != nil {
				return Result{}, err
			}
			out.Turn = &v
		}
	}
	return out, nil
}

func stationNotAllowed(id string) error {
	return platform.NewError(platform.KindForbidden, CodeStationNotAllowed,
		"this counter link may not act for that station", map[string]any{"stationId": id})
}

func keyReused(key string, prev Press) error {
	return platform.Conflict(CodePressKeyReused, "the press key was already used for another action",
		map[string]any{"key": key, "action": string(prev.Action)})
}

// act does the press's action inside the press's unit of work.
func (s *Service) act(ctx context.Context, l Link, q queues.Queue, run queues.Run, in PressInput) (turns.View, *workflow.Forward, error) {
	acc := l.AccountID
	call := turns.CallInput{StationID: in.StationID}
	if *in.Action == ActNext {
		v, err := s.turns.Next(ctx, acc, run.ID, call)
		return v, nil, err
	}
	id := *in.TurnID
	t, err := s.turns.Turn(ctx, acc, id)
	if err != nil || t.QueueID != l.QueueID {
		if err == nil || platform.IsCode(err, platform.CodeNotFound) || platform.IsCode(err, platform.CodeForbidden) {
			// Another queue's turn, or another account's, is not there
			// for this link.
			return turns.View{}, nil, platform.NotFound("turn", id)
		}
		return turns.View{}, nil, err
	}
	if t.StationID != nil && !l.MayUse(*t.StationID) {
		return turns.View{}, nil, stationNotAllowed(*t.StationID)
	}
	var v turns.View
	switch *in.Action {
	case ActCall:
		v, err = s.turns.Call(ctx, acc, id, call)
	case ActArrive:
		v, err = s.turns.Arrive(ctx, acc, id)
	case ActStart:
		v, err = s.turns.Start(ctx, acc, id)
	case ActComplete:
		v, err = s.turns.Complete(ctx, acc, id)
	case ActNoShow:
		v, err = s.turns.NoShow(ctx, acc, id)
	case ActHold:
		v, err = s.turns.Hold(ctx, acc, id)
	case ActRelease:
		v, err = s.turns.Release(ctx, acc, id)
	case ActCancel:
		v, err = s.turns.CancelFor(ctx, acc, id, "staff")
	case ActReopen:
		v, err = s.turns.Reopen(ctx, acc, id)
	case ActPriority:
		v, err = s.turns.SetPriority(ctx, acc, id, turns.PriorityInput{Priority: in.Priority})
	case ActForward:
		return s.forward(ctx, l, q, t, *in.LinkID)
	}
	return v, nil, err
}

// forward sends the turn on through a connected-queue link of its queue
// and, when it was still unfinished here, cancels it here (reason
// "forwarded"): the customer goes on in the other queue, and this one's
// line moves. Refused when the queue's transferEnabled is off.
func (s *Service) forward(ctx context.Context, l Link, q queues.Queue, t turns.Turn, linkID string) (turns.View, *workflow.Forward, error) {
	if !q.TransferEnabled {
		return turns.View{}, nil, platform.Conflict(CodeTransferDisabled,
			"the queue does not let staff forward turns (transferEnabled is off)", map[string]any{"queueId": q.ID})
	}
	fw, err := s.links.ForwardNow(ctx, l.AccountID, t.ID, workflow.ForwardInput{LinkID: &linkID})
	if err != nil {
		return turns.View{}, nil, err
	}
	if t.Status.Finished() {
		v, err := s.turns.Get(ctx, l.AccountID, t.ID)
		return v, &fw, err
	}
	v, err := s.turns.CancelFor(ctx, l.AccountID, t.ID, ForwardedReason)
	return v, &fw, err
}

// walkIn takes a turn for a customer at the counter: the API's intake,
// questions and guards included, with the press's key as the turn's
// idempotency key, so a repeat finds the turn made the first time. It
// runs in the intake's own unit of work (the intake retries a lost key
// race by itself), and the press is recorded after it.
func (s *Service) walkIn(ctx context.Context, l Link, run queues.Run, press Press, in PressInput) (Result, error) {
	body := turns.CreateInput{}
	if in.WalkIn != nil {
		body.PeopleCount, body.Phone, body.NotifyWhatsapp, body.FormResponse =
			in.WalkIn.PeopleCount, in.WalkIn.Phone, in.WalkIn.NotifyWhatsapp, in.WalkIn.FormResponse
	}
	key := "counter:" + l.ID + ":" + press.Key
	body.IdempotencyKey = &key
	v, replayed, err := s.turns.Create(ctx, l.AccountID, run.ID, body)
	if platform.IsCode(err, turns.CodeIdempotencyKeyReused) {
		return Result{}, platform.Conflict(CodePressKeyReused, "the press key was already used for another action",
			map[string]any{"key": press.Key})
	}
	if err != nil {
		return Result{}, err
	}
	press.TurnID = &v.ID
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		prev, claimed, err := s.repo.ClaimPress(ctx, press)
		if err == nil && !claimed && prev.RequestHash != press.RequestHash {
			return keyReused(press.Key, prev)
		}
		return err
	})
	if err != nil {
		return Result{}, err
	}
	return Result{Action: ActWalkIn, Turn: &v, Replayed: replayed}, nil
}
