// Package workflow is the connected-queues domain (spec 2.8, 4.7 and the
// forward operation of 4.3): links from a source queue to a destination
// queue, the conditions that decide whether a completed turn follows a
// link, and the forwarding that creates the turn in the destination.
package workflow

import (
	"strings"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// Triggers of spec 2.8.
const (
	// TriggerComplete forwards a turn when it completes in the source queue.
	TriggerComplete = "complete"
	// TriggerManual forwards only on POST /turns/{turnId}/forward.
	TriggerManual = "manual"
)

// Condition sources and operators of spec 2.8.
const (
	SourceAnswer   = "answer"
	SourcePriority = "priority"

	OpEq       = "eq"
	OpNeq      = "neq"
	OpContains = "contains"
)

// Bounds of spec 2.8.
const (
	MaxConditions = 10
	MaxKey        = 60
	MaxValue      = 120
	MaxQueueID    = 128
)

// Link is a connection from one queue to another.
type Link struct {
	ID                    string      `json:"id"`
	AccountID             string      `json:"-"`
	FromQueueDefinitionID string      `json:"fromQueueDefinitionId"`
	ToQueueDefinitionID   string      `json:"toQueueDefinitionId"`
	Trigger               string      `json:"trigger"`
	KeepNumber            bool        `json:"keepNumber"`
	KeepFormResponse      bool        `json:"keepFormResponse"`
	Conditions            []Condition `json:"conditions"`
	CreatedAt             time.Time   `json:"createdAt"`
	UpdatedAt             time.Time   `json:"updatedAt"`
}

// Condition is one test a turn must pass to follow a link. Every field is
// a pointer so that the same type is the body (where presence matters)
// and the stored value (always complete once validated).
type Condition struct {
	Source   *string `json:"source"`
	Key      *string `json:"key,omitempty"`
	Operator *string `json:"operator"`
	Value    *string `json:"value" text:"free"`
}

// Subject is what conditions are evaluated on: the completed turn's
// answers and priority.
type Subject struct {
	FormResponse map[string]string
	Priority     string
}

// Holds reports whether the condition holds for the subject. Comparisons
// ignore case, since answers are typed by people ("Yes", "yes"); contains
// looks for value inside the compared text. An unanswered question compares
// as the empty string: eq and contains fail, neq holds.
func (c Condition) Holds(s Subject) bool {
	var got string
	switch platform.Deref(c.Source, "") {
	case SourceAnswer:
		got = s.FormResponse[platform.Deref(c.Key, "")]
	case SourcePriority:
		got = s.Priority
	default:
		return false
	}
	want := platform.Deref(c.Value, "")
	switch platform.Deref(c.Operator, "") {
	case OpEq:
		return strings.EqualFold(got, want)
	case OpNeq:
		return !strings.EqualFold(got, want)
	case OpContains:
		return strings.Contains(strings.ToLower(got), strings.ToLower(want))
	}
	return false
}

// Matches reports whether every condition of the link holds (a link
// without conditions matches every turn).
func (l Link) Matches(s Subject) bool {
	for _, c := range l.Conditions {
		if !c.Holds(s) {
			return false
		}
	}
	return true
}

// CreateInput is the link body of spec 2.8.
type CreateInput struct {
	FromQueueDefinitionID *string     `json:"fromQueueDefinitionId"`
	ToQueueDefinitionID   *string     `json:"toQueueDefinitionId"`
	Trigger               *string     `json:"trigger"`
	KeepNumber            *bool       `json:"keepNumber"`
	KeepFormResponse      *bool       `json:"keepFormResponse"`
	Conditions            []Condition `json:"conditions"`
}

// UpdateInput is the PATCH body. Spec 2.8: "on update all fields except the
// two queue ids are optional and have no defaults", so the two queue ids
// are required (they may re-point the link, checked as on create) and every
// other field absent keeps its value; null is refused rather than read as
// "absent" or "default". conditions, when given, replaces the list ([]
// removes every condition).
type UpdateInput struct {
	FromQueueDefinitionID *string                     `json:"fromQueueDefinitionId"`
	ToQueueDefinitionID   *string                     `json:"toQueueDefinitionId"`
	Trigger               platform.Patch[string]      `json:"trigger"`
	KeepNumber            platform.Patch[bool]        `json:"keepNumber"`
	KeepFormResponse      platform.Patch[bool]        `json:"keepFormResponse"`
	Conditions            platform.Patch[[]Condition] `json:"conditions"`
}

func validateEnds(v *platform.Validator, from, to *string) {
	if v.Required("fromQueueDefinitionId", from != nil) {
		v.Len("fromQueueDefinitionId", *from, 1, MaxQueueID)
	}
	if v.Required("toQueueDefinitionId", to != nil) {
		v.Len("toQueueDefinitionId", *to, 1, MaxQueueID)
	}
	if from != nil && to != nil && *from == *to && *from != "" {
		v.Fail("toQueueDefinitionId", "distinct", "a queue cannot link to itself")
	}
}

func validateTrigger(v *platform.Validator, t *string) {
	if t != nil {
		v.OneOf("trigger", *t, TriggerComplete, TriggerManual)
	}
}

func validateConditions(v *platform.Validator, cs []Condition) {
	v.MaxItems("conditions", len(cs), MaxConditions)
	for i, c := range cs {
		p := func(f string) string { return platform.Path(platform.Index("conditions", i), f) }
		if v.Required(p("source"), c.Source != nil) {
			v.OneOf(p("source"), *c.Source, SourceAnswer, SourcePriority)
		}
		v.OptLen(p("key"), c.Key, 0, MaxKey)
		// An answer condition compares one question's answer: without a key
		// there is nothing to compare. A priority condition ignores key.
		if c.Source != nil && *c.Source == SourceAnswer && (c.Key == nil || *c.Key == "") {
			v.Fail(p("key"), "required", "is required when source is answer")
		}
		if v.Required(p("operator"), c.Operator != nil) {
			v.OneOf(p("operator"), *c.Operator, OpEq, OpNeq, OpContains)
		}
		if v.Required(p("value"), c.Value != nil) {
			v.Len(p("value"), *c.Value, 1, MaxValue)
		}
	}
}

// Validate checks every field and bound of spec 2.8.
func (in *CreateInput) Validate() error {
	var v platform.Validator
	validateEnds(&v, in.FromQueueDefinitionID, in.ToQueueDefinitionID)
	validateTrigger(&v, in.Trigger)
	validateConditions(&v, in.Conditions)
	return v.Err()
}

// Validate checks the PATCH body.
func (in *UpdateInput) Validate() error {
	var v platform.Validator
	validateEnds(&v, in.FromQueueDefinitionID, in.ToQueueDefinitionID)
	notNull := func(path string, set, null bool) bool {
		if set && null {
			v.Fail(path, "not_null", "cannot be null")
		}
		return set && !null
	}
	if notNull("trigger", in.Trigger.Set, in.Trigger.Null) {
		validateTrigger(&v, &in.Trigger.Value)
	}
	notNull("keepNumber", in.KeepNumber.Set, in.KeepNumber.Null)
	notNull("keepFormResponse", in.KeepFormResponse.Set, in.KeepFormResponse.Null)
	if notNull("conditions", in.Conditions.Set, in.Conditions.Null) {
		validateConditions(&v, in.Conditions.Value)
	}
	return v.Err()
}

// normalise stores a priority condition without its key (it is ignored),
// so what is returned says what is evaluated.
func normalise(cs []Condition) []Condition {
	out := make([]Condition, len(cs))
	for i, c := range cs {
		if *c.Source == SourcePriority {
			c.Key = nil
		}
		out[i] = c
	}
	return out
}
