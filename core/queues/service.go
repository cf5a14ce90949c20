package queues

import (
	"context"

	"github.com/qms-dev/qms/core/platform"
)

// Codes raised by this module.
const (
	CodeEntityNotFound   = "ENTITY_NOT_FOUND"
	CodeTooManyStations  = "TOO_MANY_STATIONS"
	CodeRunClosed        = "RUN_CLOSED"
	CodeStationNotInRun  = "STATION_NOT_IN_QUEUE"
	CodeStationBusy      = "STATION_BUSY"
	RecentRunsInQueueGet = 10
)

// Service is the queues use cases.
type Service struct {
	repo     Repository
	entities Entities
	uow      platform.UnitOfWork
	events   platform.EventSink
	clock    platform.Clock
}

// NewService builds the service.
func NewService(repo Repository, ents Entities, uow platform.UnitOfWork, events platform.EventSink, clock platform.Clock) *Service {
	return &Service{repo: repo, entities: ents, uow: uow, events: events, clock: clock}
}

// Create creates a queue, its stations and its open run in one transaction.
func (s *Service) Create(ctx context.Context, accountID string, in CreateInput) (QueueView, error) {
	if err := in.Validate(); err != nil {
		return QueueView{}, err
	}
	var out QueueView
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		e, err := s.entities.Get(ctx, accountID, *in.EntityID)
		if err != nil {
			if platform.IsCode(err, platform.CodeNotFound) {
				return platform.Unprocessable(CodeEntityNotFound, "entityId does not name an entity of this account",
					map[string]any{"field": "entityId", "entityId": *in.EntityID})
			}
			return err
		}
		now := s.clock.Now()
		q := newQueue(accountID, &in, now)
		if e.Location != nil {
			q.BranchTimezone = e.Location.Timezone
		}
		q.ResolveZone()
		if err := s.repo.CreateQueue(ctx, q); err != nil {
			return err
		}
		out = QueueView{Queue: q, Stations: []Station{}}
		for _, si := range in.Stations {
			st := Station{ID: platform.NewID(platform.PrefixStation), AccountID: accountID, QueueID: q.ID,
				Label: *si.Label, Description: si.Description, CreatedAt: now}
			if err := s.repo.CreateStation(ctx, st); err != nil {
				return err
			}
			out.Stations = append(out.Stations, st)
		}
		run := Run{ID: platform.NewID(platform.PrefixRun), AccountID: accountID, QueueID: q.ID,
			Status: RunOpen, IntakeOpen: true, OpenedAt: &now, CreatedAt: now, UpdatedAt: now}
		if err := s.repo.CreateRun(ctx, run); err != nil {
			return err
		}
		out.Runs = []Run{run}
		return s.emitRun(ctx, q, run, opened)
	})
	return out, err
}

// GetQueue returns a queue of the account: 404 when missing, 403 when it
// belongs to another account.
func (s *Service) GetQueue(ctx context.Context, accountID, id string) (Queue, error) {
	q, err := s.repo.GetQueue(ctx, id)
	if err != nil {
		return Queue{}, err
	}
	if q.AccountID != accountID {
		return Queue{}, platform.ForeignResource("queue")
	}
	return q, nil
}

// Get returns the queue with its stations and recent runs.
func (s *Service) Get(ctx context.Context, accountID, id string) (QueueView, error) {
	q, err := s.GetQueue(ctx, accountID, id)
	if err != nil {
		return QueueView{}, err
	}
	return s.view(ctx, q)
}

func (s *Service) view(ctx context.Context, q Queue) (QueueView, error) {
	stations, err := s.repo.ListStations(ctx, q.ID)
	if err != nil {
		return QueueView{}, err
	}
	runs, err := s.repo.ListRuns(ctx, q.ID, RecentRunsInQueueGet)
	if err != nil {
		return QueueView{}, err
	}
	if stations == nil {
		stations = []Station{}
	}
	if runs == nil {
		runs = []Run{}
	}
	return QueueView{Queue: q, Stations: stations, Runs: runs}, nil
}

// List pages through the account's queues, optionally of one entity.
func (s *Service) List(ctx context.Context, accountID, entityID string, page platform.PageRequest) (platform.Page[Queue], error) {
	items, err := s.repo.ListQueues(ctx, accountID, entityID, page)
	if err != nil {
		return platform.Page[Queue]{}, err
	}
	return platform.PageOf(items, page.Limit, func(q Queue) string { return q.ID }), nil
}

// update runs change on the locked queue and stores it.
func (s *Service) update(ctx context.Context, accountID, id string, change func(q *Queue)) (QueueView, error) {
	var out QueueView
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		q, err := s.repo.GetQueueForUpdate(ctx, id)
		if err != nil {
			return err
		}
		if q.AccountID != accountID {
			return platform.ForeignResource("queue")
		}
		change(&q)
		q.ResolveZone()
		q.UpdatedAt = s.clock.Now()
		if err := s.repo.UpdateQueue(ctx, q); err != nil {
			return err
		}
		out, err = s.view(ctx, q)
		return err
	})
	return out, err
}

// SetSLA replaces the SLA; a field left out or null clears it.
func (s *Service) SetSLA(ctx context.Context, accountID, id string, in SLAInput) (QueueView, error) {
	var v platform.Validator
	in.validate(&v, "")
	if err := v.Err(); err != nil {
		return QueueView{}, err
	}
	return s.update(ctx, accountID, id, func(q *Queue) { q.SLA = in })
}

// SetDispatchFlow changes the fields given and keeps the others.
func (s *Service) SetDispatchFlow(ctx context.Context, accountID, id string, in DispatchFlowInput) (QueueView, error) {
	var v platform.Validator
	in.validate(&v, "")
	if err := v.Err(); err != nil {
		return QueueView{}, err
	}
	return s.update(ctx, accountID, id, func(q *Queue) {
		d := &q.DispatchFlow
		if in.CallOnNext != nil {
			d.CallOnNext = in.CallOnNext
		}
		if in.TrackService != nil {
			d.TrackService = in.TrackService
		}
		if in.OnToleranceExpired != nil {
			d.OnToleranceExpired = in.OnToleranceExpired
		}
		if in.AllowReopen != nil {
			d.AllowReopen = in.AllowReopen
		}
	})
}

// SetWhatsappCapture sets whatsappCapture (required).
func (s *Service) SetWhatsappCapture(ctx context.Context, accountID, id string, in WhatsappCaptureInput) (QueueView, error) {
	var v platform.Validator
	v.Required("whatsappCapture", in.WhatsappCapture != nil)
	if err := v.Err(); err != nil {
		return QueueView{}, err
	}
	return s.update(ctx, accountID, id, func(q *Queue) { q.WhatsappCapture = *in.WhatsappCapture })
}

// SetNumberingReset sets schedule.resetNumberingDaily (required).
func (s *Service) SetNumberingReset(ctx context.Context, accountID, id string, in NumberingResetInput) (QueueView, error) {
	var v platform.Validator
	v.Required("resetNumberingDaily", in.ResetNumberingDaily != nil)
	if err := v.Err(); err != nil {
		return QueueView{}, err
	}
	return s.update(ctx, accountID, id, func(q *Queue) { q.Schedule.ResetNumberingDaily = in.ResetNumberingDaily })
}

// SetCancellationPolicy sets the minimum notice; null removes the policy.
func (s *Service) SetCancellationPolicy(ctx context.Context, accountID, id string, in CancellationPolicyInput) (QueueView, error) {
	var v platform.Validator
	if v.Required("minNoticeMinutes", in.MinNoticeMinutes.Set) && !in.MinNoticeMinutes.Null {
		v.Range("minNoticeMinutes", in.MinNoticeMinutes.Value, 0, 100000)
	}
	if err := v.Err(); err != nil {
		return QueueView{}, err
	}
	return s.update(ctx, accountID, id, func(q *Queue) {
		if in.MinNoticeMinutes.Null {
			q.Cancellation = nil
		} else {
			q.Cancellation = &Cancellation{MinNoticeMinutes: platform.Ptr(in.MinNoticeMinutes.Value)}
		}
	})
}

// ListStations lists a queue's stations.
func (s *Service) ListStations(ctx context.Context, accountID, queueID string) ([]Station, error) {
	if _, err := s.GetQueue(ctx, accountID, queueID); err != nil {
		return nil, err
	}
	st, err := s.repo.ListStations(ctx, queueID)
	if st == nil {
		st = []Station{}
	}
	return st, err
}

// CreateStation adds a station, at most MaxStations per queue.
func (s *Service) CreateStation(ctx context.Context, accountID, queueID string, in StationInput) (Station, error) {
	var v platform.Validator
	in.validate(&v, "")
	if err := v.Err(); err != nil {
		return Station{}, err
	}
	var out Station
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		q, err := s.repo.GetQueueForUpdate(ctx, queueID)
		if err != nil {
			return err
		}
		if q.AccountID != accountID {
			return platform.ForeignResource("queue")
		}
		existing, err := s.repo.ListStations(ctx, queueID)
		if err != nil {
			return err
		}
		if len(existing) >= MaxStations {
			return platform.Conflict(CodeTooManyStations, "a queue has at most 30 stations", map[string]any{"max": MaxStations})
		}
		out = Station{ID: platform.NewID(platform.PrefixStation), AccountID: accountID, QueueID: queueID,
			Label: *in.Label, Description: in.Description, CreatedAt: s.clock.Now()}
		return s.repo.CreateStation(ctx, out)
	})
	return out, err
}

// GetStation returns a station of the account.
func (s *Service) GetStation(ctx context.Context, accountID, id string) (Station, error) {
	st, err := s.repo.GetStation(ctx, id)
	if err != nil {
		return Station{}, err
	}
	if st.AccountID != accountID {
		return Station{}, platform.ForeignResource("station")
	}
	return st, nil
}

// DeleteStation removes a station. Turns assigned to it keep their history
// and lose the assignment.
func (s *Service) DeleteStation(ctx context.Context, accountID, id string) (Station, error) {
	var out Station
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		st, err := s.GetStation(ctx, accountID, id)
		if err != nil {
			return err
		}
		out = st
		return s.repo.DeleteStation(ctx, id)
	})
	return out, err
}

// GetRun returns a run of the account.
func (s *Service) GetRun(ctx context.Context, accountID, id string) (Run, error) {
	r, err := s.repo.GetRun(ctx, id)
	if err != nil {
		return Run{}, err
	}
	if r.AccountID != accountID {
		return Run{}, platform.ForeignResource("queue run")
	}
	return r, nil
}

// OpenRun opens a closed run, with its intake, and raises queue.opened.
// Opening an open run changes nothing and raises nothing.
func (s *Service) OpenRun(ctx context.Context, accountID, id string) (Run, error) {
	return s.changeRun(ctx, accountID, id, func(q Queue, r *Run) (runEvent, error) {
		if r.Open() {
			return nil, nil
		}
		now := s.clock.Now()
		r.Status, r.IntakeOpen, r.OpenedAt, r.ClosedAt = RunOpen, true, &now, nil
		return opened, nil
	})
}

// CloseRun closes an open run and its intake, and raises queue.closed.
// Closing a closed run changes nothing and raises nothing.
func (s *Service) CloseRun(ctx context.Context, accountID, id string) (Run, error) {
	return s.changeRun(ctx, accountID, id, func(q Queue, r *Run) (runEvent, error) {
		if !r.Open() {
			return nil, nil
		}
		now := s.clock.Now()
		r.Status, r.IntakeOpen, r.ClosedAt = RunClosed, false, &now
		return closed, nil
	})
}

// SetIntake opens or closes the intake of an open run; idempotent. A closed
// run refuses with RUN_CLOSED: open the run instead.
func (s *Service) SetIntake(ctx context.Context, accountID, id string, open bool) (Run, error) {
	return s.changeRun(ctx, accountID, id, func(q Queue, r *Run) (runEvent, error) {
		if !r.Open() {
			return nil, platform.Conflict(CodeRunClosed, "the run is closed; open it first",
				map[string]any{"runId": r.ID, "status": r.Status})
		}
		r.IntakeOpen = open
		return nil, nil
	})
}

func (s *Service) changeRun(ctx context.Context, accountID, id string, change func(q Queue, r *Run) (runEvent, error)) (Run, error) {
	var out Run
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		r, err := s.repo.GetRunForUpdate(ctx, id)
		if err != nil {
			return err
		}
		if r.AccountID != accountID {
			return platform.ForeignResource("queue run")
		}
		q, err := s.repo.GetQueue(ctx, r.QueueID)
		if err != nil {
			return err
		}
		before := r
		event, err := change(q, &r)
		if err != nil {
			return err
		}
		out = r
		if r == before {
			return nil
		}
		r.UpdatedAt = s.clock.Now()
		out = r
		if err := s.repo.UpdateRun(ctx, r); err != nil {
			return err
		}
		if event != nil {
			return s.emitRun(ctx, q, r, event)
		}
		return nil
	})
	return out, err
}
