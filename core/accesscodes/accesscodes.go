// Package accesscodes is the access-code domain (spec 2.6, 4.5): codes an
// account hands out so that a customer may take a turn in a queue whose
// accessCodeRequired is set, each with a scope (the account, one entity or
// one queue), a use budget, an expiry and what it gives the turn (prefix,
// priority, classification, properties).
package accesscodes

import (
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// Scope types of spec 2.6.
const (
	ScopeAccount = "account"
	ScopeEntity  = "entity"
	ScopeQueue   = "queue"
)

// Bounds of spec 2.6 and 8.
const (
	MaxCodeLength  = 32
	MaxUsesLimit   = 1000000
	MaxBulkCodes   = 1000
	MaxScopeID     = 128
	MaxPrefix      = 4
	MaxClassifying = 60
)

// AccessCode is a stored code. Uses counts the turns that took it; a code
// is usable while Enabled, before ExpiresAt and while Uses < MaxUses.
type AccessCode struct {
	ID             string         `json:"id"`
	AccountID      string         `json:"-"`
	Code           string         `json:"code"`
	ScopeType      string         `json:"scopeType"`
	ScopeID        *string        `json:"scopeId"`
	MaxUses        *int           `json:"maxUses"`
	Uses           int            `json:"uses"`
	ExpiresAt      *time.Time     `json:"expiresAt"`
	Prefix         *string        `json:"prefix"`
	Classification *string        `json:"classification"`
	Priority       *string        `json:"priority"`
	Properties     map[string]any `json:"properties"`
	Enabled        bool           `json:"enabled"`
	DisabledAt     *time.Time     `json:"disabledAt"`
	CreatedAt      time.Time      `json:"createdAt"`
	UpdatedAt      time.Time      `json:"updatedAt"`
}

// CreateInput is the access-code body of spec 2.6. ExpiresAt stays a
// string so a malformed date is reported by Validate with its path, like
// every other rule, rather than as a JSON type error.
type CreateInput struct {
	Code           *string        `json:"code"`
	ScopeType      *string        `json:"scopeType"`
	ScopeID        *string        `json:"scopeId"`
	MaxUses        *int           `json:"maxUses"`
	ExpiresAt      *string        `json:"expiresAt"`
	Prefix         *string        `json:"prefix"`
	Classification *string        `json:"classification"`
	Priority       *string        `json:"priority"`
	Properties     map[string]any `json:"properties" text:"free"`
}

// BulkInput is the bulk body: 1 to 1000 codes.
type BulkInput struct {
	Codes []CreateInput `json:"codes"`
}

// Validate checks every field and bound of spec 2.6.
func (in *CreateInput) Validate() error {
	var v platform.Validator
	in.validate(&v, "")
	return v.Err()
}

func (in *CreateInput) validate(v *platform.Validator, path string) {
	p := func(f string) string { return platform.Path(path, f) }
	if v.Required(p("code"), in.Code != nil) {
		v.Len(p("code"), *in.Code, 1, MaxCodeLength)
	}
	scope := ScopeAccount
	if in.ScopeType != nil && v.OneOf(p("scopeType"), *in.ScopeType, ScopeAccount, ScopeEntity, ScopeQueue) {
		scope = *in.ScopeType
	}
	if in.ScopeID != nil {
		v.Len(p("scopeId"), *in.ScopeID, 1, MaxScopeID)
	}
	// scopeId names what scopeType points at: required for entity and queue,
	// and meaningless (so refused, rather than silently dropped) for account.
	switch {
	case (scope == ScopeEntity || scope == ScopeQueue) && in.ScopeID == nil:
		v.Fail(p("scopeId"), "required", "is required when scopeType is %s", scope)
	case scope == ScopeAccount && in.ScopeID != nil && (in.ScopeType == nil || *in.ScopeType == ScopeAccount):
		v.Fail(p("scopeId"), "forbidden", "must be absent when scopeType is account")
	}
	if in.MaxUses != nil && *in.MaxUses <= 0 {
		v.Fail(p("maxUses"), "min", "must be greater than 0")
	}
	if in.MaxUses != nil && *in.MaxUses > MaxUsesLimit {
		v.Fail(p("maxUses"), "max", "must be at most %d", MaxUsesLimit)
	}
	if in.ExpiresAt != nil {
		if at, err := time.Parse(time.RFC3339, *in.ExpiresAt); err != nil {
			v.Fail(p("expiresAt"), "date_time", "must be an RFC 3339 date-time such as 2030-01-31T18:00:00Z")
		} else if y := at.UTC().Year(); y < 1 || y > 9999 {
			// In UTC, as it is stored and answered: 9999-12-31T23:00:00-05:00
			// is in year 10000, which no answer can carry (a 500 before
			// issue 23).
			v.Fail(p("expiresAt"), "range", "must be an instant from year 1 to year 9999 in UTC")
		}
	}
	v.OptLen(p("prefix"), in.Prefix, 0, MaxPrefix)
	v.OptLen(p("classification"), in.Classification, 0, MaxClassifying)
	if in.Priority != nil {
		v.OneOf(p("priority"), *in.Priority, queues.Priorities...)
	}
}

// Validate checks the bulk body, naming each failing item by its index
// ("codes[3].maxUses").
func (in *BulkInput) Validate() error {
	var v platform.Validator
	if v.Required("codes", in.Codes != nil) {
		v.MinItems("codes", len(in.Codes), 1)
		v.MaxItems("codes", len(in.Codes), MaxBulkCodes)
	}
	if len(in.Codes) <= MaxBulkCodes {
		for i := range in.Codes {
			in.Codes[i].validate(&v, platform.Index("codes", i))
		}
	}
	return v.Err()
}

// newCode builds the stored code from a validated body.
func newCode(accountID string, in *CreateInput, now time.Time) AccessCode {
	c := AccessCode{
		ID: platform.NewID(platform.PrefixAccessCode), AccountID: accountID, Code: *in.Code,
		ScopeType: platform.Deref(in.ScopeType, ScopeAccount), ScopeID: in.ScopeID, MaxUses: in.MaxUses,
		Prefix: in.Prefix, Classification: in.Classification, Priority: in.Priority,
		Properties: in.Properties, Enabled: true, CreatedAt: now, UpdatedAt: now,
	}
	if c.ScopeType == ScopeAccount {
		c.ScopeID = nil
	}
	if in.ExpiresAt != nil {
		t, _ := time.Parse(time.RFC3339, *in.ExpiresAt) // validated
		t = t.UTC()
		c.ExpiresAt = &t
	}
	if c.Properties == nil {
		c.Properties = map[string]any{}
	}
	return c
}

// Target is where a code is about to be used: the queue of the run a turn
// is taken in, and that queue's entity.
type Target struct {
	QueueID  string
	EntityID string
}

// InScope reports whether the code may be used in the target queue.
func (c AccessCode) InScope(t Target) bool {
	switch c.ScopeType {
	case ScopeEntity:
		return c.ScopeID != nil && *c.ScopeID == t.EntityID
	case ScopeQueue:
		return c.ScopeID != nil && *c.ScopeID == t.QueueID
	default:
		return true
	}
}

// Exhausted reports whether every allowed use has been taken.
func (c AccessCode) Exhausted() bool { return c.MaxUses != nil && c.Uses >= *c.MaxUses }

// Expired reports whether the code has expired at now. A code expires at
// its expiresAt instant: usable strictly before it.
func (c AccessCode) Expired(now time.Time) bool {
	return c.ExpiresAt != nil && !now.Before(*c.ExpiresAt)
}

// Usable returns nil when a turn in the target may take the code at now,
// else the refusal, naming the first reason in this order: disabled,
// out of scope, expired, exhausted.
func (c AccessCode) Usable(t Target, now time.Time) error {
	d := map[string]any{"field": "accessCode", "accessCodeId": c.ID}
	switch {
	case !c.Enabled:
		return platform.Unprocessable(CodeDisabled, "the access code is disabled", d)
	case !c.InScope(t):
		d["scopeType"], d["scopeId"] = c.ScopeType, c.ScopeID
		return platform.Unprocessable(CodeOutOfScope, "the access code is not valid for this queue", d)
	case c.Expired(now):
		d["expiresAt"] = c.ExpiresAt
		return platform.Unprocessable(CodeExpired, "the access code has expired", d)
	case c.Exhausted():
		d["maxUses"], d["uses"] = *c.MaxUses, c.Uses
		return platform.Unprocessable(CodeExhausted, "the access code has no uses left", d)
	}
	return nil
}
