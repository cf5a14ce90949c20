package turns

import (
	"math"
	"sort"
)

// MinRangeSamples is how many recent service times a wait range needs:
// with fewer, the spread of the queue's service is unknown, and the range
// is null rather than invented.
const MinRangeSamples = 3

// z90 is the standard normal's 90th percentile.
const z90 = 1.2815515655446004

// WaitRange is the likely spread of a waiting turn's wait, from the
// queue's recent service times (the same samples as the estimate's
// average): about half of the turns in this place wait less than P50, nine
// in ten less than P90. A screen shows "P50Minutes–P90Minutes min".
type WaitRange struct {
	P50Seconds int `json:"p50Seconds"`
	P90Seconds int `json:"p90Seconds"`
	// P50Minutes and P90Minutes are the seconds rounded up.
	P50Minutes int `json:"p50Minutes"`
	P90Minutes int `json:"p90Minutes"`
	// Samples is how many recent service times the range rests on.
	Samples int `json:"samples"`
}

// waitRange returns the range of the wait of the turn at position, which
// waits for position services shared among servers: for one service, the
// samples' own 50th and 90th percentiles; for more, the sum of position
// services is near normal (central limit), so P50 is its mean and P90 adds
// 1.28 standard deviations of the sum (the samples' deviation times the
// square root of position). False with fewer than MinRangeSamples samples.
func waitRange(position int, samples []float64, servers int) (WaitRange, bool) {
	if len(samples) < MinRangeSamples || position < 1 {
		return WaitRange{}, false
	}
	servers = max(servers, 1)
	var p50, p90 float64
	if position == 1 {
		sorted := append([]float64(nil), samples...)
		sort.Float64s(sorted)
		p50, p90 = quantile(sorted, 0.5), quantile(sorted, 0.9)
	} else {
		mean, sd := meanSD(samples)
		n := float64(position)
		p50 = n * mean
		p90 = n*mean + z90*sd*math.Sqrt(n)
	}
	lo := int(math.Round(p50 / float64(servers)))
	hi := max(int(math.Round(p90/float64(servers))), lo)
	return WaitRange{P50Seconds: lo, P90Seconds: hi, P50Minutes: (lo + 59) / 60, P90Minutes: (hi + 59) / 60, Samples: len(samples)}, true
}

// quantile interpolates the q-quantile of sorted values.
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (pos-float64(i))*(sorted[i+1]-sorted[i])
}

// meanSD returns the mean and the sample standard deviation.
func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}
