package counter

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// Console is what a counter link's page shows: the queue and its flow
// (which decides the buttons), the stations the link may act for, the
// queues it may forward to, and the run's line by status.
type Console struct {
	Link     ConsoleLink      `json:"link"`
	Queue    ConsoleQueue     `json:"queue"`
	Run      *ConsoleRun      `json:"run"`
	Stations []ConsoleStation `json:"stations"`
	// Forward are the connected-queue links the console may forward a
	// turn through (none unless the queue's transferEnabled is on).
	Forward []ForwardTarget `json:"forward"`
	// The line: Waiting in line order (position 1 first), the others by
	// when they got there.
	Waiting    []Row `json:"waiting"`
	Held       []Row `json:"held"`
	Called     []Row `json:"called"`
	InService  []Row `json:"inService"`
	Waitlisted []Row `json:"waitlisted"`
	// Finished are the turns that finished in the last 5 minutes, which
	// reopen may bring back (only with dispatchFlow.allowReopen).
	Finished []Row `json:"finished"`
	// HelpRequests are the customers of the run asking for help (their
	// open requests, the one waiting longest first): the desk lists them
	// until a clerk answers one.
	HelpRequests []HelpRequest `json:"helpRequests"`
	// People is how many people the waiting turns bring (peopleCount).
	People      int       `json:"people"`
	GeneratedAt time.Time `json:"generatedAt"`
}

// ConsoleLink is the link's own options, as the page needs them.
type ConsoleLink struct {
	ID          string   `json:"id"`
	Label       *string  `json:"label"`
	Language    *string  `json:"language"`
	StationIDs  []string `json:"stationIds"`
	ShowDetails bool     `json:"showDetails"`
}

// ConsoleQueue is the queue as the console needs it.
type ConsoleQueue struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	Subtitle *string `json:"subtitle"`
	Type     string  `json:"type"`
	// Flow is the queue's dispatch flow with its defaults applied.
	Flow            Flow               `json:"flow"`
	Questions       []queues.Question  `json:"questions"`
	WhatsappCapture bool               `json:"whatsappCapture"`
	TransferEnabled bool               `json:"transferEnabled"`
	SLA             queues.SLA         `json:"sla"`
	Help            queues.Help        `json:"help"`
	Priorities      []string           `json:"priorities"`
	Tolerance       ConsoleTolerance   `json:"tolerance"`
	Capacity        ConsoleCapacityRef `json:"capacity"`
}

// Flow is the dispatch flow that decides the console's buttons.
type Flow struct {
	CallOnNext   bool `json:"callOnNext"`
	TrackService bool `json:"trackService"`
	AllowReopen  bool `json:"allowReopen"`
}

// ConsoleTolerance is what the console needs of the queue's tolerance.
type ConsoleTolerance struct {
	AllowReentry bool `json:"allowReentry"`
}

// ConsoleCapacityRef is what the console needs of the queue's capacity.
type ConsoleCapacityRef struct {
	MaxTurns *int `json:"maxTurns"`
}

// ConsoleRun is the run the console works on.
type ConsoleRun struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	IntakeOpen bool   `json:"intakeOpen"`
}

// ConsoleStation is a station the link may act for, and the turn at it.
type ConsoleStation struct {
	ID     string  `json:"id"`
	Label  string  `json:"label"`
	TurnID *string `json:"turnId"`
}

// ForwardTarget is a queue the console may forward a turn to.
type ForwardTarget struct {
	LinkID    string `json:"linkId"`
	QueueID   string `json:"queueId"`
	QueueName string `json:"queueName"`
}

// Row is a turn of the line as the console shows it. Phone and the form
// answers are there only when the link shows customer details.
type Row struct {
	ID           string            `json:"id"`
	DisplayCode  string            `json:"displayCode"`
	Status       turns.Status      `json:"status"`
	Priority     queues.Priority   `json:"priority"`
	Position     *int              `json:"position"`
	PeopleCount  int               `json:"peopleCount"`
	CallCount    int               `json:"callCount"`
	Station      *turns.StationRef `json:"station"`
	CreatedAt    time.Time         `json:"createdAt"`
	ArrivedAt    *time.Time        `json:"arrivedAt"`
	CalledAt     *time.Time        `json:"calledAt"`
	StartedAt    *time.Time        `json:"startedAt"`
	FinishedAt   *time.Time        `json:"finishedAt"`
	Phone        *string           `json:"phone,omitempty"`
	FormResponse map[string]string `json:"formResponse,omitempty"`
}

// Console reads what the link's page shows now.
func (s *Service) Console(ctx context.Context, l Link) (Console, error) {
	c, err := s.QueueConsole(ctx, l.AccountID, l.QueueID)
	if err != nil {
		return Console{}, err
	}
	return c.For(l), nil
}

// QueueConsole reads the console of a queue as every link of it shares
// it: every station, and the customers' details. It is never shown as it
// is: For draws a link's console from it, without a read, so the open
// consoles of a queue share one read per change (counterhttp).
func (s *Service) QueueConsole(ctx context.Context, accountID, queueID string) (Console, error) {
	qv, err := s.queues.Get(ctx, accountID, queueID)
	if err != nil {
		return Console{}, err
	}
	q := qv.Queue
	c := Console{
		Link: ConsoleLink{StationIDs: []string{}, ShowDetails: true},
		Queue: ConsoleQueue{ID: q.ID, Name: q.Name, Subtitle: q.Subtitle, Type: q.Type,
			Flow: Flow{CallOnNext: platform.Deref(q.DispatchFlow.CallOnNext, true),
				TrackService: platform.Deref(q.DispatchFlow.TrackService, true),
				AllowReopen:  platform.Deref(q.DispatchFlow.AllowReopen, false)},
			Questions: q.PreAttention.Questions, WhatsappCapture: q.WhatsappCapture, TransferEnabled: q.TransferEnabled,
			SLA: q.SLA, Help: q.Help, Priorities: queues.Priorities,
			Tolerance: ConsoleTolerance{AllowReentry: platform.Deref(q.Tolerance.AllowReentry, true)},
			Capacity:  ConsoleCapacityRef{MaxTurns: q.Capacity.MaxTurns}},
		Stations: []ConsoleStation{}, Forward: []ForwardTarget{},
		Waiting: []Row{}, Held: []Row{}, Called: []Row{}, InService: []Row{}, Waitlisted: []Row{}, Finished: []Row{},
		HelpRequests: []HelpRequest{}, GeneratedAt: s.clock.Now(),
	}
	if c.Queue.Questions == nil {
		c.Queue.Questions = []queues.Question{}
	}
	at := map[string]*ConsoleStation{}
	for _, st := range qv.Stations {
		c.Stations = append(c.Stations, ConsoleStation{ID: st.ID, Label: st.Label})
	}
	for i := range c.Stations {
		at[c.Stations[i].ID] = &c.Stations[i]
	}
	if q.TransferEnabled {
		if c.Forward, err = s.targets(ctx, accountID, queueID); err != nil {
			return Console{}, err
		}
	}
	run, err := currentRun(qv)
	if err != nil {
		return c, nil
	}
	c.Run = &ConsoleRun{ID: run.ID, Status: run.Status, IntakeOpen: run.IntakeOpen}
	if c.HelpRequests, err = s.openHelp(ctx, accountID, run.ID); err != nil {
		return Console{}, fmt.Errorf("counter: reading the help requests: %w", err)
	}
	statuses := []turns.Status{turns.Waitlisted, turns.Waiting, turns.Held, turns.Called, turns.InService}
	if c.Queue.Flow.AllowReopen {
		statuses = append(statuses, turns.Completed, turns.NoShow, turns.Cancelled)
	}
	now := s.clock.Now()
	page := platform.PageRequest{Limit: platform.MaxPageLimit}
	for {
		p, err := s.turns.List(ctx, accountID, run.ID, turns.ListFilter{Statuses: statuses}, page)
		if err != nil {
			return Console{}, err
		}
		for _, v := range p.Items {
			r := rowOf(v, true)
			switch v.Status {
			case turns.Waiting:
				c.Waiting = append(c.Waiting, r)
				c.People += v.PeopleCount
			case turns.Held:
				c.Held = append(c.Held, r)
			case turns.Called:
				c.Called = append(c.Called, r)
			case turns.InService:
				c.InService = append(c.InService, r)
			case turns.Waitlisted:
				c.Waitlisted = append(c.Waitlisted, r)
			default:
				if v.FinishedAt != nil && now.Sub(*v.FinishedAt) <= turns.ReopenWindow {
					c.Finished = append(c.Finished, r)
				}
			}
			if v.StationID != nil && v.Status.AtStation() {
				if st, ok := at[*v.StationID]; ok {
					id := v.ID
					st.TurnID = &id
				}
			}
		}
		if p.Next == "" {
			break
		}
		page.After = p.Next
	}
	sort.SliceStable(c.Waiting, func(i, j int) bool {
		return platform.Deref(c.Waiting[i].Position, 1<<30) < platform.Deref(c.Waiting[j].Position, 1<<30)
	})
	byTime := func(rs []Row, at func(Row) *time.Time) {
		sort.SliceStable(rs, func(i, j int) bool {
			a, b := at(rs[i]), at(rs[j])
			return a != nil && (b == nil || a.Before(*b))
		})
	}
	byTime(c.Called, func(r Row) *time.Time { return r.CalledAt })
	byTime(c.InService, func(r Row) *time.Time { return r.StartedAt })
	sort.SliceStable(c.Finished, func(i, j int) bool { return c.Finished[i].FinishedAt.After(*c.Finished[j].FinishedAt) })
	return c, nil
}

// For is the console of link l of the queue, drawn from its queue's
// console (QueueConsole): the link's options, the stations it may act for,
// the customers' details only when it shows them. It reads nothing, and
// shares what it does not change with c.
func (c Console) For(l Link) Console {
	c.Link = ConsoleLink{ID: l.ID, Label: l.Label, Language: l.Language, StationIDs: l.StationIDs, ShowDetails: l.ShowDetails}
	if c.Link.StationIDs == nil {
		c.Link.StationIDs = []string{}
	}
	stations := []ConsoleStation{}
	for _, st := range c.Stations {
		if l.MayUse(st.ID) {
			stations = append(stations, st)
		}
	}
	c.Stations = stations
	if !l.ShowDetails {
		for _, rs := range []*[]Row{&c.Waiting, &c.Held, &c.Called, &c.InService, &c.Waitlisted, &c.Finished} {
			out := make([]Row, len(*rs))
			for i, r := range *rs {
				r.Phone, r.FormResponse = nil, nil
				out[i] = r
			}
			*rs = out
		}
	}
	return c
}

func rowOf(v turns.View, details bool) Row {
	r := Row{ID: v.ID, DisplayCode: v.DisplayCode, Status: v.Status, Priority: v.Priority, Position: v.Position,
		PeopleCount: v.PeopleCount, CallCount: v.CallCount, Station: v.Station, CreatedAt: v.CreatedAt,
		ArrivedAt: v.ArrivedAt, CalledAt: v.CalledAt, StartedAt: v.StartedAt, FinishedAt: v.FinishedAt}
	if details {
		r.Phone = v.Phone
		r.FormResponse = v.FormResponse
		if r.FormResponse == nil {
			r.FormResponse = map[string]string{}
		}
	}
	return r
}

// targets are the connected-queue links that start at the queue.
func (s *Service) targets(ctx context.Context, accountID, queueID string) ([]ForwardTarget, error) {
	out := []ForwardTarget{}
	page := platform.PageRequest{Limit: platform.MaxPageLimit}
	for {
		p, err := s.links.List(ctx, accountID, page)
		if err != nil {
			return nil, err
		}
		for _, k := range p.Items {
			if k.FromQueueDefinitionID != queueID {
				continue
			}
			to, err := s.queues.GetQueue(ctx, accountID, k.ToQueueDefinitionID)
			if err != nil {
				if platform.IsCode(err, platform.CodeNotFound) {
					continue
				}
				return nil, err
			}
			out = append(out, ForwardTarget{LinkID: k.ID, QueueID: to.ID, QueueName: to.Name})
		}
		if p.Next == "" {
			break
		}
		page.After = p.Next
	}
	return out, nil
}
