package location

import "math"

// earthRadiusMeters is the mean radius of the Earth (IUGG).
const earthRadiusMeters = 6371008.8

// DistanceMeters is the great-circle distance between two points given in
// degrees (haversine): within a few metres of the ellipsoid's at the
// scale of a geofence, which is far finer than a phone's fix.
func DistanceMeters(lat1, lng1, lat2, lng2 float64) float64 {
	rad := math.Pi / 180
	dLat, dLng := (lat2-lat1)*rad, (lng2-lng1)*rad
	a := math.Sin(dLat/2)*math.Sin(dLat/2) +
		math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLng/2)*math.Sin(dLng/2)
	return 2 * earthRadiusMeters * math.Asin(math.Min(1, math.Sqrt(a)))
}
