// Package accounts is the platform's account and API-key domain: accounts
// on a plan, API keys with scopes, and authentication of a presented key.
package accounts

import (
	"time"
)

// Plan is an account's billing plan; only premium accounts reach the API.
type Plan string

// The plans.
const (
	PlanPremium Plan = "premium"
	PlanFree    Plan = "free"
)

// Valid reports whether p is a known plan.
func (p Plan) Valid() bool { return p == PlanPremium || p == PlanFree }

// Account owns every other resource.
type Account struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Plan      Plan      `json:"plan"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// APIKey is a key's stored record. The key value itself is never stored:
// only its SHA-256 hash and a short display prefix.
type APIKey struct {
	ID         string     `json:"id"`
	AccountID  string     `json:"accountId"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Hash       string     `json:"-"`
	Scopes     []Scope    `json:"scopes"`
	CreatedAt  time.Time  `json:"createdAt"`
	RevokedAt  *time.Time `json:"revokedAt"`
	LastUsedAt *time.Time `json:"-"`
}

// Revoked reports whether the key was revoked.
func (k APIKey) Revoked() bool { return k.RevokedAt != nil }

// Principal is an authenticated caller: a live key of a premium account.
type Principal struct {
	AccountID string
	KeyID     string
	Scopes    ScopeSet
}
