package location_test

import (
	"math"
	"testing"

	"github.com/qms-dev/qms/core/location"
)

func TestDistanceMeters(t *testing.T) {
	for _, c := range []struct {
		name                   string
		lat1, lng1, lat2, lng2 float64
		want, tol              float64
	}{
		{"same point", 40.4168, -3.7038, 40.4168, -3.7038, 0, 0.001},
		// Puerta del Sol to Plaza Mayor, Madrid: about 400 m.
		{"across a city centre", 40.416775, -3.703790, 40.415363, -3.707398, 342, 5},
		// One thousandth of a degree of latitude is about 111 m anywhere.
		{"north 0.001 degree", 10, 20, 10.001, 20, 111.2, 0.5},
		{"Madrid to Lisbon", 40.4168, -3.7038, 38.7223, -9.1393, 503000, 3000},
		{"across the antimeridian", 0, 179.9995, 0, -179.9995, 111.2, 0.5},
	} {
		if got := location.DistanceMeters(c.lat1, c.lng1, c.lat2, c.lng2); math.Abs(got-c.want) > c.tol {
			t.Errorf("%s: %.1f m, want %.1f ± %.1f", c.name, got, c.want, c.tol)
		}
	}
}
