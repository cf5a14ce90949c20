package queues

import (
	"github.com/qms-dev/qms/core/platform"
)

// Priority is the PRIORITY enumeration, most urgent first.
type Priority string

// Priorities.
const (
	PriorityVeryHigh Priority = "VERY_HIGH"
	PriorityHigh     Priority = "HIGH"
	PriorityNormal   Priority = "NORMAL"
	PriorityLow      Priority = "LOW"
)

// Priorities lists the values in dispatch order.
var Priorities = []string{string(PriorityVeryHigh), string(PriorityHigh), string(PriorityNormal), string(PriorityLow)}

// Rank orders priorities for dispatch: 0 is served first.
func (p Priority) Rank() int {
	switch p {
	case PriorityVeryHigh:
		return 0
	case PriorityHigh:
		return 1
	case PriorityLow:
		return 3
	default:
		return 2
	}
}

// Valid reports whether p is a PRIORITY.
func (p Priority) Valid() bool {
	return p == PriorityVeryHigh || p == PriorityHigh || p == PriorityNormal || p == PriorityLow
}

// Queue types.
const (
	TypeTurn        = "TURN"
	TypeAppointment = "APPOINTMENT"
	TypeHybrid      = "HYBRID"
)

// Schedule modes.
const (
	ScheduleAlways = "always"
	ScheduleWeekly = "weekly"
)

// Schedule says when a queue takes turns.
type Schedule struct {
	Mode                *string       `json:"mode"`
	Weekly              []WeeklyHours `json:"weekly"`
	OpensBeforeMinutes  *int          `json:"opensBeforeMinutes"`
	ClosesBeforeMinutes *int          `json:"closesBeforeMinutes"`
	AllowOutsideHours   *bool         `json:"allowOutsideHours"`
	ResetNumberingDaily *bool         `json:"resetNumberingDaily"`
}

// EndOfDay is the close time of an interval that runs to midnight.
const EndOfDay = "24:00"

// WeeklyHours is one opening interval: day 0 is Sunday. Close may be
// EndOfDay, or earlier than Open for an interval that ends the next day.
type WeeklyHours struct {
	Day   *int    `json:"day"`
	Open  *string `json:"open"`
	Close *string `json:"close"`
}

// Capacity bounds the active turns of a run.
type Capacity struct {
	MaxTurns        *int  `json:"maxTurns"`
	WaitlistEnabled *bool `json:"waitlistEnabled"`
	AutoPromote     *bool `json:"autoPromote"`
}

// Geofence is where a customer must be to take a turn.
type Geofence struct {
	RadiusMeters  *int  `json:"radiusMeters"`
	RequireToTake *bool `json:"requireToTake"`
}

// Tolerance is how long a called turn has to show up.
type Tolerance struct {
	GraceMinutes *int  `json:"graceMinutes"`
	AllowReentry *bool `json:"allowReentry"`
	MaxReentries *int  `json:"maxReentries"`
}

// Tolerance-expiry outcomes.
const (
	OnExpiredNoShow = "no_show"
	OnExpiredCancel = "cancel"
	OnExpiredHold   = "hold"
	OnExpiredNone   = "none"
)

// DispatchFlow governs how turns move through dispatch.
type DispatchFlow struct {
	CallOnNext         *bool   `json:"callOnNext"`
	TrackService       *bool   `json:"trackService"`
	OnToleranceExpired *string `json:"onToleranceExpired"`
	AllowReopen        *bool   `json:"allowReopen"`
}

// PreAttention is what a customer answers before taking a turn.
type PreAttention struct {
	Instructions *string    `json:"instructions" text:"free"`
	Questions    []Question `json:"questions"`
}

// Question types.
const (
	QuestionText   = "text"
	QuestionChoice = "choice"
)

// Question is one pre-attention question.
type Question struct {
	ID       *string  `json:"id"`
	Label    *string  `json:"label" text:"name"`
	Type     *string  `json:"type"`
	Required *bool    `json:"required"`
	Options  []Option `json:"options"`
}

// Option is a choice: either a bare label or a label with the prefix and
// priority a turn choosing it gets. On the wire it is a string or an object.
type Option struct {
	Label    *string   `json:"label" text:"name"`
	Prefix   *string   `json:"prefix,omitempty"`
	Priority *Priority `json:"priority,omitempty"`
	// Bare is true when the option arrived as a plain string, so it is
	// returned the way it was given.
	Bare bool `json:"-"`
}

// Help is the customer help panel.
type Help struct {
	Enabled      *bool    `json:"enabled"`
	QuickReplies []string `json:"quickReplies" text:"free"`
}

// Cancellation is the appointment cancellation policy.
type Cancellation struct {
	MinNoticeMinutes *int `json:"minNoticeMinutes"`
}

// Carpool groups customers arriving together.
type Carpool struct {
	Enabled              *bool `json:"enabled"`
	IntakeWindowMinutes  *int  `json:"intakeWindowMinutes"`
	OneActiveTurnPerCode *bool `json:"oneActiveTurnPerCode"`
	AutoArriveOnGeofence *bool `json:"autoArriveOnGeofence"`
}

// ArrivalBoard is the waiting-room screen's layout.
type ArrivalBoard struct {
	Columns      []BoardColumn `json:"columns"`
	ShowSecurity *bool         `json:"showSecurity"`
}

// BoardColumn is one column of the arrival board.
type BoardColumn struct {
	Key   *string `json:"key"`
	Label *string `json:"label" text:"name"`
}

// Offers is the loyalty-points programme.
type Offers struct {
	Enabled   *bool `json:"enabled"`
	MaxPoints *int  `json:"maxPoints"`
}

// SLA is the service-level targets of a queue; both nullable.
type SLA struct {
	MaxWaitMinutes    *int `json:"maxWaitMinutes"`
	MaxServiceMinutes *int `json:"maxServiceMinutes"`
}

// StationInput is the body that creates a station.
type StationInput struct {
	Label       *string `json:"label" text:"name"`
	Description *string `json:"description" text:"free"`
}

func (s *Schedule) validate(v *platform.Validator, path string) {
	if v.Required(platform.Path(path, "mode"), s.Mode != nil) {
		v.OneOf(platform.Path(path, "mode"), *s.Mode, ScheduleAlways, ScheduleWeekly)
	}
	v.MaxItems(platform.Path(path, "weekly"), len(s.Weekly), 14)
	for i, w := range s.Weekly {
		p := platform.Index(platform.Path(path, "weekly"), i)
		if v.Required(platform.Path(p, "day"), w.Day != nil) {
			v.Range(platform.Path(p, "day"), *w.Day, 0, 6)
		}
		okOpen := v.Required(platform.Path(p, "open"), w.Open != nil) && v.ClockTime(platform.Path(p, "open"), *w.Open)
		// close may be 24:00 (the end of the day), and may be earlier than
		// open: the interval then runs past midnight into the next day.
		okClose := v.Required(platform.Path(p, "close"), w.Close != nil) &&
			(*w.Close == EndOfDay || v.ClockTime(platform.Path(p, "close"), *w.Close))
		if okOpen && okClose && *w.Close == *w.Open {
			v.Fail(platform.Path(p, "close"), "not_open", "must differ from open (00:00 to 24:00 is the whole day)")
		}
	}
	v.OptRange(platform.Path(path, "opensBeforeMinutes"), s.OpensBeforeMinutes, 0, 1440)
	v.OptRange(platform.Path(path, "closesBeforeMinutes"), s.ClosesBeforeMinutes, 0, 1440)
}

func (c *Capacity) validate(v *platform.Validator, path string) {
	if c.MaxTurns != nil && *c.MaxTurns <= 0 {
		v.Fail(platform.Path(path, "maxTurns"), "min", "must be greater than 0")
	}
}

func (c *Capacity) defaults() {
	if c.WaitlistEnabled == nil {
		c.WaitlistEnabled = platform.Ptr(false)
	}
	if c.AutoPromote == nil {
		c.AutoPromote = platform.Ptr(true)
	}
}

func (g *Geofence) validate(v *platform.Validator, path string) {
	if v.Required(platform.Path(path, "radiusMeters"), g.RadiusMeters != nil) {
		v.Range(platform.Path(path, "radiusMeters"), *g.RadiusMeters, 1, 50000)
	}
}

func (g *Geofence) defaults() {
	if g.RequireToTake == nil {
		g.RequireToTake = platform.Ptr(false)
	}
}

func (t *Tolerance) validate(v *platform.Validator, path string) {
	if v.Required(platform.Path(path, "graceMinutes"), t.GraceMinutes != nil) {
		v.Range(platform.Path(path, "graceMinutes"), *t.GraceMinutes, 0, 120)
	}
	v.OptRange(platform.Path(path, "maxReentries"), t.MaxReentries, 0, 10)
}

func (t *Tolerance) defaults() {
	if t.AllowReentry == nil {
		t.AllowReentry = platform.Ptr(true)
	}
	if t.MaxReentries == nil {
		t.MaxReentries = platform.Ptr(1)
	}
}

func (d *DispatchFlow) validate(v *platform.Validator, path string) {
	if d.OnToleranceExpired != nil {
		v.OneOf(platform.Path(path, "onToleranceExpired"), *d.OnToleranceExpired,
			OnExpiredNoShow, OnExpiredCancel, OnExpiredHold, OnExpiredNone)
	}
}

// defaults fills what the spec defaults: callOnNext and trackService true,
// onToleranceExpired no_show, allowReopen false.
func (d *DispatchFlow) defaults() {
	if d.CallOnNext == nil {
		d.CallOnNext = platform.Ptr(true)
	}
	if d.TrackService == nil {
		d.TrackService = platform.Ptr(true)
	}
	if d.OnToleranceExpired == nil {
		d.OnToleranceExpired = platform.Ptr(OnExpiredNoShow)
	}
	if d.AllowReopen == nil {
		d.AllowReopen = platform.Ptr(false)
	}
}

func (p *PreAttention) validate(v *platform.Validator, path string) {
	v.OptLen(platform.Path(path, "instructions"), p.Instructions, 0, 500)
	qpath := platform.Path(path, "questions")
	v.MaxItems(qpath, len(p.Questions), 10)
	seen := map[string]bool{}
	for i, q := range p.Questions {
		qp := platform.Index(qpath, i)
		if v.Required(platform.Path(qp, "id"), q.ID != nil) {
			v.Len(platform.Path(qp, "id"), *q.ID, 1, 40)
			if seen[*q.ID] {
				v.Fail(platform.Path(qp, "id"), "unique", "duplicates the id of another question")
			}
			seen[*q.ID] = true
		}
		if v.Required(platform.Path(qp, "label"), q.Label != nil) {
			v.Len(platform.Path(qp, "label"), *q.Label, 1, 160)
		}
		if q.Type != nil {
			v.OneOf(platform.Path(qp, "type"), *q.Type, QuestionText, QuestionChoice)
		}
		opath := platform.Path(qp, "options")
		v.MaxItems(opath, len(q.Options), 12)
		for j, o := range q.Options {
			op := platform.Index(opath, j)
			lp := op
			if !o.Bare {
				lp = platform.Path(op, "label")
			}
			if v.Required(lp, o.Label != nil) {
				v.Len(lp, *o.Label, 1, 80)
			}
			v.OptLen(platform.Path(op, "prefix"), o.Prefix, 0, 4)
			if o.Priority != nil && !o.Priority.Valid() {
				v.OneOf(platform.Path(op, "priority"), string(*o.Priority), Priorities...)
			}
		}
		if q.Type != nil && *q.Type == QuestionChoice && len(q.Options) == 0 {
			v.Fail(opath, "min_items", "a choice question needs at least one option")
		}
	}
}

func (p *PreAttention) defaults() {
	if p.Questions == nil {
		p.Questions = []Question{}
	}
	for i := range p.Questions {
		q := &p.Questions[i]
		if q.Type == nil {
			q.Type = platform.Ptr(QuestionText)
		}
		if q.Required == nil {
			q.Required = platform.Ptr(false)
		}
		if q.Options == nil {
			q.Options = []Option{}
		}
	}
}

func (h *Help) validate(v *platform.Validator, path string) {
	qp := platform.Path(path, "quickReplies")
	v.MaxItems(qp, len(h.QuickReplies), 12)
	for i, r := range h.QuickReplies {
		v.Len(platform.Index(qp, i), r, 1, 120)
	}
}

func (h *Help) defaults() {
	if h.Enabled == nil {
		h.Enabled = platform.Ptr(false)
	}
	if h.QuickReplies == nil {
		h.QuickReplies = []string{}
	}
}

func (c *Cancellation) validate(v *platform.Validator, path string) {
	if v.Required(platform.Path(path, "minNoticeMinutes"), c.MinNoticeMinutes != nil) {
		v.Range(platform.Path(path, "minNoticeMinutes"), *c.MinNoticeMinutes, 0, 100000)
	}
}

func (c *Carpool) validate(v *platform.Validator, path string) {
	v.OptRange(platform.Path(path, "intakeWindowMinutes"), c.IntakeWindowMinutes, 0, 1440)
}

func (c *Carpool) defaults() {
	if c.Enabled == nil {
		c.Enabled = platform.Ptr(false)
	}
}

func (a *ArrivalBoard) validate(v *platform.Validator, path string) {
	cp := platform.Path(path, "columns")
	if v.Required(cp, a.Columns != nil) {
		v.MaxItems(cp, len(a.Columns), 12)
	}
	for i, c := range a.Columns {
		p := platform.Index(cp, i)
		if v.Required(platform.Path(p, "key"), c.Key != nil) {
			v.Len(platform.Path(p, "key"), *c.Key, 1, 40)
		}
		if v.Required(platform.Path(p, "label"), c.Label != nil) {
			v.Len(platform.Path(p, "label"), *c.Label, 1, 40)
		}
	}
}

func (o *Offers) validate(v *platform.Validator, path string) {
	v.OptRange(platform.Path(path, "maxPoints"), o.MaxPoints, 1, 100000)
}

func (o *Offers) defaults() {
	if o.Enabled == nil {
		o.Enabled = platform.Ptr(false)
	}
	if o.MaxPoints == nil {
		o.MaxPoints = platform.Ptr(100)
	}
}

func (s *SLA) validate(v *platform.Validator, path string) {
	v.OptRange(platform.Path(path, "maxWaitMinutes"), s.MaxWaitMinutes, 0, 100000)
	v.OptRange(platform.Path(path, "maxServiceMinutes"), s.MaxServiceMinutes, 0, 100000)
}

func (s *StationInput) validate(v *platform.Validator, path string) {
	if v.Required(platform.Path(path, "label"), s.Label != nil) {
		v.Len(platform.Path(path, "label"), *s.Label, 1, 40)
	}
	v.OptLen(platform.Path(path, "description"), s.Description, 0, 160)
}
