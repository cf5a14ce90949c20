// Package join is how a customer takes a turn with their own phone: a
// join link, made by the account for one queue and printed as a QR code at
// the door, opens a public page that shows the queue (open or not, how
// many wait, the wait range, the instructions and questions) and takes a
// turn through the very intake the API uses, then hands the customer the
// new turn's live ticket page.
//
// A join link is a capability like a display token: only the SHA-256 of
// its value is stored, the value is shown once, it opens one queue's join
// page and nothing else, and it is revoked by the account (queues:write);
// a revoked link refuses its next request.
//
// The queue options only a customer's device can serve live here too: the
// geofence that must hold to take a turn (requireToTake) and the carpool
// auto-arrival of an open ticket page inside the radius.
package join

import (
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/turns"
)

// PrefixLink begins every join link id; ValuePrefix every link value.
const (
	PrefixLink  = "jnl"
	ValuePrefix = "qmsj_"
)

// Codes raised by this module.
const (
	// CodeInvalidJoinLink: the link is unknown. 404.
	CodeInvalidJoinLink = "INVALID_JOIN_LINK"
	// CodeJoinLinkRevoked: the link was revoked. 410.
	CodeJoinLinkRevoked = "JOIN_LINK_REVOKED"
	// CodeTooManyJoinLinks: the queue has MaxLinksPerQueue live links. 409.
	CodeTooManyJoinLinks = "TOO_MANY_JOIN_LINKS"
	// CodeLocationRequired: the queue's geofence must hold and the
	// request carried no location. 422, field "location".
	CodeLocationRequired = "LOCATION_REQUIRED"
	// CodeOutsideGeofence: the device is farther from the queue than its
	// radius allows. 422, field "location", with the distance.
	CodeOutsideGeofence = "OUTSIDE_GEOFENCE"
	// CodeTooManyOpenTurns: this device already holds MaxOpenTurnsPerDevice
	// unfinished turns of the queue. 409.
	CodeTooManyOpenTurns = "TOO_MANY_OPEN_TURNS"
)

// MaxLinksPerQueue bounds the live (unrevoked) links of one queue: a door,
// a window, a flyer, a kiosk each... far more than any branch prints.
const MaxLinksPerQueue = 50

// MaxOpenTurnsPerDevice is how many unfinished turns of one queue a phone
// may hold through join pages: a parent taking one for a child, a friend
// for a friend; not a script emptying the line. A kiosk link is a shared
// device and is not counted.
const MaxOpenTurnsPerDevice = 3

// MaxAccuracyCredit bounds the accuracy a device's reported fix may add to
// the radius, in multiples of the radius: a fix "somewhere within 30 km"
// does not put a phone inside a 100 m fence.
const MaxAccuracyCredit = 1.0

// Link is a stored join link.
type Link struct {
	ID        string  `json:"id"`
	AccountID string  `json:"-"`
	QueueID   string  `json:"queueId"`
	Label     *string `json:"label"`
	Hash      string  `json:"-"`
	// Language is the page's language (display.Languages); null follows
	// the phone's.
	Language *string `json:"language"`
	// Kiosk is a shared tablet's link: after each join the page shows the
	// number and its QR code for a moment, then clears every field and
	// starts again; nothing of the customer stays in the browser, and the
	// device limit does not apply (the address budget still does).
	Kiosk bool `json:"kiosk"`
	// PhoneRegion is the country (ISO 3166-1 alpha-2) a phone number
	// typed without a "+" country code is read in; null takes the
	// branch's (RegionOf).
	PhoneRegion *string    `json:"phoneRegion"`
	CreatedAt   time.Time  `json:"createdAt"`
	RevokedAt   *time.Time `json:"revokedAt"`
}

// Revoked reports whether the link was revoked.
func (l Link) Revoked() bool { return l.RevokedAt != nil }

// Created is a new link with its value, shown this once.
type Created struct {
	Link
	Value string `json:"token"`
}

// CreateInput is the body of a link creation.
type CreateInput struct {
	Label       *string `json:"label" text:"name"`
	Language    *string `json:"language"`
	Kiosk       *bool   `json:"kiosk"`
	PhoneRegion *string `json:"phoneRegion"`
}

// Position is a device's reported location: WGS84 degrees and the radius
// of its uncertainty in metres (the browser's coords.accuracy).
type Position struct {
	Lat      *float64 `json:"lat"`
	Lng      *float64 `json:"lng"`
	Accuracy *float64 `json:"accuracy"`
}

func (p *Position) validate(v *platform.Validator, path string) {
	if v.Required(platform.Path(path, "lat"), p.Lat != nil) {
		v.FloatRange(platform.Path(path, "lat"), *p.Lat, -90, 90)
	}
	if v.Required(platform.Path(path, "lng"), p.Lng != nil) {
		v.FloatRange(platform.Path(path, "lng"), *p.Lng, -180, 180)
	}
	if p.Accuracy != nil {
		v.FloatRange(platform.Path(path, "accuracy"), *p.Accuracy, 0, 1e7)
	}
}

// Input is what the join page sends: the turn body's fields (checked by
// the turns module's own rules), the access code, the device's location
// when the queue's geofence asks for it, and an idempotency key the page
// makes once per form, so a double tap takes one turn.
type Input struct {
	PeopleCount    *int              `json:"peopleCount"`
	Phone          *string           `json:"phone"`
	NotifyWhatsapp *bool             `json:"notifyWhatsapp"`
	FormResponse   map[string]string `json:"formResponse" text:"free"`
	AccessCode     *string           `json:"accessCode"`
	Location       *Position         `json:"location"`
	IdempotencyKey *string           `json:"idempotencyKey"`
	// Language is the language the page showed (en, es, pt, fr): the
	// turn's messages go in it (the notify module's language member).
	Language *string `json:"language"`
}

// Device is what the page's signed cookie says of the phone: the turns it
// took through join pages (ids), so the service can count the unfinished
// ones of the queue. Empty for a kiosk.
type Device struct {
	TurnIDs []string
}

// Joined is a taken turn and its ticket link's value (shown once).
type Joined struct {
	TurnID      string       `json:"turnId"`
	DisplayCode string       `json:"displayCode"`
	Status      turns.Status `json:"status"`
	// Ticket is the ticket link's value; the page goes to /ticket/{it}.
	Ticket string `json:"ticket"`
	// Replayed is true when the idempotency key had already taken the
	// turn (a double tap): nothing new was taken.
	Replayed bool `json:"replayed"`
	// QueueID is the turn's queue, for the device cookie.
	QueueID string `json:"-"`
}

// Page is what the join page shows: the queue's public face and what the
// form asks. Nothing of other customers beyond how many wait.
type Page struct {
	Queue  Place `json:"queue"`
	Branch Place `json:"branch"`
	// Language is the link's language (null: the phone's); Kiosk its mode.
	Language *string `json:"language"`
	Kiosk    bool    `json:"kiosk"`
	// Open says whether a turn can be taken now; when not, Closed says
	// why ("run_closed", "intake_closed", "outside_hours",
	// "appointments_only") and OpensAt when the schedule opens next (null
	// when unknown or not a matter of hours).
	Open    bool       `json:"open"`
	Closed  *string    `json:"closed"`
	OpensAt *time.Time `json:"opensAt"`
	// Timezone is the queue's, to say OpensAt in the branch's time.
	Timezone string `json:"timezone"`
	// Waiting is how many wait and the wait a newcomer faces.
	Waiting Waiting `json:"waiting"`
	// Full is true when the queue is at capacity; Waitlist then says a
	// new turn goes on the waiting list rather than being refused.
	Full     bool `json:"full"`
	Waitlist bool `json:"waitlist"`
	// Instructions and Questions are the queue's preAttention.
	Instructions *string    `json:"instructions"`
	Questions    []Question `json:"questions"`
	// AccessCodeRequired asks for an access code.
	AccessCodeRequired bool `json:"accessCodeRequired"`
	// Phone asks for a phone number and the WhatsApp opt-in
	// (whatsappCapture); PhoneRegion is the country a number without
	// "+" is read in ("" when none: the customer types the "+").
	Phone       bool   `json:"phone"`
	PhoneRegion string `json:"phoneRegion"`
	// MaxPeople is the largest people count a turn takes.
	MaxPeople int `json:"maxPeople"`
	// Geofence, when set, must hold to take a turn: the page asks for the
	// location and sends it.
	Geofence *Fence `json:"geofence"`
}

// Place names a queue or a branch.
type Place struct {
	Name     string  `json:"name"`
	Subtitle *string `json:"subtitle,omitempty"`
}

// Waiting is the line as a newcomer sees it.
type Waiting struct {
	Count       int              `json:"count"`
	WaitMinutes *int             `json:"waitMinutes"`
	WaitRange   *turns.WaitRange `json:"waitRange"`
}

// Question is a preAttention question as the form shows it; choices are
// the option labels (the answer is the label, and the turns module gives
// the turn the option's prefix and priority).
type Question struct {
	ID       string   `json:"id"`
	Label    string   `json:"label"`
	Type     string   `json:"type"`
	Required bool     `json:"required"`
	Options  []string `json:"options"`
}

// Fence is a geofence the page must satisfy.
type Fence struct {
	RadiusMeters int `json:"radiusMeters"`
}

// Arrival is the answer of an open ticket page's location report.
type Arrival struct {
	// Enabled is whether the queue marks arrival by location at all
	// (carpool.autoArriveOnGeofence with a geofence and a location).
	Enabled      bool `json:"enabled"`
	RadiusMeters int  `json:"radiusMeters,omitempty"`
	// Arrived is whether the turn is marked arrived (now or before).
	Arrived bool `json:"arrived"`
	// DistanceMeters is how far the report was from the queue (null when
	// no location was sent).
	DistanceMeters *int `json:"distanceMeters"`
}

// newValue returns "qmsj_" and 32 base32 characters (160 random bits).
func newValue() string { return platform.NewSecret(ValuePrefix) }

// Hash is how a link value is stored and looked up.
func Hash(value string) string { return platform.HashSecret(value) }

// LooksLikeValue reports whether s has a link's shape; anything else is
// refused without a lookup.
func LooksLikeValue(s string) bool { return platform.LooksLikeSecret(s, ValuePrefix) }
