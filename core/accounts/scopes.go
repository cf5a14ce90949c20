package accounts

import "strings"

// Scope is "module:action" (spec section 5).
type Scope string

// Every scope a key can hold.
const (
	ScopeQueuesRead        Scope = "queues:read"
	ScopeQueuesWrite       Scope = "queues:write"
	ScopeTurnsRead         Scope = "turns:read"
	ScopeTurnsWrite        Scope = "turns:write"
	ScopeDispatchWrite     Scope = "dispatch:write"
	ScopeAppointmentsRead  Scope = "appointments:read"
	ScopeAppointmentsWrite Scope = "appointments:write"
	ScopeAccessCodesRead   Scope = "access-codes:read"
	ScopeAccessCodesWrite  Scope = "access-codes:write"
	ScopeWorkflowRead      Scope = "workflow:read"
	ScopeWorkflowWrite     Scope = "workflow:write"
	ScopeEntitiesRead      Scope = "entities:read"
	ScopeEntitiesWrite     Scope = "entities:write"
	ScopeAnalyticsRead     Scope = "analytics:read"
	ScopeWebhooksRead      Scope = "webhooks:read"
	ScopeWebhooksWrite     Scope = "webhooks:write"
)

// AllScopes lists every scope, in the order of the spec's table.
var AllScopes = []Scope{
	ScopeQueuesRead, ScopeQueuesWrite, ScopeTurnsRead, ScopeTurnsWrite, ScopeDispatchWrite,
	ScopeAppointmentsRead, ScopeAppointmentsWrite, ScopeAccessCodesRead, ScopeAccessCodesWrite,
	ScopeWorkflowRead, ScopeWorkflowWrite, ScopeEntitiesRead, ScopeEntitiesWrite,
	ScopeAnalyticsRead, ScopeWebhooksRead, ScopeWebhooksWrite,
}

// Valid reports whether s is one of AllScopes.
func (s Scope) Valid() bool {
	for _, a := range AllScopes {
		if a == s {
			return true
		}
	}
	return false
}

// ScopeSet is the set of scopes a key holds.
type ScopeSet map[Scope]struct{}

// NewScopeSet builds a set from a list.
func NewScopeSet(scopes []Scope) ScopeSet {
	set := make(ScopeSet, len(scopes))
	for _, s := range scopes {
		set[s] = struct{}{}
	}
	return set
}

// Allows reports whether the set grants required. Write includes read of
// the same module.
func (set ScopeSet) Allows(required Scope) bool {
	if _, ok := set[required]; ok {
		return true
	}
	if module, ok := strings.CutSuffix(string(required), ":read"); ok {
		_, w := set[Scope(module+":write")]
		return w
	}
	return false
}

// AllScopeNames returns every scope as the strings a key-creation body takes.
func AllScopeNames() []string {
	names := make([]string, len(AllScopes))
	for i, s := range AllScopes {
		names[i] = string(s)
	}
	return names
}
