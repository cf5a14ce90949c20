package join

import (
	"testing"

	"github.com/qms-dev/qms/core/platform"
)

// TestFenceAllowsForAccuracyUpToOneRadius: a fix counts its reported
// uncertainty in the device's favour, never more than one radius, so a
// vague fix from far away does not pass a small fence.
func TestFenceAllowsForAccuracyUpToOneRadius(t *testing.T) {
	f := fence{lat: 40.416775, lng: -3.703790, radius: 100}
	north := func(m float64) float64 { return f.lat + m/111195 } // metres north, in degrees
	for _, c := range []struct {
		name        string
		metres, acc float64
		inside      bool
	}{
		{"at the door", 0, 5, true},
		{"on the edge", 99, 0, true},
		{"just out, a precise fix", 110, 5, false},
		{"just out, within its accuracy", 150, 60, true},
		{"two radii away, accuracy 100", 199, 100, true},
		{"far, a vague fix (30 km) counts one radius only", 1000, 30000, false},
		{"no accuracy reported", 150, -1, false},
	} {
		pos := Position{Lat: platform.Ptr(north(c.metres)), Lng: platform.Ptr(f.lng)}
		if c.acc >= 0 {
			pos.Accuracy = platform.Ptr(c.acc)
		}
		d, in := f.within(pos)
		if in != c.inside {
			t.Errorf("%s: %d m with accuracy %v: inside %v, want %v", c.name, d, c.acc, in, c.inside)
		}
		if diff := float64(d) - c.metres; diff > 1 || diff < -1 {
			t.Errorf("%s: measured %d m, want %.0f", c.name, d, c.metres)
		}
	}
}
