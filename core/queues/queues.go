// Package queues is the queue-definition domain (spec 2.1, 2.2, 4.1):
// queues and their settings, stations, and runs with their intake.
package queues

import (
	"time"

	"github.com/qms-dev/qms/core/location"
	"github.com/qms-dev/qms/core/platform"
)

// Queue is a queue definition with every setting of spec 2.1, defaults
// applied.
type Queue struct {
	ID                 string             `json:"id"`
	AccountID          string             `json:"-"`
	EntityID           string             `json:"entityId"`
	Name               string             `json:"name"`
	Type               string             `json:"type"`
	Subtitle           *string            `json:"subtitle"`
	ProcessName        *string            `json:"processName"`
	LocationID         *string            `json:"locationId"`
	Location           *location.Location `json:"location"`
	Schedule           Schedule           `json:"schedule"`
	Capacity           Capacity           `json:"capacity"`
	Geofence           *Geofence          `json:"geofence"`
	Tolerance          Tolerance          `json:"tolerance"`
	DispatchFlow       DispatchFlow       `json:"dispatchFlow"`
	PreAttention       PreAttention       `json:"preAttention"`
	Help               Help               `json:"help"`
	TransferEnabled    bool               `json:"transferEnabled"`
	WhatsappCapture    bool               `json:"whatsappCapture"`
	AccessCodeRequired bool               `json:"accessCodeRequired"`
	Cancellation       *Cancellation      `json:"cancellation"`
	Carpool            Carpool            `json:"carpool"`
	ArrivalBoard       *ArrivalBoard      `json:"arrivalBoard"`
	Offers             Offers             `json:"offers"`
	SLA                SLA                `json:"sla"`
	Dispatchers        int                `json:"dispatchers"`
	TurnPrefix         string             `json:"turnPrefix"`
	TurnPadding        int                `json:"turnPadding"`
	CreatedAt          time.Time          `json:"createdAt"`
	UpdatedAt          time.Time          `json:"updatedAt"`
	// BranchTimezone is its entity's location.timezone, read with the
	// queue (never stored with it), so a change of the branch's zone is
	// seen by its queues at once.
	BranchTimezone *string `json:"-"`
	// Timezone is the name of Zone, shown read-only; ResolveZone sets it
	// wherever a queue is read or changed.
	Timezone string `json:"timezone"`
}

// ResolveZone sets Timezone to the zone in effect.
func (q *Queue) ResolveZone() { q.Timezone = q.Zone().String() }

// Zone is the time zone every rule of the queue that reads a local time
// uses (schedule, daily numbering, slots, analytics days): its own
// location.timezone, else its entity's, else UTC.
func (q Queue) Zone() *time.Location {
	if q.Location != nil && q.Location.Timezone != nil && *q.Location.Timezone != "" {
		return q.Location.Zone()
	}
	return (&location.Location{Timezone: q.BranchTimezone}).Zone()
}

// Grace is how long a called turn has before tolerance expires. A queue
// without a tolerance object has no expiry.
func (q Queue) Grace() (time.Duration, bool) {
	if q.Tolerance.GraceMinutes == nil {
		return 0, false
	}
	return time.Duration(*q.Tolerance.GraceMinutes) * time.Minute, true
}

// Station is a service point of a queue (spec 2.2).
type Station struct {
	ID          string    `json:"id"`
	AccountID   string    `json:"-"`
	QueueID     string    `json:"queueId"`
	Label       string    `json:"label"`
	Description *string   `json:"description"`
	CreatedAt   time.Time `json:"createdAt"`
}

// Run statuses.
const (
	RunOpen   = "OPEN"
	RunClosed = "CLOSED"
)

// Run is an instance of a queue: it is opened and closed, and its intake of
// new turns can close while it keeps serving the turns it has.
type Run struct {
	ID         string     `json:"id"`
	AccountID  string     `json:"-"`
	QueueID    string     `json:"queueId"`
	Status     string     `json:"status"`
	IntakeOpen bool       `json:"intakeOpen"`
	OpenedAt   *time.Time `json:"openedAt"`
	ClosedAt   *time.Time `json:"closedAt"`
	CreatedAt  time.Time  `json:"createdAt"`
	UpdatedAt  time.Time  `json:"updatedAt"`
}

// Open reports whether the run is open.
func (r Run) Open() bool { return r.Status == RunOpen }

// QueueView is a queue with its stations and recent runs, newest first: the
// create response and the single read.
type QueueView struct {
	Queue
	Stations []Station `json:"stations"`
	Runs     []Run     `json:"runs"`
}

// CreateInput is the queue create body (spec 2.1).
type CreateInput struct {
	EntityID           *string            `json:"entityId"`
	Name               *string            `json:"name" text:"name"`
	Type               *string            `json:"type"`
	Subtitle           *string            `json:"subtitle" text:"name"`
	ProcessName        *string            `json:"processName" text:"name"`
	LocationID         *string            `json:"locationId"`
	Location           *location.Location `json:"location"`
	Schedule           *Schedule          `json:"schedule"`
	Capacity           *Capacity          `json:"capacity"`
	Geofence           *Geofence          `json:"geofence"`
	Tolerance          *Tolerance         `json:"tolerance"`
	DispatchFlow       *DispatchFlow      `json:"dispatchFlow"`
	PreAttention       *PreAttention      `json:"preAttention"`
	Stations           []StationInput     `json:"stations"`
	Help               *Help              `json:"help"`
	TransferEnabled    *bool              `json:"transferEnabled"`
	WhatsappCapture    *bool              `json:"whatsappCapture"`
	AccessCodeRequired *bool              `json:"accessCodeRequired"`
	Cancellation       *Cancellation      `json:"cancellation"`
	Carpool            *Carpool           `json:"carpool"`
	ArrivalBoard       *ArrivalBoard      `json:"arrivalBoard"`
	Offers             *Offers            `json:"offers"`
	SLA                *SLA               `json:"sla"`
	Dispatchers        *int               `json:"dispatchers"`
	TurnPrefix         *string            `json:"turnPrefix"`
	TurnPadding        *int               `json:"turnPadding"`
}

// Validate checks every field and bound of spec 2.1 and reports all
// failures at once.
func (in *CreateInput) Validate() error {
	var v platform.Validator
	if v.Required("entityId", in.EntityID != nil) {
		v.Len("entityId", *in.EntityID, 1, 128)
	}
	if v.Required("name", in.Name != nil) {
		v.Len("name", *in.Name, 2, 120)
	}
	if v.Required("type", in.Type != nil) {
		v.OneOf("type", *in.Type, TypeTurn, TypeAppointment, TypeHybrid)
	}
	v.OptLen("subtitle", in.Subtitle, 0, 160)
	v.OptLen("processName", in.ProcessName, 0, 120)
	v.OptLen("locationId", in.LocationID, 1, 128)
	if in.Location != nil {
		in.Location.Validate(&v, "location")
	}
	if in.Schedule != nil {
		in.Schedule.validate(&v, "schedule")
	}
	if in.Capacity != nil {
		in.Capacity.validate(&v, "capacity")
	}
	if in.Geofence != nil {
		in.Geofence.validate(&v, "geofence")
	}
	if in.Tolerance != nil {
		in.Tolerance.validate(&v, "tolerance")
	}
	if in.DispatchFlow != nil {
		in.DispatchFlow.validate(&v, "dispatchFlow")
	}
	if in.PreAttention != nil {
		in.PreAttention.validate(&v, "preAttention")
	}
	v.MaxItems("stations", len(in.Stations), MaxStations)
	for i := range in.Stations {
		in.Stations[i].validate(&v, platform.Index("stations", i))
	}
	if in.Help != nil {
		in.Help.validate(&v, "help")
	}
	if in.Cancellation != nil {
		in.Cancellation.validate(&v, "cancellation")
	}
	if in.Carpool != nil {
		in.Carpool.validate(&v, "carpool")
	}
	if in.ArrivalBoard != nil {
		in.ArrivalBoard.validate(&v, "arrivalBoard")
	}
	if in.Offers != nil {
		in.Offers.validate(&v, "offers")
	}
	if in.SLA != nil {
		in.SLA.validate(&v, "sla")
	}
	v.OptRange("dispatchers", in.Dispatchers, 0, 100)
	v.OptLen("turnPrefix", in.TurnPrefix, 0, 4)
	v.OptRange("turnPadding", in.TurnPadding, 0, 8)
	return v.Err()
}

// MaxStations is the most stations a queue can have.
const MaxStations = 30

// newQueue builds the stored queue from a validated body, applying every
// default of spec 2.1.
func newQueue(accountID string, in *CreateInput, now time.Time) Queue {
	q := Queue{
		ID:                 platform.NewID(platform.PrefixQueue),
		AccountID:          accountID,
		EntityID:           *in.EntityID,
		Name:               *in.Name,
		Type:               *in.Type,
		Subtitle:           in.Subtitle,
		ProcessName:        in.ProcessName,
		LocationID:         in.LocationID,
		Location:           in.Location,
		Geofence:           in.Geofence,
		TransferEnabled:    platform.Deref(in.TransferEnabled, false),
		WhatsappCapture:    platform.Deref(in.WhatsappCapture, true),
		AccessCodeRequired: platform.Deref(in.AccessCodeRequired, false),
		Cancellation:       in.Cancellation,
		ArrivalBoard:       in.ArrivalBoard,
		Dispatchers:        platform.Deref(in.Dispatchers, 1),
		TurnPrefix:         platform.Deref(in.TurnPrefix, ""),
		TurnPadding:        platform.Deref(in.TurnPadding, 0),
		CreatedAt:          now,
		UpdatedAt:          now,
	}
	if in.Schedule != nil {
		q.Schedule = *in.Schedule
	} else {
		q.Schedule.Mode = platform.Ptr(ScheduleAlways)
	}
	if q.Schedule.Weekly == nil {
		q.Schedule.Weekly = []WeeklyHours{}
	}
	if in.Capacity != nil {
		q.Capacity = *in.Capacity
	}
	q.Capacity.defaults()
	if q.Geofence != nil {
		q.Geofence.defaults()
	}
	if in.Tolerance != nil {
		q.Tolerance = *in.Tolerance
	}
	// The re-entry rules apply with or without a grace period (which alone
	// makes calls expire), so a read shows the ones enforced.
	q.Tolerance.defaults()
	if in.DispatchFlow != nil {
		q.DispatchFlow = *in.DispatchFlow
	}
	q.DispatchFlow.defaults()
	if in.PreAttention != nil {
		q.PreAttention = *in.PreAttention
	}
	q.PreAttention.defaults()
	if in.Help != nil {
		q.Help = *in.Help
	}
	q.Help.defaults()
	if in.Carpool != nil {
		q.Carpool = *in.Carpool
	}
	q.Carpool.defaults()
	if in.Offers != nil {
		q.Offers = *in.Offers
	}
	q.Offers.defaults()
	if in.SLA != nil {
		q.SLA = *in.SLA
	}
	return q
}

// DispatchFlowInput is PUT /queues/{id}/dispatch-flow: every field optional;
// a field left out keeps its current value.
type DispatchFlowInput = DispatchFlow

// WhatsappCaptureInput is PUT /queues/{id}/whatsapp-capture.
type WhatsappCaptureInput struct {
	WhatsappCapture *bool `json:"whatsappCapture"`
}

// NumberingResetInput is PUT /queues/{id}/numbering-reset.
type NumberingResetInput struct {
	ResetNumberingDaily *bool `json:"resetNumberingDaily"`
}

// CancellationPolicyInput is PUT /queues/{id}/cancellation-policy: null
// removes the policy.
type CancellationPolicyInput struct {
	MinNoticeMinutes platform.Patch[int] `json:"minNoticeMinutes"`
}

// SLAInput is PUT /queues/{id}/sla: both fields nullable; a PUT replaces
// both, so an absent field is null.
type SLAInput = SLA
