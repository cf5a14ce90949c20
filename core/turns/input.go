package turns

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// CreateInput is the turn create body (spec 2.3): every field optional.
// Other modules declare their own body members (BodyMember, see
// extensions.go); their values arrive in Extensions.
type CreateInput struct {
	PeopleCount    *int              `json:"peopleCount"`
	IdempotencyKey *string           `json:"idempotencyKey"`
	Phone          *string           `json:"phone"`
	NotifyWhatsapp *bool             `json:"notifyWhatsapp"`
	FormResponse   map[string]string `json:"formResponse" text:"free"`
	Extensions     Extensions        `json:"-"`
}

// Validate checks the bounds of spec 2.3; the answers are checked against
// the queue's questions once the queue is known.
func (in *CreateInput) Validate() error { return in.validate(nil) }

// validate is Validate with the declared members' own checks, after the
// body's.
func (in *CreateInput) validate(members []BodyMember) error {
	var v platform.Validator
	v.OptRange("peopleCount", in.PeopleCount, 1, 20)
	v.OptLen("idempotencyKey", in.IdempotencyKey, 8, 120)
	v.OptLen("phone", in.Phone, 8, 20)
	for _, m := range members {
		if val, ok := in.Extensions[m.Name]; ok && m.Validate != nil {
			m.Validate(&v, val)
		}
	}
	return v.Err()
}

// requestHash identifies what a create asked for, so a repeat with the same
// idempotency key can be told apart from a reuse with another body. It
// covers the run and the body with defaults applied: leaving peopleCount
// out and sending 1 are the same request.
func (in CreateInput) requestHash(runID string, members []BodyMember) string {
	n := in
	n.IdempotencyKey = nil
	if n.PeopleCount == nil {
		n.PeopleCount = platform.Ptr(1)
	}
	if n.NotifyWhatsapp == nil {
		n.NotifyWhatsapp = platform.Ptr(false)
	}
	if n.FormResponse == nil {
		n.FormResponse = map[string]string{}
	}
	// encoding/json sorts map keys, so equal bodies encode alike.
	b, _ := json.Marshal(n)
	// The declared members follow, in declaration order, as the fields of
	// the struct they once were (omitted when absent), so hashes stored
	// before the members moved out of this package still match.
	for _, m := range members {
		val, ok := in.Extensions[m.Name]
		if !ok {
			continue
		}
		mb, err := json.Marshal(val)
		if err != nil || string(mb) == "null" {
			continue
		}
		name, _ := json.Marshal(m.Name)
		b = append(append(append(append(b[:len(b)-1], ','), name...), ':'), append(mb, '}')...)
	}
	sum := sha256.Sum256(append([]byte(runID+"\n"), b...))
	return hex.EncodeToString(sum[:])
}

// CallInput is the optional body of dispatch/next and call:
// {"stationId": "..."}; absent or null calls without a station (or, for
// call, to the station already assigned to the turn).
type CallInput struct {
	StationID *string `json:"stationId"`
}

// Validate checks the station id's bounds.
func (in *CallInput) Validate() error {
	var v platform.Validator
	v.OptLen("stationId", in.StationID, 1, 128)
	return v.Err()
}

// AssignStationInput is the assign-station body: stationId is required, a
// station of the queue or null, which clears the assignment.
type AssignStationInput struct {
	StationID platform.Patch[string] `json:"stationId"`
}

// Validate checks that stationId is present, and its bounds.
func (in *AssignStationInput) Validate() error {
	var v platform.Validator
	if v.Required("stationId", in.StationID.Set) && !in.StationID.Null {
		v.Len("stationId", in.StationID.Value, 1, 128)
	}
	return v.Err()
}

// PriorityInput is the priority body: {"priority": PRIORITY} required.
type PriorityInput struct {
	Priority *queues.Priority `json:"priority"`
}

// Validate checks the priority.
func (in *PriorityInput) Validate() error {
	var v platform.Validator
	if v.Required("priority", in.Priority != nil) && !in.Priority.Valid() {
		v.OneOf("priority", string(*in.Priority), queues.Priorities...)
	}
	return v.Err()
}

// ListFilter narrows a run's turn list: none means every status.
type ListFilter struct {
	Statuses []Status
}

// ParseStatuses reads the status filter: repeated values and
// comma-separated lists both work ("WAITING,CALLED").
func ParseStatuses(values []string) ([]Status, error) {
	var out []Status
	seen := map[Status]bool{}
	for _, raw := range values {
		for _, s := range strings.Split(raw, ",") {
			st := Status(strings.TrimSpace(s))
			if !st.Valid() {
				names := make([]string, len(Statuses))
				for i, x := range Statuses {
					names[i] = string(x)
				}
				return nil, platform.InvalidField("status", "oneof", "must be one or more of "+strings.Join(names, ", "))
			}
			if !seen[st] {
				seen[st] = true
				out = append(out, st)
			}
		}
	}
	return out, nil
}
