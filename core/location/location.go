// Package location is the geographic location shared by entities and
// queues (spec 2.1, Location).
package location

import (
	"sync"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// Location places an entity or a queue.
type Location struct {
	Lat            *float64 `json:"lat"`
	Lng            *float64 `json:"lng"`
	ShortAddress   *string  `json:"shortAddress" text:"free"`
	AccuracyMeters *float64 `json:"accuracyMeters,omitempty"`
	Name           *string  `json:"name,omitempty" text:"name"`
	FullAddress    *string  `json:"fullAddress,omitempty" text:"free"`
	Timezone       *string  `json:"timezone,omitempty"`
}

// Validate checks every bound of spec 2.1 Location under path.
func (l *Location) Validate(v *platform.Validator, path string) {
	if v.Required(platform.Path(path, "lat"), l.Lat != nil) {
		v.FloatRange(platform.Path(path, "lat"), *l.Lat, -90, 90)
	}
	if v.Required(platform.Path(path, "lng"), l.Lng != nil) {
		v.FloatRange(platform.Path(path, "lng"), *l.Lng, -180, 180)
	}
	if v.Required(platform.Path(path, "shortAddress"), l.ShortAddress != nil) {
		v.Len(platform.Path(path, "shortAddress"), *l.ShortAddress, 3, 160)
	}
	if l.AccuracyMeters != nil && *l.AccuracyMeters < 0 {
		v.Fail(platform.Path(path, "accuracyMeters"), "min", "must be at least 0")
	}
	v.OptLen(platform.Path(path, "name"), l.Name, 0, 120)
	v.OptLen(platform.Path(path, "fullAddress"), l.FullAddress, 0, 300)
	if l.Timezone != nil {
		v.Len(platform.Path(path, "timezone"), *l.Timezone, 0, 60)
		if _, err := time.LoadLocation(*l.Timezone); err != nil || *l.Timezone == "Local" {
			v.Fail(platform.Path(path, "timezone"), "timezone", "must be an IANA time zone such as Europe/Madrid")
		}
	}
}

// Zone returns the location's time zone, UTC when unset.
func (l *Location) Zone() *time.Location {
	if l == nil || l.Timezone == nil || *l.Timezone == "" {
		return time.UTC
	}
	if z, ok := zones.Load(*l.Timezone); ok {
		return z.(*time.Location)
	}
	z, err := time.LoadLocation(*l.Timezone)
	if err != nil {
		return time.UTC
	}
	zones.Store(*l.Timezone, z)
	return z
}

// zones keeps the zones loaded so far by name: time.LoadLocation reads and
// parses the zone's file on every call, and every rule of a queue that
// reads a local time asks for its zone. Names come from validated
// settings, so the set stays small.
var zones sync.Map
